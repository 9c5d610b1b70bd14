// The HDF5 series readers (declared in io/hdf5_writer.hpp): listing, reading and verifying the
// steps of an existing .h5, its cell fields, root attributes and storage.
#include <stdexcept>

#include "io/hdf5_series.hpp"
#include "io/hdf5_writer.hpp"

#ifdef HEATSOLVE_HAVE_HDF5

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "io/hdf5_handle.hpp"
#include "io/hdf5_storage.hpp"
#include "io/hdf5_zfp.hpp"

namespace heatsolve {
namespace {

using h5series::hyperslab;
using h5series::Hyperslab;
using h5series::kCellFieldsGroup;
using h5series::select_block;
using h5series::step_group;

// The field's name in files written before the series named it (root attribute `field`).
constexpr const char* kLegacyFieldName = "temperature";

// Reads attribute `name` (n values, converted to `type`) into `out`.
void get_attribute(hid_t obj, const char* name, hid_t type, void* out, hsize_t n,
                   const std::string& where) {
  const std::string what = std::string("attribute '") + name + "' of " + where;
  h5::Attribute attr(H5Aopen(obj, name, H5P_DEFAULT), "open " + what);
  h5::Dataspace space(H5Aget_space(attr.get()), "dataspace of " + what);
  hssize_t points = H5Sget_simple_extent_npoints(space.get());
  if (points != static_cast<hssize_t>(std::max<hsize_t>(n, 1))) {
    throw std::runtime_error("HDF5: " + what + " has " + std::to_string(points) +
                             " values, expected " + std::to_string(std::max<hsize_t>(n, 1)));
  }
  h5::check(H5Aread(attr.get(), type, out), "read " + what);
}

// A fixed-length string attribute of `obj` (what the writers store); an error naming it where it
// is missing or of another type.
std::string read_string_attribute(hid_t obj, const char* name, const std::string& where) {
  std::optional<std::string> value = h5::fixed_string_attribute(obj, name, where);
  if (!value)
    throw std::runtime_error(std::string("HDF5: attribute '") + name + "' of " + where +
                             " is not a fixed-length string");
  return *value;
}

// A string attribute of `obj`, or `fallback` when it has none.
std::string string_attribute_or(hid_t obj, const char* name, const std::string& fallback,
                                const std::string& where) {
  return H5Aexists(obj, name) > 0 ? read_string_attribute(obj, name, where) : fallback;
}

// The series' field name: the root attribute `field`, else the name older versions wrote.
std::string series_field(hid_t file, const std::string& path) {
  return string_attribute_or(file, "field", kLegacyFieldName, path + ":/");
}

// The time of a step group: its `time`, or, in a steady series, its `iteration` (as the
// writers' XDMF and PVD list it).
double step_time(hid_t group, const std::string& where) {
  double time = 0;
  if (H5Aexists(group, "time") > 0 || H5Aexists(group, "iteration") <= 0) {
    get_attribute(group, "time", H5T_NATIVE_DOUBLE, &time, 0, where);
  } else {
    std::int64_t iteration = 0;
    get_attribute(group, "iteration", H5T_NATIVE_INT64, &iteration, 0, where);
    time = double(iteration);
  }
  return time;
}

// ---- Reader -----------------------------------------------------------------------------

std::vector<Hdf5StepInfo> list_steps(hid_t file, const std::string& path) {
  const std::string field = series_field(file, path);
  h5::Group steps(H5Gopen2(file, "/steps", H5P_DEFAULT), "open group /steps in " + path);
  H5G_info_t info;
  h5::check(H5Gget_info(steps.get(), &info), "list /steps in " + path);
  std::vector<Hdf5StepInfo> out;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t len = H5Lget_name_by_idx(steps.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0,
                                     H5P_DEFAULT);
    if (len < 0) h5::fail("list /steps in " + path);
    std::string name(static_cast<std::size_t>(len) + 1, '\0');
    if (H5Lget_name_by_idx(steps.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(),
                           name.size(), H5P_DEFAULT) < 0) {
      h5::fail("list /steps in " + path);
    }
    name.resize(static_cast<std::size_t>(len));
    const std::string where = path + ":/steps/" + name;
    h5::Group g(H5Gopen2(steps.get(), name.c_str(), H5P_DEFAULT), "open group " + where);
    Hdf5StepInfo s;
    get_attribute(g.get(), "step", H5T_NATIVE_INT64, &s.step, 0, where);
    s.time = step_time(g.get(), where);
    s.dataset = "/steps/" + name + "/" + field;
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const Hdf5StepInfo& a, const Hdf5StepInfo& b) { return a.step < b.step; });
  return out;
}

