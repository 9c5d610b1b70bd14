#include "io/hdf5_writer.hpp"

#include <stdexcept>

#include "io/xml_text.hpp"

#ifdef HEATSOLVE_HAVE_HDF5

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <type_traits>
#include <utility>

#include "io/atomic_file.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_storage.hpp"
#include "io/hdf5_zfp.hpp"
#include "io/run_identity.hpp"

namespace heatsolve {
namespace {

constexpr const char* kFormatName = "heatsolve-timeseries";
constexpr int kFormatVersion = 1;
constexpr const char* kCellFieldsGroup = "/cell_fields";
// The field's name in files written before the series named it (root attribute `field`).
constexpr const char* kLegacyFieldName = "temperature";

std::string step_group(std::int64_t step) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "/steps/%08lld", static_cast<long long>(step));
  return buf;
}

template <typename T>
hid_t native_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  return std::is_same_v<T, float> ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
}

hid_t stored_type(Precision p) {
  return p == Precision::Float ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
}

int rank_of(const OutputGrid& g) {
  return g.dims == 2 ? 2 : 3;
}

// File-order (z,y,x or y,x) extents of the whole grid and of a block.
struct Hyperslab {
  std::vector<hsize_t> global, offset, count;
};

Hyperslab hyperslab(const OutputGrid& g, const Block& b) {
  Hyperslab h;
  for (int a = rank_of(g) - 1; a >= 0; --a) {
    h.global.push_back(static_cast<hsize_t>(g.cells[a]));
    h.offset.push_back(static_cast<hsize_t>(b.offset[a]));
    h.count.push_back(static_cast<hsize_t>(b.count[a]));
  }
  return h;
}

// Creates (or overwrites) attribute `name` on `obj`: n == 0 scalar, else a 1-D array of n.
void set_attribute(hid_t obj, const char* name, hid_t type, const void* data, hsize_t n,
                   const std::string& where) {
  const std::string what = std::string("attribute '") + name + "' on " + where;
  htri_t exists = H5Aexists(obj, name);
  if (exists < 0) h5::fail("query " + what);
  h5::Attribute attr;
  if (exists > 0) {
    attr = h5::Attribute(H5Aopen(obj, name, H5P_DEFAULT), "open " + what);
  } else {
    h5::Dataspace space(n == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr),
                        "dataspace for " + what);
    attr = h5::Attribute(H5Acreate2(obj, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                         "create " + what);
  }
  h5::check(H5Awrite(attr.get(), type, data), "write " + what);
}

void set_string_attribute(hid_t obj, const char* name, const std::string& value,
                          const std::string& where) {
  h5::Datatype type(H5Tcopy(H5T_C_S1), std::string("string type for ") + name);
  h5::check(H5Tset_size(type.get(), std::max<std::size_t>(value.size(), 1)),
            std::string("string size for ") + name);
  h5::Dataspace space(H5Screate(H5S_SCALAR), std::string("dataspace for ") + name);
  h5::Attribute attr(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                     std::string("create attribute '") + name + "' on " + where);
  h5::check(H5Awrite(attr.get(), type.get(), value.c_str()),
            std::string("write attribute '") + name + "' on " + where);
}

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

// A step of a transient series: time and step; of a steady one (Poisson): iteration and step
// (no time: an iteration is not a time).
void write_step_attributes(hid_t obj, std::int64_t step, double time, bool steady,
                           const std::string& where) {
  if (steady)
    set_attribute(obj, "iteration", H5T_NATIVE_INT64, &step, 0, where);
  else
    set_attribute(obj, "time", H5T_NATIVE_DOUBLE, &time, 0, where);
  set_attribute(obj, "step", H5T_NATIVE_INT64, &step, 0, where);
}

// A string attribute of `obj`, or `fallback` when it has none.
std::string string_attribute_or(hid_t obj, const char* name, const std::string& fallback,
                                const std::string& where) {
  if (H5Aexists(obj, name) <= 0) return fallback;
  const std::string what = std::string("attribute '") + name + "' of " + where;
  h5::Attribute attr(H5Aopen(obj, name, H5P_DEFAULT), "open " + what);
  h5::Datatype type(H5Aget_type(attr.get()), "type of " + what);
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0)
    throw std::runtime_error("HDF5: " + what + " is not a fixed-length string");
  const std::size_t size = H5Tget_size(type.get());
  h5::Datatype mem(H5Tcopy(H5T_C_S1), "string type");
  h5::check(H5Tset_size(mem.get(), size + 1), "string size");
  std::string out(size + 1, '\0');
  h5::check(H5Aread(attr.get(), mem.get(), out.data()), "read " + what);
  out.resize(std::strlen(out.c_str()));
  return out;
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

