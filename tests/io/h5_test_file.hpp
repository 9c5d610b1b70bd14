// Writes an HDF5 dataset for the tests of file inputs (initial fields, material regions).
#pragma once

#ifdef HEATSOLVE_HAVE_HDF5
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <string>
#include <vector>

namespace heatsolve::test_support {

// Writes `values` ([dims...], slowest first) as `dataset` of `type` (a native HDF5 type),
// creating the groups on its path.
inline void write_h5(const std::filesystem::path& file, const std::string& dataset,
                     const std::vector<hsize_t>& dims, const std::vector<double>& values,
                     hid_t type = H5T_NATIVE_DOUBLE) {
  const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t s = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  const hid_t d = H5Dcreate2(f, dataset.c_str(), type, s, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  ASSERT_GE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  H5Dclose(d);
  H5Pclose(lcpl);
  H5Sclose(s);
  H5Fclose(f);
}

// value(i, j, k) for every cell of nx x ny x nz, x fastest (a dataset's order, slowest first).
template <class Value>
std::vector<double> values_by_cell(int nx, int ny, int nz, Value&& value) {
  std::vector<double> v;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i) v.push_back(value(i, j, k));
  return v;
}

}  // namespace heatsolve::test_support
#endif  // HEATSOLVE_HAVE_HDF5
