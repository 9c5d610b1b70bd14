// The checkpoint file itself (HDF5): writing it from one rank or many (each rank its block,
// checksummed, published only once complete), reading a header or a block, and verifying a
// file end to end. Names, paths and the deck match: io/checkpoint.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <tuple>
#include <type_traits>

#include "core/mpi_comm.hpp"
#include "io/atomic_file.hpp"
#include "io/checkpoint.hpp"
#include "io/run_identity.hpp"

#ifdef HEATSOLVE_HAVE_HDF5
#include "io/hdf5_handle.hpp"
#include "io/hdf5_storage.hpp"
#endif

namespace fs = std::filesystem;

namespace heatsolve {

#ifdef HEATSOLVE_HAVE_HDF5

namespace {

constexpr const char* kFormatName = "heatsolve-checkpoint";

hid_t h5_type(Precision p) {
  return p == Precision::Float ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
}
std::size_t value_size(Precision p) {
  return p == Precision::Float ? sizeof(float) : sizeof(double);
}

void put_attr(hid_t obj, const char* name, hid_t type, const void* data, hsize_t n,
              const std::string& file) {
  h5::Dataspace space(n == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr),
                      std::string("dataspace for attribute ") + name);
  h5::Attribute a(H5Acreate2(obj, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                  fmt::format("create attribute '{}' in {}", name, file));
  h5::check(H5Awrite(a.get(), type, data), fmt::format("write attribute '{}' in {}", name, file));
}

void put_string(hid_t obj, const char* name, const std::string& value, const std::string& file) {
  h5::Datatype type(H5Tcopy(H5T_C_S1), "string type");
  h5::check(H5Tset_size(type.get(), std::max<std::size_t>(value.size(), 1)), "string size");
  h5::Dataspace space(H5Screate(H5S_SCALAR), "scalar dataspace");
  h5::Attribute a(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                  fmt::format("create attribute '{}' in {}", name, file));
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  h5::check(H5Awrite(a.get(), type.get(), padded.data()),
            fmt::format("write attribute '{}' in {}", name, file));
}

[[noreturn]] void bad_file(const std::string& file, const std::string& what) {
  throw std::runtime_error(fmt::format("checkpoint '{}': {}", file, what));
}

void get_attr(hid_t obj, const char* name, hid_t type, void* out, hsize_t n,
              const std::string& file) {
  if (H5Aexists(obj, name) <= 0) bad_file(file, fmt::format("attribute '{}' missing", name));
  h5::Attribute a(H5Aopen(obj, name, H5P_DEFAULT),
                  fmt::format("open attribute '{}' in {}", name, file));
  h5::Dataspace space(H5Aget_space(a.get()), "attribute dataspace");
  if (H5Sget_simple_extent_npoints(space.get()) != static_cast<hssize_t>(std::max<hsize_t>(n, 1)))
    bad_file(file, fmt::format("attribute '{}' has the wrong size", name));
  h5::check(H5Aread(a.get(), type, out), fmt::format("read attribute '{}' in {}", name, file));
}

std::string get_string(hid_t obj, const char* name, const std::string& file) {
  if (H5Aexists(obj, name) <= 0) bad_file(file, fmt::format("attribute '{}' missing", name));
  std::optional<std::string> value = h5::fixed_string_attribute(obj, name, file);
  if (!value) bad_file(file, fmt::format("attribute '{}' is not a fixed-length string", name));
  return *value;
}

// File-order (slowest first) extents of the grid and of a block.
// The header's numeric attributes, one table for writing (const state) and reading: name,
// HDF5 type, the member and its length (0: a scalar).
template <class State>
auto numeric_header(State& s) {
  using Data = std::conditional_t<std::is_const_v<State>, const void*, void*>;
  struct Attr {
    const char* name;
    hid_t type;
    Data data;
    hsize_t n;
  };
  return std::array<Attr, 9>{{{"dimensions", H5T_NATIVE_INT, &s.dims, 0},
                              {"cells", H5T_NATIVE_INT, s.cells.data(), 3},
                              {"step", H5T_NATIVE_INT64, &s.step, 0},
                              {"time", H5T_NATIVE_DOUBLE, &s.time, 0},
                              {"dt", H5T_NATIVE_DOUBLE, &s.dt, 0},
                              {"residual", H5T_NATIVE_DOUBLE, &s.residual, 0},
                              {"anderson_depth", H5T_NATIVE_INT, &s.anderson_depth, 0},
                              {"ring_position", H5T_NATIVE_INT64, &s.ring_position, 0},
                              {"ranks", H5T_NATIVE_INT, &s.ranks, 0}}};
}

std::vector<hsize_t> file_dims(int dims, const std::array<int, 3>& v) {
  std::vector<hsize_t> out;
  for (int a = (dims == 2 ? 1 : 2); a >= 0; --a) out.push_back(static_cast<hsize_t>(v[a]));
  return out;
}

// Writes `bytes` (block `b`, x fastest) into dataset `d` (whole grid).
void write_block(hid_t d, hid_t type, const CheckpointState& s, const Block& b,
                 const unsigned char* bytes, const std::string& where) {
  if (b.size() == 0) return;
  h5::Dataspace fspace(H5Dget_space(d), "dataspace of " + where);
  const auto off = file_dims(s.dims, b.offset), cnt = file_dims(s.dims, b.count);
  h5::check(
      H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, off.data(), nullptr, cnt.data(), nullptr),
      "select block in " + where);
  const hsize_t n = b.size();
  h5::Dataspace mspace(H5Screate_simple(1, &n, nullptr), "memory dataspace");
  h5::check(H5Dwrite(d, type, mspace.get(), fspace.get(), H5P_DEFAULT, bytes), "write " + where);
}

void check_block_in_grid(const CheckpointState& s, const Block& b, const std::string& file) {
  for (int a = 0; a < 3; ++a)
    if (b.offset[a] < 0 || b.count[a] < 0 || b.offset[a] + b.count[a] > s.cells[a])
      bad_file(file, fmt::format("block offset ({},{},{}) count ({},{},{}) outside the grid "
                                 "{}x{}x{}",
                                 b.offset[0], b.offset[1], b.offset[2], b.count[0], b.count[1],
                                 b.count[2], s.cells[0], s.cells[1], s.cells[2]));
}

// Bytes the file of `s` takes on disk, about: the fields, the small datasets and the metadata.
std::uint64_t expected_bytes(const CheckpointState& s) {
  std::uint64_t cells = 1;
  for (int a = 0; a < 3; ++a) cells *= std::uint64_t(std::max(s.cells[a], 1));
  const std::uint64_t data = cells * value_size(s.precision) * s.fields.size() +
                             16 * s.residual_history.size() + 8 * s.series_steps.size() +
                             24 * s.blocks.size() + s.deck_hashed.size();
  return data + h5::metadata_margin(data) + 8192 * s.fields.size();
}

// The part of writing done on the one writing process. `fetch(r, field, buf)` supplies the
// bytes of rank r's block of field `field` (rank 0's own data or received).
template <typename Fetch>
void write_file(const std::string& path, const CheckpointState& s, Fetch&& fetch) {
  h5::silence_errors();
  const std::string tmp = path + ".tmp";
  {
    std::error_code ec;
    fs::create_directories(
        fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path(), ec);
  }
  struct RemoveOnFailure {  // declared before `file`: runs after it is closed
    const std::string& path;
    bool armed = true;
    ~RemoveOnFailure() {
      std::error_code ec;
      if (armed) fs::remove(path, ec);
    }
  } cleanup{tmp};
  const h5::PropList fapl = h5::file_access(h5::FileFormat::Checkpoint, tmp);
  h5::File file = h5::create_file(tmp, fapl.get(), "checkpoint");
  // The disk space of the whole file first: a full disk stops here, before HDF5 writes.
  h5::SpaceReserve reserve(file.get(), tmp);
  struct ReleaseOnFailure {  // declared after `file`: runs before it is closed
    h5::SpaceReserve& r;
    bool armed = true;
    ~ReleaseOnFailure() {
      if (armed) r.release();
    }
  } release_reserve{reserve};
  reserve.ensure(expected_bytes(s), "checkpoint");
  const hid_t root = file.get();
  put_string(root, "format", kFormatName, tmp);
  put_attr(root, "format_version", H5T_NATIVE_INT, &kCheckpointFormatVersion, 0, tmp);
  put_string(root, "problem", s.problem, tmp);
  put_string(root, "method", s.method, tmp);
  put_string(root, "precision", to_string(s.precision), tmp);
  put_string(root, "deck_hash", s.deck_hash, tmp);
  put_string(root, "deck_hashed", s.deck_hashed, tmp);
  for (const auto& a : numeric_header(s)) put_attr(root, a.name, a.type, a.data, a.n, tmp);
  if (!s.lineage.empty()) put_string(root, "lineage", s.lineage, tmp);
  if (s.has_diagnostics) {
    const DiagnosticsMark& m = s.diagnostics;
    put_attr(root, "diagnostics_rows", H5T_NATIVE_INT64, &m.rows, 0, tmp);
    put_attr(root, "diagnostics_step", H5T_NATIVE_INT64, &m.step, 0, tmp);
    put_attr(root, "diagnostics_bytes", H5T_NATIVE_UINT64, &m.bytes, 0, tmp);
    put_string(root, "diagnostics_digest", digest_hex(m.digest), tmp);
  }
  if (!std::isnan(s.heat_integral))
    put_attr(root, "heat_integral", H5T_NATIVE_DOUBLE, &s.heat_integral, 0, tmp);

  {  // the series manifest [n]
    const hsize_t n = s.series_steps.size();
    h5::Dataspace space(H5Screate_simple(1, &n, nullptr), "dataspace series_steps");
    const h5::PropList dcpl = h5::checksummed_dataset({n}, 8, "series_steps in " + tmp);
    h5::Dataset d(H5Dcreate2(root, "series_steps", H5T_NATIVE_INT64, space.get(), H5P_DEFAULT,
                             dcpl.get(), H5P_DEFAULT),
                  "create series_steps in " + tmp);
    if (n > 0)
      h5::check(
          H5Dwrite(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.series_steps.data()),
          "write series_steps in " + tmp);
  }
  {  // residual history [n][2]
    std::vector<double> hist;
    for (const auto& [st, r] : s.residual_history) {
      hist.push_back(static_cast<double>(st));
      hist.push_back(r);
    }
    const hsize_t dims[2] = {s.residual_history.size(), 2};
    h5::Dataspace space(H5Screate_simple(2, dims, nullptr), "dataspace residual_history");
    const h5::PropList dcpl =
        h5::checksummed_dataset({dims[0], dims[1]}, 8, "residual_history in " + tmp);
    h5::Dataset d(H5Dcreate2(root, "residual_history", H5T_NATIVE_DOUBLE, space.get(), H5P_DEFAULT,
                             dcpl.get(), H5P_DEFAULT),
                  "create residual_history in " + tmp);
    if (!hist.empty())
      h5::check(H5Dwrite(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, hist.data()),
                "write residual_history in " + tmp);
  }
  {  // decomposition
    h5::Group g(H5Gcreate2(root, "decomposition", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                "create group decomposition in " + tmp);
    std::vector<int> blocks;
    for (const Block& b : s.blocks)
      for (int v : {b.offset[0], b.offset[1], b.offset[2], b.count[0], b.count[1], b.count[2]})
        blocks.push_back(v);
    const hsize_t dims[2] = {s.blocks.size(), 6};
    h5::Dataspace space(H5Screate_simple(2, dims, nullptr), "dataspace blocks");
    const h5::PropList dcpl =
        h5::checksummed_dataset({dims[0], dims[1]}, 4, "decomposition/blocks in " + tmp);
    h5::Dataset d(H5Dcreate2(g.get(), "blocks", H5T_NATIVE_INT, space.get(), H5P_DEFAULT,
                             dcpl.get(), H5P_DEFAULT),
                  "create decomposition/blocks in " + tmp);
    h5::check(H5Dwrite(d.get(), H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, blocks.data()),
              "write decomposition/blocks in " + tmp);
  }
  h5::Group fields(H5Gcreate2(root, "fields", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                   "create group fields in " + tmp);
  const std::array<int, 3> cells = s.cells;
  const auto gdims = file_dims(s.dims, cells);
  const hid_t type = h5_type(s.precision);
  std::vector<unsigned char> buf;
  for (std::size_t fi = 0; fi < s.fields.size(); ++fi) {
    const std::string where = tmp + ":/fields/" + s.fields[fi].name;
    h5::Dataspace space(H5Screate_simple(static_cast<int>(gdims.size()), gdims.data(), nullptr),
                        "dataspace for " + where);
    const h5::PropList dcpl = h5::checksummed_dataset(gdims, value_size(s.precision), where);
    h5::Dataset d(H5Dcreate2(fields.get(), s.fields[fi].name.c_str(), type, space.get(),
                             H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                  "create " + where);
    for (int r = 0; r < s.ranks; ++r) {
      const Block& b = s.blocks[static_cast<std::size_t>(r)];
      check_block_in_grid(s, b, tmp);
      buf.resize(b.size() * value_size(s.precision));
      fetch(r, fi, buf);
      write_block(d.get(), type, s, b, buf.data(), where);
    }
  }
  fields.reset();
  release_reserve.armed = false;
  file.close("close " + tmp);
  reserve.release();
  publish_file(tmp, path);
  cleanup.armed = false;
}

// The lineage and series manifest a checkpoint of `state` records: the caller's, else this
// process's run (io/run_identity.hpp).
CheckpointState with_identity(const CheckpointState& state) {
  CheckpointState s = state;
  if (s.lineage.empty()) s.lineage = run_identity().lineage;
  if (!s.has_series_steps) {
    s.series_steps = series_steps_through(s.step);
    s.has_series_steps = true;
  }
  if (!s.has_diagnostics) {
    if (const auto mark = diagnostics_mark_through(s.step)) {
      s.diagnostics = *mark;
      s.has_diagnostics = true;
    }
  }
  return s;
}

void check_state(const CheckpointState& s) {
  for (const CheckpointField& f : s.fields)
    if (f.bytes.size() != s.block.size() * value_size(s.precision))
      throw std::logic_error(fmt::format("checkpoint field '{}': {} bytes for a block of {} cells",
                                         f.name, f.bytes.size(), s.block.size()));
}

}  // namespace

void write_checkpoint(const std::string& path, const CheckpointState& state) {
  check_state(state);
  CheckpointState s = with_identity(state);
  s.ranks = 1;
  s.blocks = {state.block};
  write_file(path, s, [&](int, std::size_t fi, std::vector<unsigned char>& buf) {
    std::memcpy(buf.data(), state.fields[fi].bytes.data(), buf.size());
  });
}

#ifdef HEATSOLVE_HAVE_MPI
void write_checkpoint(const std::string& path, const CheckpointState& state, MPI_Comm parent) {
  int rank = 0, size = 1;
  MPI_Comm_rank(parent, &rank);
  MPI_Comm_size(parent, &size);
  if (size == 1) return write_checkpoint(path, state);
  check_state(state);
  // A private communicator: the messages below cannot meet anyone else's.
  OwnedComm own;
  MPI_Comm_dup(parent, own.out());
  const MPI_Comm comm = own.get();
  constexpr int kTag = 0x434b;  // "CK"
  constexpr std::size_t kChunk = std::size_t(1) << 30;
  const auto transfer = [&](unsigned char* p, std::size_t n, int peer, bool send) {
    for (std::size_t done = 0; done < n; done += kChunk) {
      const int len = static_cast<int>(std::min(kChunk, n - done));
      if (send)
        MPI_Send(p + done, len, MPI_BYTE, peer, kTag, comm);
      else
        MPI_Recv(p + done, len, MPI_BYTE, peer, kTag, comm, MPI_STATUS_IGNORE);
    }
  };
  int mine[6] = {state.block.offset[0], state.block.offset[1], state.block.offset[2],
                 state.block.count[0],  state.block.count[1],  state.block.count[2]};
  std::vector<int> all(6 * static_cast<std::size_t>(size));
  MPI_Gather(mine, 6, MPI_INT, all.data(), 6, MPI_INT, 0, comm);
  std::string error;
  if (rank == 0) {
    CheckpointState s = with_identity(state);
    s.ranks = size;
    s.blocks.resize(static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) {
      const int* h = &all[6 * static_cast<std::size_t>(r)];
      s.blocks[r].offset = {h[0], h[1], h[2]};
      s.blocks[r].count = {h[3], h[4], h[5]};
    }
    // Rank 0 receives every block, in (field, rank) order, even after an error, so that no
    // sender stays blocked.
    std::size_t next_field = 0;
    int next_rank = 0;
    const auto fetch = [&](int r, std::size_t fi, std::vector<unsigned char>& buf) {
      if (r == 0)
        std::memcpy(buf.data(), state.fields[fi].bytes.data(), buf.size());
      else
        transfer(buf.data(), buf.size(), r, false);
      next_field = fi;
      next_rank = r + 1;
      if (next_rank == size) next_field = fi + 1, next_rank = 0;
    };
    try {
      write_file(path, s, fetch);
    } catch (const std::exception& e) {
      error = e.what();
      std::vector<unsigned char> buf;
      for (std::size_t fi = next_field; fi < s.fields.size(); ++fi)
        for (int r = (fi == next_field ? next_rank : 0); r < size; ++r) {
          if (r == 0) continue;
          buf.resize(s.blocks[r].size() * value_size(s.precision));
          transfer(buf.data(), buf.size(), r, false);
        }
    }
  } else {
    for (const CheckpointField& f : state.fields)
      transfer(const_cast<unsigned char*>(f.bytes.data()), f.bytes.size(), 0, true);
  }
  int len = static_cast<int>(error.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm);
  error.resize(static_cast<std::size_t>(len));
  if (len > 0) MPI_Bcast(error.data(), len, MPI_CHAR, 0, comm);
  if (!error.empty()) throw std::runtime_error(error);
}
#endif

namespace {

// Each dataset of the group /fields with the grid's file shape `gdims` (`bad(why)` otherwise,
// which throws): fn(name, "file:/fields/name", dataset, its dataspace).
template <class Bad, class Fn>
void for_each_field(hid_t fields, const std::string& path, const std::vector<hsize_t>& gdims,
                    Bad&& bad, Fn&& fn) {
  H5G_info_t info;
  h5::check(H5Gget_info(fields, &info), "list fields in " + path);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char name[256] = {0};
    if (H5Lget_name_by_idx(fields, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                           H5P_DEFAULT) < 0)
      h5::fail("list fields in " + path);
    const std::string where = path + ":/fields/" + name;
    h5::Dataset d(H5Dopen2(fields, name, H5P_DEFAULT), "open " + where);
    h5::Dataspace space(H5Dget_space(d.get()), "dataspace of " + where);
    std::vector<hsize_t> dims(gdims.size());
    if (H5Sget_simple_extent_ndims(space.get()) != static_cast<int>(gdims.size()) ||
        (H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), dims != gdims))
      bad(fmt::format("field '{}' does not have the grid's shape", name));
    fn(static_cast<const char*>(name), where, d.get(), space.get());
  }
}

CheckpointState read_impl(const std::string& path, const Block* block) {
  h5::silence_errors();
  if (!fs::exists(path)) throw std::runtime_error(fmt::format("checkpoint '{}' not found", path));
#if H5_VERSION_GE(1, 12, 0)
  const htri_t is_hdf5 = H5Fis_accessible(path.c_str(), H5P_DEFAULT);
#else
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
#endif
  if (is_hdf5 <= 0) bad_file(path, "not an HDF5 file");
  h5::File file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open " + path);
  const hid_t root = file.get();
  CheckpointState s;
  if (H5Aexists(root, "format") <= 0 || get_string(root, "format", path) != kFormatName)
    bad_file(path, "not a heatsolve checkpoint (no format = \"heatsolve-checkpoint\")");
  int version = 0;
  get_attr(root, "format_version", H5T_NATIVE_INT, &version, 0, path);
  if (version != kCheckpointFormatVersion)
    bad_file(path, fmt::format("format version {} is not supported (this heatsolve reads {})",
                               version, kCheckpointFormatVersion));
  s.problem = get_string(root, "problem", path);
  s.method = get_string(root, "method", path);
  const std::string precision = get_string(root, "precision", path);
  if (precision != "float" && precision != "double")
    bad_file(path, fmt::format("unknown precision '{}'", precision));
  s.precision = precision == "float" ? Precision::Float : Precision::Double;
  s.deck_hash = get_string(root, "deck_hash", path);
  s.deck_hashed = get_string(root, "deck_hashed", path);
  for (const auto& a : numeric_header(s)) get_attr(root, a.name, a.type, a.data, a.n, path);
  if ((s.dims != 2 && s.dims != 3) || s.cells[0] < 1 || s.cells[1] < 1 || s.cells[2] < 1 ||
      (s.dims == 2 && s.cells[2] != 1))
    bad_file(path, "invalid grid attributes");
  if (H5Aexists(root, "lineage") > 0) s.lineage = get_string(root, "lineage", path);
  if (H5Aexists(root, "diagnostics_digest") > 0) {
    DiagnosticsMark& m = s.diagnostics;
    get_attr(root, "diagnostics_rows", H5T_NATIVE_INT64, &m.rows, 0, path);
    get_attr(root, "diagnostics_step", H5T_NATIVE_INT64, &m.step, 0, path);
    get_attr(root, "diagnostics_bytes", H5T_NATIVE_UINT64, &m.bytes, 0, path);
    const auto digest = parse_digest_hex(get_string(root, "diagnostics_digest", path));
    if (!digest || m.rows < 0) bad_file(path, "malformed diagnostics_digest or diagnostics_rows");
    m.digest = *digest;
    s.has_diagnostics = true;
  }
  if (H5Aexists(root, "heat_integral") > 0)
    get_attr(root, "heat_integral", H5T_NATIVE_DOUBLE, &s.heat_integral, 0, path);
  if (H5Lexists(root, "series_steps", H5P_DEFAULT) > 0) {
    h5::Dataset d(H5Dopen2(root, "series_steps", H5P_DEFAULT), "open series_steps in " + path);
    h5::Dataspace space(H5Dget_space(d.get()), "dataspace");
    if (H5Sget_simple_extent_ndims(space.get()) != 1) bad_file(path, "series_steps is not 1-D");
    hsize_t n = 0;
    H5Sget_simple_extent_dims(space.get(), &n, nullptr);
    s.series_steps.resize(n);
    if (n > 0)
      h5::check(
          H5Dread(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.series_steps.data()),
          "read series_steps in " + path);
    s.has_series_steps = true;
  }

  // A 2-D dataset with `cols` columns: `sink(dataset, type, rows)` reads it.
  const auto read_2d = [&](const char* name, hid_t type, std::size_t cols, auto&& sink) {
    h5::Dataset d(H5Dopen2(root, name, H5P_DEFAULT), fmt::format("open {} in {}", name, path));
    h5::Dataspace space(H5Dget_space(d.get()), "dataspace");
    hsize_t dims[2] = {0, 0};
    if (H5Sget_simple_extent_ndims(space.get()) != 2)
      bad_file(path, fmt::format("{} is not 2-D", name));
    H5Sget_simple_extent_dims(space.get(), dims, nullptr);
    if (dims[1] != cols) bad_file(path, fmt::format("{} has {} columns", name, dims[1]));
    sink(d.get(), type, static_cast<std::size_t>(dims[0]));
  };
  read_2d("residual_history", H5T_NATIVE_DOUBLE, 2, [&](hid_t d, hid_t type, std::size_t n) {
    std::vector<double> v(2 * n);
    if (n > 0)
      h5::check(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), "read residual_history");
    for (std::size_t i = 0; i < n; ++i)
      s.residual_history.emplace_back(static_cast<std::int64_t>(v[2 * i]), v[2 * i + 1]);
  });
  read_2d("decomposition/blocks", H5T_NATIVE_INT, 6, [&](hid_t d, hid_t type, std::size_t n) {
    std::vector<int> v(6 * n);
    if (n > 0) h5::check(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), "read blocks");
    for (std::size_t i = 0; i < n; ++i) {
      Block b;
      b.offset = {v[6 * i], v[6 * i + 1], v[6 * i + 2]};
      b.count = {v[6 * i + 3], v[6 * i + 4], v[6 * i + 5]};
      s.blocks.push_back(b);
    }
  });
  if (!block) return s;