// Selects `slab`'s block in a file dataspace and creates the matching memory dataspace.
std::pair<h5::Dataspace, h5::Dataspace> select_block(hid_t dset, const Hyperslab& slab,
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

// ---- Integrity (docs/robustness.md) ------------------------------------------------------

std::size_t stored_size(Precision p) {
  return p == Precision::Float ? sizeof(float) : sizeof(double);
}

// The creation list of a step's dataset (`slab.global`): chunked (series_chunk), as every
// filter needs, through the filters of output.compression, and checksummed by Fletcher32 last
// (so that it covers the stored bytes): a restart copying the step detects damage. Every
// element is written: no fill-value pass.
h5::PropList series_dataset_creation(const Hyperslab& slab, const Compression& c,
                                     const std::string& where) {
  h5::PropList dcpl(H5Pcreate(H5P_DATASET_CREATE), "dataset creation list for " + where);
  h5::check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "set fill time for " + where);
  const std::vector<hsize_t> chunk = series_chunk(slab.global);
  h5::check(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()),
            "set chunks for " + where);
  if (c.type == CompressionType::Deflate) {
    h5::check(H5Pset_shuffle(dcpl.get()), "set shuffle filter for " + where);
    h5::check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(c.level)),
              "set deflate filter for " + where);
  } else if (c.type == CompressionType::Zfp) {
    h5zfp::add_accuracy_filter(dcpl.get(), c.tolerance);
  }
  h5::add_checksum(dcpl.get(), where);
  return dcpl;
}

// The run's identity (io/run_identity.hpp) as root attributes of a new series: a restart
// continues only a series of its own deck and lineage.
void write_identity(hid_t root, const std::string& where) {
  const RunIdentity& id = run_identity();
  if (!id.lineage.empty()) set_string_attribute(root, "lineage", id.lineage, where);
  if (!id.deck_hash.empty()) set_string_attribute(root, "deck_hash", id.deck_hash, where);
}

// ---- Compression (output.compression) -----------------------------------------------------

// Root attributes that say how the series is stored (io/hdf5_writer.hpp, "Compression").
void write_compression_attributes(hid_t root, const Compression& c, const std::string& where) {
  const int lossy = c.type == CompressionType::Zfp ? 1 : 0;
  set_string_attribute(root, "compression", to_string(c.type), where);
  set_attribute(root, "compression_lossy", H5T_NATIVE_INT, &lossy, 0, where);
  std::string note = "lossless: the values as computed";
  if (c.type == CompressionType::Deflate) {
    set_attribute(root, "compression_level", H5T_NATIVE_INT, &c.level, 0, where);
    note = "lossless: the values as computed, chunked through HDF5's shuffle and deflate (level " +
           std::to_string(c.level) + ")";
  } else if (c.type == CompressionType::Zfp) {
    set_attribute(root, "compression_tolerance", H5T_NATIVE_DOUBLE, &c.tolerance, 0, where);
    note =
        "lossy: ZFP fixed-accuracy mode (HDF5 filter 32013, H5Z-ZFP format), every stored "
        "value within compression_tolerance = " +
        format_double(c.tolerance) + " of the computed one";
  }
  set_string_attribute(root, "compression_note", note, where);
}

// Refuses (std::runtime_error) a compression this build or its HDF5 library cannot do.
void check_compression_available(const Compression& c, const std::string& file) {
  if (c.type == CompressionType::None || hdf5_compression_available(c.type)) return;
  throw std::runtime_error("HDF5 file '" + file + "': output.compression type " +
                           to_string(c.type) + " is not available in this build" +
                           (c.type == CompressionType::Zfp
                                ? " (built without the ZFP library)"
                                : " (the HDF5 library has no deflate filter)"));
}

// Gathered writes of a lossy (zfp) series: rank 0 collects every rank's block of a step into
// the whole field and writes it once. Written block by block, a chunk that several blocks share
// would be decompressed and compressed again for each of them, its error growing every time
// (and the values would depend on the decomposition). Costs one global field on rank 0.
template <typename T>
class StepAssembly {
 public:
  StepAssembly(const OutputGrid& g, bool on) : grid_(g) {
    if (on) values_.resize(std::size_t(g.cells[0]) * g.cells[1] * g.cells[2]);
  }
  bool active() const { return !values_.empty(); }
  // Keeps the values of a (validated) block; false when not assembling: write it yourself.
  bool add(const T* data, const Block& b) {
    if (!active()) return false;
    const std::size_t nx = std::size_t(grid_.cells[0]), ny = std::size_t(grid_.cells[1]);
    for (int z = 0; z < b.count[2]; ++z)
      for (int y = 0; y < b.count[1]; ++y) {
        const std::size_t at = std::size_t(b.offset[0]) + nx * (std::size_t(b.offset[1] + y) +
                                                                ny * std::size_t(b.offset[2] + z));
        std::copy_n(data + (std::size_t(z) * b.count[1] + y) * b.count[0], b.count[0],
                    values_.data() + at);
      }
    return true;
  }
  const T* data() const { return values_.data(); }
  Block whole() const {
    Block b;
    b.count = grid_.cells;
    return b;
  }

