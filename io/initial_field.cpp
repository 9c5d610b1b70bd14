// The initial field from an HDF5 file (io/initial_field.hpp).
#include "io/initial_field.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>

#ifdef HEATSOLVE_HAVE_HDF5
#include "io/hdf5_handle.hpp"
#endif

namespace heatsolve {

namespace {

using Part = InitialFieldError::Part;

#ifdef HEATSOLVE_HAVE_HDF5

std::string shape_text(const std::vector<hsize_t>& dims) {
  std::string s;
  for (hsize_t d : dims) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

h5::File open_file(const std::string& path) {
  h5::silence_errors();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InitialFieldError(Part::Path, fmt::format("no such file '{}'", path));
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    h5::last_error();
    throw InitialFieldError(Part::Path, fmt::format("'{}' is not an HDF5 file", path));
  }
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) {
    const std::string detail = h5::last_error();
    throw InitialFieldError(Part::Path, fmt::format("cannot open '{}'{}", path,
                                                    detail.empty() ? "" : " (" + detail + ")"));
  }
  return h5::File(f, "open " + path);
}

// A string attribute of `obj`, "" when absent or not a fixed-length string.
std::string string_attribute(hid_t obj, const char* name) {
  if (H5Aexists(obj, name) <= 0) return "";
  return h5::fixed_string_attribute(obj, name, "the file").value_or("");
}

// The dataset, opened and checked: floating-point, the grid's shape.
h5::Dataset open_dataset(const Config& cfg, hid_t file, const std::string& path,
                         const std::string& dataset) {
  if (H5Lexists(file, dataset.c_str(), H5P_DEFAULT) <= 0 ||
      H5Oexists_by_name(file, dataset.c_str(), H5P_DEFAULT) <= 0) {
    h5::last_error();
    throw InitialFieldError(Part::Dataset, fmt::format("no dataset '{}' in '{}'", dataset, path));
  }
  const hid_t id = H5Dopen2(file, dataset.c_str(), H5P_DEFAULT);
  if (id < 0) {
    h5::last_error();
    throw InitialFieldError(Part::Dataset,
                            fmt::format("'{}' in '{}' is not a dataset", dataset, path));
  }
  h5::Dataset d(id, "open " + dataset);
  const h5::Datatype type(H5Dget_type(d.get()), "type of " + dataset);
  if (H5Tget_class(type.get()) != H5T_FLOAT)
    throw InitialFieldError(
        Part::Dataset,
        fmt::format("dataset '{}' in '{}' does not hold floating-point values", dataset, path));
  const h5::Dataspace space(H5Dget_space(d.get()), "shape of " + dataset);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  std::vector<hsize_t> grid;
  for (int a = cfg.dimensions - 1; a >= 0; --a) grid.push_back(static_cast<hsize_t>(cfg.cells[a]));
  if (dims != grid)
    throw InitialFieldError(
        Part::Dataset,
        fmt::format("dataset '{}' in '{}' has shape {}, but the grid's cells are {} ({})", dataset,
                    path, rank < 0 ? "?" : shape_text(dims), shape_text(grid),
                    cfg.dimensions == 3 ? "[nz, ny, nx]" : "[ny, nx]"));
  return d;
}

// Reads the file-order box `start`/`count` (slowest first) into `out` (count's product).
void read_box(hid_t d, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
              double* out, const std::string& what) {
  const h5::Dataspace fspace(H5Dget_space(d), "file space of " + what);
  h5::check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                                nullptr),
            "select cells of " + what);
  const h5::Dataspace mspace(
      H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), "memory space");
  h5::check(H5Dread(d, H5T_NATIVE_DOUBLE, mspace.get(), fspace.get(), H5P_DEFAULT, out),
            "read " + what);
}

#endif  // HEATSOLVE_HAVE_HDF5

[[noreturn]] void no_hdf5() {
  throw InitialFieldError(Part::Kind,
                          "an initial field from a file needs HDF5, and this heatsolve was built "
                          "without it (`heatsolve info` says what a build has)");
}

}  // namespace

std::string default_initial_dataset(const std::string& path) {
#ifdef HEATSOLVE_HAVE_HDF5
  const h5::File file = open_file(path);
  const hid_t f = file.get();
  if (string_attribute(f, "format") != "heatsolve-timeseries")
    throw InitialFieldError(Part::Mapping,
                            fmt::format("'{}' is not a heatsolve series (<name>.h5): give the "
                                        "dataset to start from",
                                        path));
  std::string field = string_attribute(f, "field");
  if (field.empty()) field = "temperature";
  std::string last;
  if (H5Lexists(f, "/steps", H5P_DEFAULT) > 0) {
    h5::Group steps(H5Gopen2(f, "/steps", H5P_DEFAULT), "open /steps in " + path);
    H5G_info_t info;
    h5::check(H5Gget_info(steps.get(), &info), "list /steps in " + path);
    for (hsize_t i = 0; i < info.nlinks; ++i) {
      char name[64] = {0};
      const ssize_t len = H5Lget_name_by_idx(steps.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name,
                                             sizeof name, H5P_DEFAULT);
      if (len <= 0 || std::size_t(len) >= sizeof name) continue;
      const std::string n(name);
      // Step groups are named with 8 or more digits: the longest, then the greatest, is last.
      if (n.find_first_not_of("0123456789") != std::string::npos) continue;
      if (last.empty() || n.size() > last.size() || (n.size() == last.size() && n > last)) last = n;
    }
  }
  if (last.empty())
    throw InitialFieldError(Part::Path,
                            fmt::format("the heatsolve series '{}' holds no step", path));
  return "/steps/" + last + "/" + field;
#else
  (void)path;
  no_hdf5();
#endif
}

