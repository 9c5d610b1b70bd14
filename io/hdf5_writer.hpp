// HDF5 + XDMF time-series writer and the matching reader (the writer: io/hdf5_writer.cpp, its
// .xdmf text: io/xdmf_text.cpp; the readers: io/hdf5_reader.cpp).
//
// File format (one file per run, `<directory>/<name>.h5`):
//   /                       attributes: format = "heatsolve-timeseries", format_version = 1,
//                           dimensions (int, 2|3), cells[3] (int), origin[3], spacing[3]
//                           (double); the [3] arrays are in x,y,z order (2D: cells[2] = 1);
//                           lineage and deck_hash (strings, io/run_identity.hpp; absent in
//                           files of older versions and when the run set no identity);
//                           field ("temperature" | "solution": the datasets' name) and
//                           problem ("heat" | "poisson") (absent in files of older versions,
//                           which are heat series of "temperature").
//   /steps/<%08d step>/     one group per output step, attributes time (double), step (int64);
//                           a Poisson series: iteration (int64) instead of time
//       <field>             dataset [nz][ny][nx] (2D: [ny][nx]), x fastest, native float or
//                           double per Precision; attributes as on the group.
//   /cell_fields/<name>     constant cell fields (write_cell_fields(): a deck with materials
//                           writes `conductivity` and `heat_capacity`, rho cp), double, shaped
//                           and stored like a step's data; absent without them.
// The file uses the HDF5 1.8 format (checksummed metadata); every step's dataset is chunked
// and checksummed (Fletcher32), so that reading a damaged step fails instead of returning
// wrong values. Disk space for each step is reserved before it is written
// (io/hdf5_storage.hpp): a full disk ends the run with an error, the partial file holding
// every step written before.
// `<directory>/<name>.xdmf` (XDMF 3) describes the same steps as a temporal collection of
// 3DCoRectMesh/ORIGIN_DXDYDZ grids with the cell-centred attribute <field>, each step's Time
// the simulated time (a Poisson series: the iteration number, which ParaView's animation
// needs; a comment in the file says so), for
// ParaView/VisIt; every step's grid also lists the /cell_fields datasets. 2D grids are
// written as meshes one point thick in z (Dimensions "1 ny+1 nx+1"): ParaView maps a
// 2DCoRectMesh onto the y-z plane instead of x-y.
//
// Atomicity: during the run the data go to `<name>.h5.partial` (flushed after every step);
// finalize() closes it, renames it to `<name>.h5`, then writes `<name>.xdmf` via temp+rename.
// A crash leaves at most a `.partial` file; a previous run's final files stay intact until
// the rename. Every failure throws std::runtime_error naming the file and the operation.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#ifdef HEATSOLVE_HAVE_MPI
#include <mpi.h>
#endif

#include "io/field_writer.hpp"