  check_block_in_grid(s, *block, path);
  s.block = *block;
  h5::Group fields(H5Gopen2(root, "fields", H5P_DEFAULT), "open group fields in " + path);
  const auto bad = [&](const std::string& why) { bad_file(path, why); };
  for_each_field(
      fields.get(), path, file_dims(s.dims, s.cells), bad,
      [&](const char* name, const std::string& where, hid_t d, hid_t fspace) {
        CheckpointField f;
        f.name = name;
        f.bytes.resize(block->size() * value_size(s.precision));
        if (block->size() > 0) {
          const auto off = file_dims(s.dims, block->offset), cnt = file_dims(s.dims, block->count);
          h5::check(
              H5Sselect_hyperslab(fspace, H5S_SELECT_SET, off.data(), nullptr, cnt.data(), nullptr),
              "select block in " + where);
          const hsize_t n = block->size();
          h5::Dataspace mspace(H5Screate_simple(1, &n, nullptr), "memory dataspace");
          h5::check(
              H5Dread(d, h5_type(s.precision), mspace.get(), fspace, H5P_DEFAULT, f.bytes.data()),
              "read " + where);
        }
        s.fields.push_back(std::move(f));
      });
  return s;
}

}  // namespace

CheckpointState read_checkpoint_header(const std::string& path) {
  return read_impl(path, nullptr);
}
CheckpointState read_checkpoint(const std::string& path, const Block& block) {
  return read_impl(path, &block);
}