 private:
  OutputGrid grid_;
  std::vector<T> values_;
};

class Hdf5Writer final : public FieldWriter {
 public:
  enum class Mode { Serial, Collective, Gather };

  Hdf5Writer(const std::string& directory, const std::string& name, const OutputGrid& grid,
             Precision precision, Mode mode, const Compression& compression
#ifdef HEATSOLVE_HAVE_MPI
             ,
             MPI_Comm comm = MPI_COMM_NULL
#endif
             )
      : name_(name), grid_(grid), precision_(precision), mode_(mode), compression_(compression) {
    std::filesystem::path dir =
        directory.empty() ? std::filesystem::path(".") : std::filesystem::path(directory);
    final_h5_ = (dir / (name + ".h5")).string();
    partial_h5_ = final_h5_ + ".partial";
    xdmf_ = (dir / (name + ".xdmf")).string();
    h5::silence_errors();
    check_output_grid(grid_, "HDF5 file '" + final_h5_ + "'");
    check_compression_available(compression_, final_h5_);
#ifdef HEATSOLVE_HAVE_MPI
    if (mode_ != Mode::Serial) {
      if (MPI_Comm_dup(comm, &comm_) != MPI_SUCCESS) {
        throw std::runtime_error("HDF5 writer '" + final_h5_ + "': MPI_Comm_dup failed");
      }
      MPI_Comm_rank(comm_, &rank_);
      MPI_Comm_size(comm_, &size_);
    }
#endif
    on_root([&] {
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) {
        throw std::runtime_error("cannot create output directory '" + dir.string() +
                                 "': " + ec.message());
      }
    });
    if (mode_ == Mode::Collective) {
      open();
    } else {
      on_root([&] { open(); });
    }
  }

  ~Hdf5Writer() override {
    // Without finalize() (an exception, an abandoned run) the `.partial` file is closed and
    // left for inspection (and for a restart); nothing appears under the final names.
    file_.reset();
    reserve_.release();
#ifdef HEATSOLVE_HAVE_MPI
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
#endif
  }

  void write(std::int64_t step, double time, const float* data, const Block& block) override {
    write_step(step, time, data, block);
  }
  void write(std::int64_t step, double time, const double* data, const Block& block) override {
    write_step(step, time, data, block);
  }

  void write_cell_fields(const std::vector<CellField>& fields, const Block& block) override {
    if (finalized_ || !steps_.empty()) {
      throw std::runtime_error("HDF5 writer '" + final_h5_ +
                               "': cell fields are written before the first step");
    }
    for (const CellField& f : fields) {
      const std::string path = std::string(kCellFieldsGroup) + "/" + f.name;
      write_dataset({path, "cell field " + f.name, [&] { return create_cell_field(f.name); }, -1,
                     sizeof(double)},
                    f.data, block);
      if (std::find(cell_fields_.begin(), cell_fields_.end(), f.name) == cell_fields_.end())
        cell_fields_.push_back(f.name);
    }
  }

  void finalize() override {
    if (finalized_) return;
    if (mode_ == Mode::Collective) file_.close("close " + partial_h5_);  // collective
    on_root([&] {
      file_.close("close " + partial_h5_);
      reserve_.release();
      publish_file(partial_h5_, final_h5_);
      write_file_atomically(xdmf_, xdmf_text());
    });
    finalized_ = true;
  }

  std::vector<std::string> files() const override {
    return {final_h5_, xdmf_};
  }

 private:
  bool is_root() const {
    return rank_ == 0;
  }

  static std::string step_label(std::int64_t step) {
    return "step " + std::to_string(step);
  }

  // Runs `f` on rank 0 only; every rank then throws if it failed there.
  void on_root(const std::function<void()>& f) {
    std::string error;
    if (is_root()) {
      try {
        f();
      } catch (const std::exception& e) {
        if (size_ == 1) throw;
        error = e.what();
      }
    }
    share_error(error);
  }

  // Broadcasts rank 0's error message (multi-rank modes) and throws it on every rank.
  void share_error(std::string error) {
#ifdef HEATSOLVE_HAVE_MPI
    if (size_ > 1) {
      int len = static_cast<int>(error.size());
      MPI_Bcast(&len, 1, MPI_INT, 0, comm_);
      error.resize(static_cast<std::size_t>(len));
      if (len > 0) MPI_Bcast(error.data(), len, MPI_CHAR, 0, comm_);
    }
#endif
    if (!error.empty()) throw std::runtime_error(error);
  }

  void open() {
    h5::PropList fapl = h5::file_access(h5::FileFormat::Series, partial_h5_);
#ifdef HEATSOLVE_HAVE_PARALLEL_HDF5
    if (mode_ == Mode::Collective) {
      h5::check(H5Pset_fapl_mpio(fapl.get(), comm_, MPI_INFO_NULL),
                "set MPI-IO driver for " + partial_h5_);
    }
#endif
    // Never through a symbolic link: the previous run's partial file (already moved aside by
    // a restart) is replaced, a link is an error. Collective: rank 0 clears the name first.
    if (mode_ == Mode::Collective) {
      on_root([&] { h5::remove_stale_file(partial_h5_, "series file"); });
      file_ = h5::File(H5Fcreate(partial_h5_.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()),
                       "create " + partial_h5_);
    } else {
      file_ = h5::create_file(partial_h5_, fapl.get(), "series file");
    }
    if (is_root()) reserve_ = h5::SpaceReserve(file_.get(), partial_h5_);
    reserve("the series header");
    const std::string where = partial_h5_ + ":/";
    hid_t root = file_.get();
    set_string_attribute(root, "format", kFormatName, where);
    set_attribute(root, "format_version", H5T_NATIVE_INT, &kFormatVersion, 0, where);
    set_attribute(root, "dimensions", H5T_NATIVE_INT, &grid_.dims, 0, where);
    set_attribute(root, "cells", H5T_NATIVE_INT, grid_.cells.data(), 3, where);
    set_attribute(root, "origin", H5T_NATIVE_DOUBLE, grid_.origin.data(), 3, where);
    set_attribute(root, "spacing", H5T_NATIVE_DOUBLE, grid_.spacing.data(), 3, where);
    set_string_attribute(root, "field", grid_.field(), where);
    set_string_attribute(root, "problem", to_string(grid_.problem), where);
    write_identity(root, where);
    write_compression_attributes(root, compression_, where);
    h5::Group steps(H5Gcreate2(root, "/steps", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                    "create group /steps in " + partial_h5_);
    h5::check(H5Fflush(root, H5F_SCOPE_GLOBAL), "flush " + partial_h5_);
  }

  // The disk space of the next step (or of the header: `what`), reserved before HDF5 writes
  // any of it (io/hdf5_storage.hpp); throws on every rank in the collective mode. Rank 0
  // alone calls it in the other modes.
  void reserve(const std::string& what, std::size_t value_bytes = 0) {
    std::uint64_t cells = 1;
    for (int a = 0; a < 3; ++a) cells *= std::uint64_t(grid_.cells[a]);
    const std::uint64_t bytes = cells * (value_bytes > 0 ? value_bytes : stored_size(precision_));
    const auto ensure = [&] { reserve_.ensure(bytes + h5::metadata_margin(bytes), what); };
    if (mode_ == Mode::Collective)
      on_root(ensure);
    else
      ensure();
  }

  // The constant cell field `name` (always double: material properties are not rounded to
  // the run's precision), stored like a step's data.
  h5::Dataset create_cell_field(const std::string& name) {
    const std::string where = partial_h5_ + ":" + kCellFieldsGroup;
    htri_t exists = H5Lexists(file_.get(), kCellFieldsGroup, H5P_DEFAULT);
    if (exists < 0) h5::fail("look up " + where);
    h5::Group g =
        exists > 0
            ? h5::Group(H5Gopen2(file_.get(), kCellFieldsGroup, H5P_DEFAULT), "open group " + where)
            : h5::Group(
                  H5Gcreate2(file_.get(), kCellFieldsGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                  "create group " + where);
    // A field written in blocks (one call per block) is created by the first.
    exists = H5Lexists(g.get(), name.c_str(), H5P_DEFAULT);
    if (exists < 0) h5::fail("look up " + where + "/" + name);
    if (exists > 0)
      return h5::Dataset(H5Dopen2(g.get(), name.c_str(), H5P_DEFAULT),
                         "open dataset " + where + "/" + name);
    Hyperslab slab = hyperslab(grid_, Block{});
    h5::Dataspace space(
        H5Screate_simple(static_cast<int>(slab.global.size()), slab.global.data(), nullptr),
        "dataspace for " + where + "/" + name);
    const h5::PropList dcpl = series_dataset_creation(slab, compression_, where);
    return h5::Dataset(H5Dcreate2(g.get(), name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT,
                                  dcpl.get(), H5P_DEFAULT),
                       "create dataset " + where + "/" + name);
  }

  // Creates (or, for a step written before, reopens) the step's group and dataset.
  h5::Dataset open_step(std::int64_t step, double time) {
    const std::string group = step_group(step);
    const std::string where = partial_h5_ + ":" + group;
    htri_t exists = H5Lexists(file_.get(), group.c_str(), H5P_DEFAULT);
    if (exists < 0) h5::fail("look up " + where);
    h5::Group g;
    h5::Dataset d;
    if (exists > 0) {
      g = h5::Group(H5Gopen2(file_.get(), group.c_str(), H5P_DEFAULT), "open group " + where);
      d = h5::Dataset(H5Dopen2(g.get(), grid_.field(), H5P_DEFAULT),
                      "open dataset " + where + "/" + grid_.field());
    } else {
      g = h5::Group(H5Gcreate2(file_.get(), group.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                    "create group " + where);
      Hyperslab slab = hyperslab(grid_, Block{});
      h5::Dataspace space(
          H5Screate_simple(static_cast<int>(slab.global.size()), slab.global.data(), nullptr),
          "dataspace for " + where);
      const h5::PropList dcpl = series_dataset_creation(slab, compression_, where);
      d = h5::Dataset(H5Dcreate2(g.get(), grid_.field(), stored_type(precision_), space.get(),
                                 H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                      "create dataset " + where + "/" + grid_.field());
    }
    write_step_attributes(g.get(), step, time, grid_.steady(), where);
    write_step_attributes(d.get(), step, time, grid_.steady(), where + "/" + grid_.field());
    return d;
  }

  template <typename T>
  void validate(const T* data, const Block& block) const {
    check_output_block(grid_, block, "HDF5 file '" + partial_h5_ + "'");
    if (block.size() > 0 && data == nullptr) {
      throw std::runtime_error("HDF5 '" + partial_h5_ + "': null data for a non-empty block");
    }
  }

  // Collective mode: every rank learns whether any rank's block is invalid before entering
  // collective HDF5 calls (a rank throwing alone would leave the others blocked in them).
  template <typename T>
  void validate_collectively(const T* data, const Block& block) const {
    std::string error;
    try {
      validate(data, block);
    } catch (const std::exception& e) {
      error = e.what();
    }
#ifdef HEATSOLVE_HAVE_MPI
    int bad = error.empty() ? 0 : 1, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm_);
    if (any != 0 && error.empty()) {
      error = "HDF5 '" + partial_h5_ + "': another rank's block is invalid";
    }
#endif
    if (!error.empty()) throw std::runtime_error(error);
  }

  template <typename T>
  void write_block(hid_t dset, const T* data, const Block& block, const std::string& path) {
    const std::string where = partial_h5_ + ":" + path;
    validate(data, block);
    auto [file_space, mem_space] = select_block(dset, hyperslab(grid_, block), where);
    h5::PropList dxpl(H5Pcreate(H5P_DATASET_XFER), "transfer list for " + where);
#ifdef HEATSOLVE_HAVE_PARALLEL_HDF5
    if (mode_ == Mode::Collective) {
      h5::check(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE),
                "set collective transfer for " + where);
    }
#endif
    h5::check(H5Dwrite(dset, native_type<T>(), mem_space.get(), file_space.get(), dxpl.get(), data),
              "write " + where);
  }

  // One dataset the ranks' blocks make up: a step's field or a constant cell field.
  struct Target {
    std::string path;                   // in the file, for messages
    std::string label;                  // "step 10", for the disk-space message
    std::function<h5::Dataset()> open;  // creates (or reopens) the dataset
    std::int64_t step = -1;             // a step: its number (fault injection), else -1
    std::size_t value_bytes = 0;        // stored bytes per value (0: the run's precision)
  };

  template <typename T>
  void write_step(std::int64_t step, double time, const T* data, const Block& block) {
    write_dataset({step_group(step) + "/" + grid_.field(), step_label(step),
                   [&] { return open_step(step, time); }, step},
                  data, block);
    steps_[step] = grid_.steady() ? double(step) : time;  // XDMF: a steady series' iterations
    record_series_step(step);
  }

  template <typename T>
  void write_dataset(const Target& target, const T* data, const Block& block) {
    if (finalized_) {
      throw std::runtime_error("HDF5 writer '" + final_h5_ + "': write after finalize()");
    }
    if (mode_ == Mode::Gather) {
      write_gathered(target, data, block);
    } else {
      if (mode_ == Mode::Collective) validate_collectively(data, block);
      reserve(target.label, target.value_bytes);
      h5::Dataset d = target.open();
      write_block(d.get(), data, block, target.path);
      d.reset();
      if (target.step >= 0) fault_point("series", target.step);
      h5::check(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "flush " + partial_h5_);
    }
  }

  // Serial HDF5 under MPI: rank 0 receives every rank's block and writes it.
  template <typename T>
  void write_gathered(const Target& target, const T* data, const Block& block) {
#ifdef HEATSOLVE_HAVE_MPI
    constexpr int kTag = 0x4835;  // private to comm_ (a dup)
    constexpr std::size_t kChunk = std::size_t(1) << 28;
    const MPI_Datatype mpi_type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
    auto transfer = [&](T* buf, std::size_t n, int peer, bool send) {
      for (std::size_t done = 0; done < n; done += kChunk) {
        int len = static_cast<int>(std::min(kChunk, n - done));
        if (send) {
          MPI_Send(buf + done, len, mpi_type, peer, kTag, comm_);
        } else {
          MPI_Recv(buf + done, len, mpi_type, peer, kTag, comm_, MPI_STATUS_IGNORE);
        }
      }
    };
    if (!is_root()) {
      int header[6] = {block.offset[0], block.offset[1], block.offset[2],
                       block.count[0],  block.count[1],  block.count[2]};
      bool sane = block.count[0] >= 0 && block.count[1] >= 0 && block.count[2] >= 0;
      bool send_data = sane && (data != nullptr || block.size() == 0);
      if (!send_data) header[3] = header[4] = header[5] = -1;  // rank 0 reports the bad block
      MPI_Send(header, 6, MPI_INT, 0, kTag, comm_);
      if (send_data) transfer(const_cast<T*>(data), block.size(), 0, true);
      share_error({});
      return;
    }
    // Rank 0 drains every rank's message even after a failure so no sender is left blocked.
    std::string error;
    h5::Dataset d;
    StepAssembly<T> assembly(grid_, compression_.type == CompressionType::Zfp);
    try {
      reserve(target.label, target.value_bytes);
      d = target.open();
      validate(data, block);
      if (!assembly.add(data, block)) write_block(d.get(), data, block, target.path);
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::vector<T> buffer;
    for (int r = 1; r < size_; ++r) {
      int h[6];
      MPI_Recv(h, 6, MPI_INT, r, kTag, comm_, MPI_STATUS_IGNORE);
      Block b;
      b.offset = {h[0], h[1], h[2]};
      b.count = {h[3], h[4], h[5]};
      bool sane = b.count[0] >= 0 && b.count[1] >= 0 && b.count[2] >= 0;
      buffer.resize(sane ? b.size() : 0);
      transfer(buffer.data(), buffer.size(), r, false);
      if (!error.empty()) continue;
      try {
        validate(buffer.data(), b);
        if (!assembly.add(buffer.data(), b)) write_block(d.get(), buffer.data(), b, target.path);
      } catch (const std::exception& e) {
        error = "rank " + std::to_string(r) + ": " + e.what();
      }
    }
    if (error.empty() && assembly.active()) {
      try {
        write_block(d.get(), assembly.data(), assembly.whole(), target.path);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    d.reset();
    if (error.empty() && target.step >= 0) fault_point("series", target.step);
    if (error.empty() && H5Fflush(file_.get(), H5F_SCOPE_GLOBAL) < 0) {
      error = "HDF5: flush " + partial_h5_ + " failed (" + h5::last_error() + ")";
    }
    share_error(error);
#else
    (void)target, (void)data, (void)block;
#endif
  }

  std::string xdmf_text() const {
    // 2D grids are described as 3D meshes one point thick in z: ParaView (5.11) maps an XDMF
    // 2DCoRectMesh onto the y-z plane, this puts them in the x-y plane where they belong. The
    // attribute keeps the dataset's 2-D shape (ny nx); the cell count matches either way.
    const int n = grid_.dims == 3 ? 3 : 2;
    std::string points, cells, origin, spacing;
    if (n == 2) {
      points = "1 ";
      origin = format_double(grid_.origin[2]) + " ";
      spacing = format_double(grid_.spacing[2]) + " ";
    }
    for (int a = n - 1; a >= 0; --a) {  // XDMF lists axes slowest first: z y x
      const char* sep = a == 0 ? "" : " ";
      points += std::to_string(grid_.cells[a] + 1) + sep;
      cells += std::to_string(grid_.cells[a]) + sep;
      origin += format_double(grid_.origin[a]) + sep;
      spacing += format_double(grid_.spacing[a]) + sep;
    }
    const std::string h5_name = xml_escape(name_ + ".h5");
    const char* precision = precision_ == Precision::Float ? "4" : "8";
    std::ostringstream x;
    x << "<?xml version=\"1.0\" ?>\n"
      << "<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
      << "<Xdmf Version=\"3.0\" xmlns:xi=\"http://www.w3.org/2001/XInclude\">\n"
      << "  <Domain>\n"
      << "    <Grid Name=\"" << xml_escape(name_)
      << "\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
    if (grid_.steady())
      x << "      <!-- A steady solve: each Time Value is the iteration number, not a time -->\n";
    for (const auto& [step, time] : steps_) {
      const std::string group = step_group(step);
      x << "      <Grid Name=\"step" << group.substr(group.rfind('/') + 1)
        << "\" GridType=\"Uniform\">\n"
        << "        <Time Value=\"" << format_double(time) << "\"/>\n"
        << "        <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"" << points << "\"/>\n"
        << "        <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
        << "          <DataItem Name=\"Origin\" Dimensions=\"3\" NumberType=\"Float\" "
           "Precision=\"8\" Format=\"XML\">"
        << origin << "</DataItem>\n"
        << "          <DataItem Name=\"Spacing\" Dimensions=\"3"
        << "\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">" << spacing << "</DataItem>\n"
        << "        </Geometry>\n"
        << "        <Attribute Name=\"" << grid_.field()
        << "\" AttributeType=\"Scalar\" Center=\"Cell\">\n"
        << "          <DataItem Dimensions=\"" << cells << "\" NumberType=\"Float\" Precision=\""
        << precision << "\" Format=\"HDF\">" << h5_name << ":" << group << "/" << grid_.field()
        << "</DataItem>\n"
        << "        </Attribute>\n";
      for (const std::string& f : cell_fields_) {  // the one dataset, in every step
        x << "        <Attribute Name=\"" << xml_escape(f)
          << "\" AttributeType=\"Scalar\" Center=\"Cell\">\n"
          << "          <DataItem Dimensions=\"" << cells
          << "\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">" << h5_name << ":"
          << kCellFieldsGroup << "/" << xml_escape(f) << "</DataItem>\n"
          << "        </Attribute>\n";
      }
      x << "      </Grid>\n";
    }
    x << "    </Grid>\n"
      << "  </Domain>\n"
      << "</Xdmf>\n";
    return x.str();
  }

  std::string name_, final_h5_, partial_h5_, xdmf_;
  OutputGrid grid_;
  Precision precision_;
  Mode mode_;
  Compression compression_;
  h5::File file_;
  h5::SpaceReserve reserve_;              // rank 0: disk space ahead of the partial file
  std::map<std::int64_t, double> steps_;  // step -> time, everything written so far
  std::vector<std::string> cell_fields_;  // under kCellFieldsGroup
  bool finalized_ = false;
  int rank_ = 0, size_ = 1;
#ifdef HEATSOLVE_HAVE_MPI
  MPI_Comm comm_ = MPI_COMM_NULL;
#endif
};

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

h5::File open_for_reading(const std::string& path) {
  h5::silence_errors();
  if (h5zfp::built_in()) h5zfp::ensure_registered();  // zfp-compressed series
  return h5::File(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open " + path);
}

}  // namespace

std::unique_ptr<FieldWriter> make_hdf5_writer(const std::string& directory, const std::string& name,
                                              const OutputGrid& grid, Precision precision,
                                              const Compression& compression) {
  return std::make_unique<Hdf5Writer>(directory, name, grid, precision, Hdf5Writer::Mode::Serial,
                                      compression);
}

#ifdef HEATSOLVE_HAVE_MPI
std::unique_ptr<FieldWriter> make_hdf5_writer(const std::string& directory, const std::string& name,
                                              const OutputGrid& grid, Precision precision,
                                              MPI_Comm comm, const Compression& compression) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  auto mode = Hdf5Writer::Mode::Serial;
  if (size > 1) {
    const char* gather = std::getenv("HEATSOLVE_HDF5_GATHER");
    bool force_gather = gather != nullptr && *gather != '\0' && std::string(gather) != "0";
#ifdef HEATSOLVE_HAVE_PARALLEL_HDF5
    mode = force_gather ? Hdf5Writer::Mode::Gather : Hdf5Writer::Mode::Collective;
#else
    (void)force_gather;
    mode = Hdf5Writer::Mode::Gather;
#endif
  }
  return std::make_unique<Hdf5Writer>(directory, name, grid, precision, mode, compression, comm);
}
#endif

std::vector<unsigned long long> series_chunk(const std::vector<unsigned long long>& shape) {
  constexpr unsigned long long kMaxValues = 1ull << 20;
  std::vector<unsigned long long> chunk = shape;
  const auto values = [&] {
    unsigned long long n = 1;
    for (unsigned long long c : chunk) n *= c;
    return n;
  };
  for (std::size_t a = 0; a < chunk.size() && values() > kMaxValues;) {
    if (chunk[a] <= 4) {
      ++a;  // this axis is as thin as a ZFP block: cut the next one
      continue;
    }
    chunk[a] = (chunk[a] / 2 + chunk[a] % 2 + 3) / 4 * 4;  // half, rounded up to a multiple of 4
  }
  return chunk;
}

bool hdf5_compression_available(CompressionType type) {
  switch (type) {
    case CompressionType::None:
      return true;
    case CompressionType::Deflate:
      return H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0 && H5Zfilter_avail(H5Z_FILTER_SHUFFLE) > 0;
    case CompressionType::Zfp:
      return h5zfp::built_in();
  }
  return false;
}

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

  const std::string root = path + ":/";
  get_attribute(f, "dimensions", H5T_NATIVE_INT, &out.grid.dims, 0, root);
  get_attribute(f, "cells", H5T_NATIVE_INT, out.grid.cells.data(), 3, root);
  get_attribute(f, "origin", H5T_NATIVE_DOUBLE, out.grid.origin.data(), 3, root);
  get_attribute(f, "spacing", H5T_NATIVE_DOUBLE, out.grid.spacing.data(), 3, root);
  if (string_attribute_or(f, "problem", "heat", root) == "poisson")
    out.grid.problem = ProblemType::Poisson;
  check_output_grid(out.grid, "HDF5 file '" + path + "'");

  const std::string where = path + ":" + info.dataset;
  h5::Dataset d(H5Dopen2(f, info.dataset.c_str(), H5P_DEFAULT), "open dataset " + where);
  h5::Datatype type(H5Dget_type(d.get()), "type of " + where);
  if (H5Tget_class(type.get()) != H5T_FLOAT) {
    throw std::runtime_error("HDF5 '" + where + "': not a floating-point dataset");
  }
  out.precision = H5Tget_size(type.get()) == sizeof(float) ? Precision::Float : Precision::Double;

  Block whole;
  whole.count = out.grid.cells;
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

std::string read_string_attribute(hid_t obj, const char* name, const std::string& where) {
  const std::string what = std::string("attribute '") + name + "' of " + where;
  h5::Attribute attr(H5Aopen(obj, name, H5P_DEFAULT), "open " + what);
  h5::Datatype type(H5Aget_type(attr.get()), "type of " + what);
  if (H5Tget_class(type.get()) != H5T_STRING)
    throw std::runtime_error("HDF5: " + what + " is not a string");
  const std::size_t size = H5Tget_size(type.get());
  h5::Datatype mem(H5Tcopy(H5T_C_S1), "string type");
  h5::check(H5Tset_size(mem.get(), size + 1), "string size");
  std::string out(size + 1, '\0');
  h5::check(H5Aread(attr.get(), mem.get(), out.data()), "read " + what);
  out.resize(std::strlen(out.c_str()));
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
  if (H5Aexists(f, "format") > 0) info.format = read_string_attribute(f, "format", root);
  if (H5Aexists(f, "lineage") > 0) info.lineage = read_string_attribute(f, "lineage", root);
  if (H5Aexists(f, "deck_hash") > 0) info.deck_hash = read_string_attribute(f, "deck_hash", root);
  get_attribute(f, "dimensions", H5T_NATIVE_INT, &info.grid.dims, 0, root);
  get_attribute(f, "cells", H5T_NATIVE_INT, info.grid.cells.data(), 3, root);
  get_attribute(f, "origin", H5T_NATIVE_DOUBLE, info.grid.origin.data(), 3, root);
  get_attribute(f, "spacing", H5T_NATIVE_DOUBLE, info.grid.spacing.data(), 3, root);
  if (string_attribute_or(f, "problem", "heat", root) == "poisson")
    info.grid.problem = ProblemType::Poisson;
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
namespace {
[[noreturn]] void no_hdf5() {
  throw std::runtime_error(
      "heatsolve was built without HDF5 (HEATSOLVE_ENABLE_HDF5=OFF or "
      "HDF5 not found): the hdf5 output format is unavailable");
}
}  // namespace

std::unique_ptr<FieldWriter> make_hdf5_writer(const std::string&, const std::string&,
                                              const OutputGrid&, Precision, const Compression&) {
  no_hdf5();
}
#ifdef HEATSOLVE_HAVE_MPI
std::unique_ptr<FieldWriter> make_hdf5_writer(const std::string&, const std::string&,
                                              const OutputGrid&, Precision, MPI_Comm,
                                              const Compression&) {
  no_hdf5();
}
#endif
std::vector<unsigned long long> series_chunk(const std::vector<unsigned long long>& shape) {
  return shape;
}
bool hdf5_compression_available(CompressionType type) {
  return type == CompressionType::None;
}
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
