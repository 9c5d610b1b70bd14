#include "io/hdf5_writer.hpp"

#include <stdexcept>

#include "io/hdf5_series.hpp"
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
#include <type_traits>
#include <utility>

#include "core/mpi_comm.hpp"
#include "io/atomic_file.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_storage.hpp"
#include "io/hdf5_zfp.hpp"
#include "io/run_identity.hpp"
#include "io/xdmf_text.hpp"

namespace heatsolve {
namespace {

using h5series::hyperslab;
using h5series::Hyperslab;
using h5series::kCellFieldsGroup;
using h5series::select_block;
using h5series::step_group;

constexpr const char* kFormatName = "heatsolve-timeseries";
constexpr int kFormatVersion = 1;

template <typename T>
hid_t native_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  return std::is_same_v<T, float> ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
}

hid_t stored_type(Precision p) {
  return p == Precision::Float ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
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
  Block whole() const { return Block::whole(grid_); }

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
      if (MPI_Comm_dup(comm, comm_.out()) != MPI_SUCCESS) {
        throw std::runtime_error("HDF5 writer '" + final_h5_ + "': MPI_Comm_dup failed");
      }
      MPI_Comm_rank(comm_.get(), &rank_);
      MPI_Comm_size(comm_.get(), &size_);
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
      write_file_atomically(xdmf_,
                            xdmf_series_text(name_, grid_, precision_, steps_, cell_fields_));
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
      MPI_Bcast(&len, 1, MPI_INT, 0, comm_.get());
      error.resize(static_cast<std::size_t>(len));
      if (len > 0) MPI_Bcast(error.data(), len, MPI_CHAR, 0, comm_.get());
    }
#endif
    if (!error.empty()) throw std::runtime_error(error);
  }

  void open() {
    h5::PropList fapl = h5::file_access(h5::FileFormat::Series, partial_h5_);
#ifdef HEATSOLVE_HAVE_PARALLEL_HDF5
    if (mode_ == Mode::Collective) {
      h5::check(H5Pset_fapl_mpio(fapl.get(), comm_.get(), MPI_INFO_NULL),
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
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm_.get());
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
          MPI_Send(buf + done, len, mpi_type, peer, kTag, comm_.get());
        } else {
          MPI_Recv(buf + done, len, mpi_type, peer, kTag, comm_.get(), MPI_STATUS_IGNORE);
        }
      }
    };
    if (!is_root()) {
      int header[6] = {block.offset[0], block.offset[1], block.offset[2],
                       block.count[0],  block.count[1],  block.count[2]};
      bool sane = block.count[0] >= 0 && block.count[1] >= 0 && block.count[2] >= 0;
      bool send_data = sane && (data != nullptr || block.size() == 0);
      if (!send_data) header[3] = header[4] = header[5] = -1;  // rank 0 reports the bad block
      MPI_Send(header, 6, MPI_INT, 0, kTag, comm_.get());
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
      MPI_Recv(h, 6, MPI_INT, r, kTag, comm_.get(), MPI_STATUS_IGNORE);
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
  OwnedComm comm_;
#endif
};

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

}  // namespace heatsolve

#else  // !HEATSOLVE_HAVE_HDF5

namespace heatsolve {

using h5series::no_hdf5;

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

}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_HDF5