void verify_checkpoint(const std::string& path, const CheckpointState& header) {
  const auto damaged = [&](const std::string& what) {
    throw CheckpointDamaged(fmt::format("checkpoint '{}' is damaged: {}", path, what));
  };
  try {
    h5::silence_errors();
    h5::File file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open " + path);
    const hid_t root = file.get();
    for (const char* name : {"residual_history", "decomposition/blocks", "series_steps"}) {
      if (H5Lexists(root, name, H5P_DEFAULT) <= 0 &&
          (std::strcmp(name, "series_steps") != 0 || header.has_series_steps))
        damaged(fmt::format("dataset '{}' is missing", name));
    }
    std::vector<std::string> need{"u"};
    if (header.anderson_depth > 0) {
      for (int j = 0; j <= header.anderson_depth; ++j) need.push_back(fmt::format("F{}", j));
      for (int j = 0; j < header.anderson_depth; ++j) need.push_back(fmt::format("G{}", j));
      need.push_back("g_prev");
    }
    if (H5Lexists(root, "fields", H5P_DEFAULT) <= 0) damaged("group '/fields' is missing");
    h5::Group fields(H5Gopen2(root, "fields", H5P_DEFAULT), "open group fields in " + path);
    for (const std::string& name : need)
      if (H5Lexists(fields.get(), name.c_str(), H5P_DEFAULT) <= 0)
        damaged(fmt::format("field '{}' is missing", name));
    const auto gdims = file_dims(header.dims, header.cells);
    const hid_t type = h5_type(header.precision);
    for_each_field(fields.get(), path, gdims, damaged,
                   [&](const char* name, const std::string& where, hid_t d, hid_t) {
                     h5::Datatype stored(H5Dget_type(d), "type of " + where);
                     if (H5Tget_class(stored.get()) != H5T_FLOAT ||
                         H5Tget_size(stored.get()) != value_size(header.precision))
                       damaged(fmt::format("field '{}' is not stored in {} precision", name,
                                           to_string(header.precision)));
                     h5::read_chunkwise(d, type, value_size(header.precision), gdims, where);
                   });
    for (const auto& [name, type, size] : {std::tuple{"residual_history", H5T_NATIVE_DOUBLE, 8},
                                           {"decomposition/blocks", H5T_NATIVE_INT, 4}}) {
      h5::Dataset d(H5Dopen2(root, name, H5P_DEFAULT), fmt::format("open {} in {}", name, path));
      h5::Dataspace space(H5Dget_space(d.get()), "dataspace");
      std::vector<hsize_t> dims(2);
      if (H5Sget_simple_extent_ndims(space.get()) != 2)
        damaged(fmt::format("'{}' is not 2-D", name));
      H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
      h5::read_chunkwise(d.get(), type, std::size_t(size), dims, path + ":/" + name);
    }
  } catch (const CheckpointDamaged&) {
    throw;
  } catch (const std::exception& e) {
    damaged(e.what());
  }
}

#else  // !HEATSOLVE_HAVE_HDF5

namespace {
[[noreturn]] void no_hdf5() {
  throw std::runtime_error("heatsolve was built without HDF5: checkpoints are unavailable");
}
}  // namespace
void write_checkpoint(const std::string&, const CheckpointState&) {
  no_hdf5();
}
#ifdef HEATSOLVE_HAVE_MPI
void write_checkpoint(const std::string&, const CheckpointState&, MPI_Comm) {
  no_hdf5();
}
#endif
CheckpointState read_checkpoint_header(const std::string&) {
  no_hdf5();
}
CheckpointState read_checkpoint(const std::string&, const Block&) {
  no_hdf5();
}
void verify_checkpoint(const std::string&, const CheckpointState&) {
  no_hdf5();
}

#endif  // HEATSOLVE_HAVE_HDF5

}  // namespace heatsolve