namespace heatsolve {

// Serial writer: the one process writes the whole grid (write() still takes a Block, which
// must then cover the grid; the write path selects the block's hyperslab in the file).
// Creates `directory` if needed. Built without HDF5 it throws std::runtime_error.
// `compression` (output.compression) stores the step datasets chunked and filtered (see
// "Compression" below); the default stores them contiguous, as computed.
std::unique_ptr<FieldWriter> make_hdf5_writer(const std::string& directory, const std::string& name,
                                              const OutputGrid& grid, Precision precision,
                                              const Compression& compression = {});

#ifdef HEATSOLVE_HAVE_MPI
// Parallel writer over `comm` (collective: every rank constructs it, calls write() for every
// output step with its own block, and finalize()). With parallel HDF5
// (HEATSOLVE_HAVE_PARALLEL_HDF5) all ranks write their hyperslab collectively through MPI-IO;
// with serial HDF5 the blocks are sent to rank 0, which writes them one at a time (also forced
// by the environment variable HEATSOLVE_HDF5_GATHER=1). A 1-rank comm behaves as the serial
// writer. The blocks of all ranks must tile the grid.
std::unique_ptr<FieldWriter> make_hdf5_writer(const std::string& directory, const std::string& name,
                                              const OutputGrid& grid, Precision precision,
                                              MPI_Comm comm, const Compression& compression = {});
#endif

// ---- Compression (output.compression) ------------------------------------------------------
// `deflate`: HDF5's byte shuffle then deflate at the level, lossless. `zfp`: the ZFP filter in
// fixed-accuracy mode (io/hdf5_zfp.hpp), every stored value within the tolerance of the
// computed one. Both chunk the datasets (series_chunk()); both work with the collective
// (parallel HDF5 >= 1.10.2: every chunk is filtered whole by one rank, so the stored values do
// not depend on the decomposition) and the gathered writer. The file says what was done in
// root attributes: compression ("none" | "deflate" | "zfp"), compression_lossy (0 | 1),
// compression_level (deflate), compression_tolerance (zfp), compression_note (one line).

// Chunk shape (file order, slowest axis first) for a dataset of `shape`: the whole dataset up
// to 2^20 values, else the slowest axes cut in halves (multiples of 4, ZFP's block edge) until
// a chunk holds at most 2^20 values (8 MiB in double).
std::vector<unsigned long long> series_chunk(const std::vector<unsigned long long>& shape);

// True when this build can write (and read) `type`: deflate with HDF5, zfp with the ZFP library
// as well.
bool hdf5_compression_available(CompressionType type);

// What the steps of a finished series occupy: the values' bytes, and the bytes stored for them.
struct Hdf5StorageReport {
  int datasets = 0;
  std::uint64_t data_bytes = 0;    // values x bytes per value
  std::uint64_t stored_bytes = 0;  // after the filters (H5Dget_storage_size)
  double ratio() const { return stored_bytes > 0 ? double(data_bytes) / stored_bytes : 1.0; }
};
Hdf5StorageReport hdf5_storage_report(const std::string& path);

// One output step as listed in a file.
struct Hdf5StepInfo {
  std::int64_t step = 0;
  double time = 0;      // a steady (Poisson) series: the iteration
  std::string dataset;  // HDF5 path of the data, e.g. "/steps/00000010/temperature"
};

// One output step read back.
struct Hdf5StepData {
  std::int64_t step = 0;
  double time = 0;
  OutputGrid grid;                          // from the root attributes (problem included)
  Precision precision = Precision::Double;  // type stored in the file
  std::vector<std::size_t> shape;           // dataset shape as stored: {nz, ny, nx} or {ny, nx}
  std::vector<double> data;                 // x fastest; the whole grid, or the requested block
};

inline constexpr std::int64_t kLastStep = -1;

// The constant cell field `name` of the series at `path` (the whole grid, x fastest); throws
// std::runtime_error when the file has none of that name.
std::vector<double> read_hdf5_cell_field(const std::string& path, const std::string& name);

// The steps in `path` (a final `.h5` or a `.partial`), ordered by step number.
std::vector<Hdf5StepInfo> list_hdf5_steps(const std::string& path);

// Reads the step at position `index` of list_hdf5_steps() (negative counts from the end:
// kLastStep = -1 is the last one). With `block`, only that part of the grid is read (restart
// of a decomposed run); data then holds block->size() values. Throws std::runtime_error.
Hdf5StepData read_hdf5_step(const std::string& path, std::int64_t index = kLastStep,
                            const Block* block = nullptr);

// What a restart needs to know about a series before it continues it (the root attributes
// and the step numbers, taken from the groups' names: nothing of the steps is read).
struct Hdf5SeriesInfo {
  std::string format;              // "heatsolve-timeseries" for heatsolve's files
  std::string lineage, deck_hash;  // "" when absent
  OutputGrid grid;
  std::vector<std::int64_t> steps;  // ascending
};
// Throws std::runtime_error naming the file when it cannot be read.
Hdf5SeriesInfo read_hdf5_series_info(const std::string& path);

// Reads steps of one series by step number, keeping the file open between them.
class Hdf5SeriesReader {
 public:
  explicit Hdf5SeriesReader(const std::string& path);
  ~Hdf5SeriesReader();
  Hdf5SeriesReader(const Hdf5SeriesReader&) = delete;
  Hdf5SeriesReader& operator=(const Hdf5SeriesReader&) = delete;
  // The step `step` (block `block`, or the whole grid). Every chunk read is checked against
  // its checksum: a damaged step throws std::runtime_error naming the file and the step.
  Hdf5StepData read(std::int64_t step, const Block* block = nullptr);
  // Reads the step's attributes and every chunk of its data (in the stored type, one chunk at
  // a time) to check that it is intact; throws like read(). Returns the step's time.
  double verify(std::int64_t step);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace heatsolve
