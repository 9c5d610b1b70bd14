// Internal to the HDF5 series files (io/hdf5_writer.cpp, io/hdf5_reader.cpp, io/xdmf_text.cpp):
// the series' layout names and the hyperslab helpers that the writer and the reader share.
#pragma once

#ifdef HEATSOLVE_HAVE_HDF5

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "io/field_writer.hpp"
#include "io/hdf5_handle.hpp"

namespace heatsolve::h5series {

inline constexpr const char* kCellFieldsGroup = "/cell_fields";

inline std::string step_group(std::int64_t step) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "/steps/%08lld", static_cast<long long>(step));
  return buf;
}

inline int rank_of(const OutputGrid& g) {
  return g.dims == 2 ? 2 : 3;
}

// File-order (z,y,x or y,x) extents of the whole grid and of a block.
struct Hyperslab {
  std::vector<hsize_t> global, offset, count;
};

inline Hyperslab hyperslab(const OutputGrid& g, const Block& b) {
  Hyperslab h;
  for (int a = rank_of(g) - 1; a >= 0; --a) {
    h.global.push_back(static_cast<hsize_t>(g.cells[a]));
    h.offset.push_back(static_cast<hsize_t>(b.offset[a]));
    h.count.push_back(static_cast<hsize_t>(b.count[a]));
  }
  return h;
}

// Selects `slab`'s block in a file dataspace and creates the matching memory dataspace.
inline std::pair<h5::Dataspace, h5::Dataspace> select_block(hid_t dset, const Hyperslab& slab,
                                                            const std::string& where) {
  h5::Dataspace file_space(H5Dget_space(dset), "dataspace of " + where);
  hsize_t n = 1;
  for (hsize_t c : slab.count) n *= c;
  hsize_t mem_n = std::max<hsize_t>(n, 1);
  h5::Dataspace mem_space(H5Screate_simple(1, &mem_n, nullptr), "memory dataspace for " + where);
  if (n == 0) {  // an empty block still takes part in collective calls
    h5::check(H5Sselect_none(file_space.get()), "select none in " + where);
    h5::check(H5Sselect_none(mem_space.get()), "select none in memory for " + where);
  } else {
    h5::check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, slab.offset.data(), nullptr,
                                  slab.count.data(), nullptr),
              "select hyperslab in " + where);
  }
  return {std::move(file_space), std::move(mem_space)};
}

}  // namespace heatsolve::h5series

#else  // !HEATSOLVE_HAVE_HDF5

#include <stdexcept>

namespace heatsolve::h5series {
[[noreturn]] inline void no_hdf5() {
  throw std::runtime_error(
      "heatsolve was built without HDF5 (HEATSOLVE_ENABLE_HDF5=OFF or "
      "HDF5 not found): the hdf5 output format is unavailable");
}
}  // namespace heatsolve::h5series

#endif  // HEATSOLVE_HAVE_HDF5