void check_initial_file(const Config& cfg, const Shape& initial) {
#ifdef HEATSOLVE_HAVE_HDF5
  const h5::File file = open_file(initial.path);
  const h5::Dataset d = open_dataset(cfg, file.get(), initial.path, initial.dataset);
  // Plane by plane along the slowest axis: every value finite.
  const int rank = cfg.dimensions;
  std::vector<hsize_t> start(static_cast<std::size_t>(rank), 0);
  std::vector<hsize_t> count(static_cast<std::size_t>(rank), 0);
  for (int p = 0; p < rank; ++p) count[std::size_t(p)] = hsize_t(cfg.cells[rank - 1 - p]);
  const int planes = cfg.cells[rank - 1];
  count[0] = 1;
  std::vector<double> plane(std::size_t(cfg.cells[0]) * (rank == 3 ? cfg.cells[1] : 1));
  for (int s = 0; s < planes; ++s) {
    start[0] = hsize_t(s);
    read_box(d.get(), start, count, plane.data(), initial.dataset + " in " + initial.path);
    for (std::size_t n = 0; n < plane.size(); ++n) {
      if (std::isfinite(plane[n])) continue;
      const int i = int(n % std::size_t(cfg.cells[0]));
      const int j = rank == 3 ? int(n / std::size_t(cfg.cells[0])) : s;
      throw InitialFieldError(
          Part::Dataset, fmt::format("dataset '{}' in '{}': the value {} of cell ({}, {}{}) is "
                                     "not finite",
                                     initial.dataset, initial.path, plane[n], i, j,
                                     rank == 3 ? fmt::format(", {}", s) : std::string()));
    }
  }
#else
  (void)cfg, (void)initial;
  no_hdf5();
#endif
}

std::vector<double> read_initial_field(const Config& cfg, const GridDesc& local,
                                       std::array<int, 3> offset) {
#ifdef HEATSOLVE_HAVE_HDF5
  const Shape& s = cfg.initial;
  const int rank = cfg.dimensions;
  const std::array<int, 3> count{local.nx, local.ny, rank == 3 ? local.nz : 1};
  for (int a = 0; a < rank; ++a)
    if (offset[a] < 0 || count[a] < 0 || std::int64_t(offset[a]) + count[a] > cfg.cells[a])
      throw std::invalid_argument(fmt::format(
          "read_initial_field: block at offset ({}, {}, {}) of {} x {} x {} cells lies outside "
          "the grid",
          offset[0], offset[1], offset[2], count[0], count[1], count[2]));
  std::vector<double> padded(local.padded_size(), 0.0);
  if (std::int64_t(count[0]) * count[1] * count[2] == 0) return padded;
  const h5::File file = open_file(s.path);
  const h5::Dataset d = open_dataset(cfg, file.get(), s.path, s.dataset);
  const std::string what = s.dataset + " in " + s.path;
  // File: the block's box, slowest axis first. Memory: the padded array, its interior.
  std::vector<hsize_t> fstart, fcount, mdims, mstart;
  const std::array<int, 3> padded_extent{local.px(), local.py(), local.pz()};
  for (int a = rank - 1; a >= 0; --a) {
    fstart.push_back(hsize_t(offset[a]));
    fcount.push_back(hsize_t(count[a]));
    mdims.push_back(hsize_t(padded_extent[a]));
    mstart.push_back(1);
  }
  const h5::Dataspace fspace(H5Dget_space(d.get()), "file space of " + what);
  h5::check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, fstart.data(), nullptr, fcount.data(),
                                nullptr),
            "select the block in " + what);
  const h5::Dataspace mspace(H5Screate_simple(rank, mdims.data(), nullptr), "memory space");
  h5::check(H5Sselect_hyperslab(mspace.get(), H5S_SELECT_SET, mstart.data(), nullptr, fcount.data(),
                                nullptr),
            "select the interior");
  h5::check(
      H5Dread(d.get(), H5T_NATIVE_DOUBLE, mspace.get(), fspace.get(), H5P_DEFAULT, padded.data()),
      "read " + what);
  return padded;
#else
  (void)cfg, (void)local, (void)offset;
  no_hdf5();
#endif
}

}  // namespace heatsolve