// The series' grid from its root attributes (`root`: "<path>:/", for the errors).
OutputGrid series_grid(hid_t f, const std::string& root) {
  OutputGrid g;
  get_attribute(f, "dimensions", H5T_NATIVE_INT, &g.dims, 0, root);
  get_attribute(f, "cells", H5T_NATIVE_INT, g.cells.data(), 3, root);
  get_attribute(f, "origin", H5T_NATIVE_DOUBLE, g.origin.data(), 3, root);
  get_attribute(f, "spacing", H5T_NATIVE_DOUBLE, g.spacing.data(), 3, root);
  if (string_attribute_or(f, "problem", "heat", root) == "poisson")
    g.problem = ProblemType::Poisson;
  return g;
}

h5::File open_for_reading(const std::string& path) {
  h5::silence_errors();
  if (h5zfp::built_in()) h5zfp::ensure_registered();  // zfp-compressed series
  return h5::File(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open " + path);
}

}  // namespace

Hdf5StorageReport hdf5_storage_report(const std::string& path) {
  h5::File file = open_for_reading(path);
  Hdf5StorageReport r;
  for (const Hdf5StepInfo& s : list_steps(file.get(), path)) {
    const std::string where = path + ":" + s.dataset;
    h5::Dataset d(H5Dopen2(file.get(), s.dataset.c_str(), H5P_DEFAULT), "open dataset " + where);
    h5::Dataspace space(H5Dget_space(d.get()), "dataspace of " + where);
    h5::Datatype type(H5Dget_type(d.get()), "type of " + where);
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n < 0) h5::fail("count the values of " + where);
    r.data_bytes += std::uint64_t(n) * H5Tget_size(type.get());
    r.stored_bytes += H5Dget_storage_size(d.get());
    ++r.datasets;
  }
  return r;
}

std::vector<Hdf5StepInfo> list_hdf5_steps(const std::string& path) {
  h5::File file = open_for_reading(path);
  return list_steps(file.get(), path);
}

namespace {

// Reads the step `info` of the open series `f` (`path` for messages): the whole grid, or
// `block` of it.
Hdf5StepData read_step(hid_t f, const std::string& path, const Hdf5StepInfo& info,
                       const Block* block) {
  Hdf5StepData out;
  out.step = info.step;
  out.time = info.time;

  out.grid = series_grid(f, path + ":/");
  check_output_grid(out.grid, "HDF5 file '" + path + "'");

  const std::string where = path + ":" + info.dataset;
  h5::Dataset d(H5Dopen2(f, info.dataset.c_str(), H5P_DEFAULT), "open dataset " + where);
  h5::Datatype type(H5Dget_type(d.get()), "type of " + where);
  if (H5Tget_class(type.get()) != H5T_FLOAT) {
    throw std::runtime_error("HDF5 '" + where + "': not a floating-point dataset");
  }
  out.precision = H5Tget_size(type.get()) == sizeof(float) ? Precision::Float : Precision::Double;

  const Block whole = Block::whole(out.grid);
  const Hyperslab expected = hyperslab(out.grid, whole);
  h5::Dataspace space(H5Dget_space(d.get()), "dataspace of " + where);
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) h5::fail("query rank of " + where);
  std::vector<hsize_t> shape(static_cast<std::size_t>(rank));
  h5::check(H5Sget_simple_extent_dims(space.get(), shape.data(), nullptr),
            "query shape of " + where);
  if (shape != expected.global) {
    throw std::runtime_error("HDF5 '" + where +
                             "': dataset shape does not match the root "
                             "attributes 'cells'/'dimensions'");
  }
  out.shape.assign(shape.begin(), shape.end());

  const Block& b = block ? *block : whole;
  check_output_block(out.grid, b, "HDF5 file '" + path + "'");
  out.data.resize(b.size());
  auto [file_space, mem_space] = select_block(d.get(), hyperslab(out.grid, b), where);
  h5::check(H5Dread(d.get(), H5T_NATIVE_DOUBLE, mem_space.get(), file_space.get(), H5P_DEFAULT,
                    out.data.data()),
            "read " + where);
  return out;
}

}  // namespace

Hdf5StepData read_hdf5_step(const std::string& path, std::int64_t index, const Block* block) {
  h5::File file = open_for_reading(path);
  std::vector<Hdf5StepInfo> steps = list_steps(file.get(), path);
  const auto n = static_cast<std::int64_t>(steps.size());
  const std::int64_t i = index < 0 ? n + index : index;
  if (i < 0 || i >= n) {
    throw std::runtime_error("HDF5 '" + path + "': no step at index " + std::to_string(index) +
                             " (file holds " + std::to_string(n) + " steps)");
  }
  return read_step(file.get(), path, steps[i], block);
}

std::vector<double> read_hdf5_cell_field(const std::string& path, const std::string& name) {
  h5::File file = open_for_reading(path);
  Hdf5StepInfo info;
  info.dataset = std::string(kCellFieldsGroup) + "/" + name;
  if (H5Lexists(file.get(), kCellFieldsGroup, H5P_DEFAULT) <= 0 ||
      H5Lexists(file.get(), info.dataset.c_str(), H5P_DEFAULT) <= 0) {
    throw std::runtime_error("HDF5 '" + path + "': no cell field '" + name + "'");
  }
  return read_step(file.get(), path, info, nullptr).data;
}

Hdf5SeriesInfo read_hdf5_series_info(const std::string& path) {
  h5::File file = open_for_reading(path);
  const hid_t f = file.get();
  const std::string root = path + ":/";
  Hdf5SeriesInfo info;
  info.format = string_attribute_or(f, "format", info.format, root);
  info.lineage = string_attribute_or(f, "lineage", info.lineage, root);
  info.deck_hash = string_attribute_or(f, "deck_hash", info.deck_hash, root);
  info.grid = series_grid(f, root);
  h5::Group steps(H5Gopen2(f, "/steps", H5P_DEFAULT), "open group /steps in " + path);
  H5G_info_t ginfo;
  h5::check(H5Gget_info(steps.get(), &ginfo), "list /steps in " + path);
  for (hsize_t i = 0; i < ginfo.nlinks; ++i) {
    char name[64] = {0};
    const ssize_t len = H5Lget_name_by_idx(steps.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name,
                                           sizeof name, H5P_DEFAULT);
    if (len < 0) h5::fail("list /steps in " + path);
    char* end = nullptr;
    const long long step = std::strtoll(name, &end, 10);
    if (len > 0 && std::size_t(len) < sizeof name && *end == '\0' && step >= 0)
      info.steps.push_back(step);
  }
  std::sort(info.steps.begin(), info.steps.end());
  return info;
}

struct Hdf5SeriesReader::Impl {
  std::string path;
  h5::File file;
  std::string field;  // the series' field name
};

Hdf5SeriesReader::Hdf5SeriesReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->file = open_for_reading(path);
  impl_->field = series_field(impl_->file.get(), path);
}

Hdf5SeriesReader::~Hdf5SeriesReader() = default;

double Hdf5SeriesReader::verify(std::int64_t step) {
  const std::string group = step_group(step);
  const std::string where = impl_->path + ":" + group;
  try {
    h5::Group g(H5Gopen2(impl_->file.get(), group.c_str(), H5P_DEFAULT), "open group " + where);
    std::int64_t s = -1;
    double time = 0;
    get_attribute(g.get(), "step", H5T_NATIVE_INT64, &s, 0, where);
    time = step_time(g.get(), where);
    if (s != step)
      throw std::runtime_error("HDF5 '" + where + "': its attribute 'step' says " +
                               std::to_string(s));
    const std::string dataset = where + "/" + impl_->field;
    h5::Dataset d(H5Dopen2(g.get(), impl_->field.c_str(), H5P_DEFAULT), "open dataset " + dataset);
    h5::Datatype type(H5Dget_type(d.get()), "type of " + dataset);
    const std::size_t size = H5Tget_size(type.get());
    if (H5Tget_class(type.get()) != H5T_FLOAT || (size != 4 && size != 8))
      throw std::runtime_error("HDF5 '" + dataset + "': not a floating-point dataset");
    h5::Dataspace space(H5Dget_space(d.get()), "dataspace of " + dataset);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 1 || rank > 3) throw std::runtime_error("HDF5 '" + dataset + "': bad rank");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    h5::check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr),
              "query shape of " + dataset);
    h5::read_chunkwise(d.get(), size == 4 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, size, dims,
                       dataset);
    return time;
  } catch (const std::exception& e) {
    throw std::runtime_error("step " + std::to_string(step) + " of '" + impl_->path +
                             "' cannot be read back intact: " + e.what());
  }
}

Hdf5StepData Hdf5SeriesReader::read(std::int64_t step, const Block* block) {
  const std::string group = step_group(step);
  const std::string where = impl_->path + ":" + group;
  try {
    h5::Group g(H5Gopen2(impl_->file.get(), group.c_str(), H5P_DEFAULT), "open group " + where);
    Hdf5StepInfo info;
    get_attribute(g.get(), "step", H5T_NATIVE_INT64, &info.step, 0, where);
    info.time = step_time(g.get(), where);
    if (info.step != step)
      throw std::runtime_error("HDF5 '" + where + "': its attribute 'step' says " +
                               std::to_string(info.step));
    info.dataset = group + "/" + impl_->field;
    return read_step(impl_->file.get(), impl_->path, info, block);
  } catch (const std::exception& e) {
    throw std::runtime_error("step " + std::to_string(step) + " of '" + impl_->path +
                             "' cannot be read back intact: " + e.what());
  }
}

}  // namespace heatsolve

#else  // !HEATSOLVE_HAVE_HDF5

namespace heatsolve {

using h5series::no_hdf5;

Hdf5StorageReport hdf5_storage_report(const std::string&) {
  no_hdf5();
}
std::vector<Hdf5StepInfo> list_hdf5_steps(const std::string&) {
  no_hdf5();
}
Hdf5StepData read_hdf5_step(const std::string&, std::int64_t, const Block*) {
  no_hdf5();
}
std::vector<double> read_hdf5_cell_field(const std::string&, const std::string&) {
  no_hdf5();
}
Hdf5SeriesInfo read_hdf5_series_info(const std::string&) {
  no_hdf5();
}
struct Hdf5SeriesReader::Impl {};
Hdf5SeriesReader::Hdf5SeriesReader(const std::string&) {
  no_hdf5();
}
Hdf5SeriesReader::~Hdf5SeriesReader() = default;
Hdf5StepData Hdf5SeriesReader::read(std::int64_t, const Block*) {
  no_hdf5();
}
double Hdf5SeriesReader::verify(std::int64_t) {
  no_hdf5();
}

}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_HDF5
