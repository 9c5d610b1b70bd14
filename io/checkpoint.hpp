// Checkpoint files: everything a run needs to continue bitwise where it stopped.
//
// File format (`<output.directory>/checkpoint_<%08d step>.h5`, HDF5):
//   /  attributes
//     format = "heatsolve-checkpoint", format_version = kCheckpointFormatVersion (int)
//     problem ("heat" | "poisson"), method ("jacobi" | "anderson"; "" for heat)
//     precision ("float" | "double"): type of every field dataset
//     deck_hash (16 hex digits) and deck_hashed (the canonical JSON that was hashed),
//       see checkpoint_deck_json()
//     dimensions (int), cells[3] (int, x y z; 2D: cells[2] = 1)
//     step (int64: time steps or iterations done), time (double, simulated time; Poisson:
//       the iteration count), dt (double; heat), residual (double: the latest residual or
//       heat rate), anderson_depth (int, 0 unless Anderson), ring_position (int64: the ring
//       slot the next difference goes to, (step - 1) % depth; -1 before the first step)
//     ranks (int): MPI ranks of the writing run
//     lineage (32 hex digits): the run's lineage (io/run_identity.hpp); absent in checkpoints
//       of older versions
//     diagnostics_rows, diagnostics_step (int64), diagnostics_bytes (uint64),
//       diagnostics_digest (16 hex digits): how far diagnostics.csv had come at this step
//       (io/diagnostics_writer.hpp, DiagnosticsMark); absent when the run wrote no
//       diagnostics, and in checkpoints of older versions
//   /decomposition/blocks   int [ranks][6]: offset x y z, count x y z of every rank's block
//   /residual_history       double [n][2]: (step, residual) pairs recorded so far
//   /series_steps           int64 [n]: the output steps <= step that the run's HDF5 series
//                           holds (io/run_identity.hpp); absent in older checkpoints
//   /fields/<name>          [nz][ny][nx] (2D: [ny][nx]) interior cells, x fastest, in the
//                           run's precision: "u" (the solution), and for Anderson "F0".."F<m>"
//                           (difference ring + current f), "G0".."G<m-1>", "g_prev"
//
// Every dataset is chunked and checksummed (HDF5's Fletcher32 filter), and the file uses the
// HDF5 1.10 format, whose metadata carries checksums too: a damaged checkpoint fails to read
// (verify_checkpoint() reads all of it) instead of restarting from wrong values.
//
// Fields are stored on the global grid, so a checkpoint can be read back by any
// decomposition; each rank reads its own block. Writing under MPI gathers the blocks on
// rank 0, which writes the file (`<file>.tmp`, then rename): a reader never sees a partial
// checkpoint, and the previous checkpoints stay intact until the new one is complete.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#ifdef HEATSOLVE_HAVE_MPI
#include <mpi.h>
#endif

#include "io/config.hpp"
#include "io/diagnostics_writer.hpp"
#include "io/field_writer.hpp"

namespace heatsolve {

inline constexpr int kCheckpointFormatVersion = 1;
// How many checkpoint files a run keeps: the newest and the one before it.
inline constexpr int kCheckpointsKept = 2;

// A checkpoint that does not belong to this deck (input problem: exit code 2).
struct CheckpointMismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A checkpoint that cannot be read back intact: not a checkpoint, truncated, a checksum that
// does not match, a field missing. Also exit code 2; `--restart latest` then falls back to the
// checkpoint before it.
struct CheckpointDamaged : CheckpointMismatch {
  using CheckpointMismatch::CheckpointMismatch;
};

// One field of the local block, interior cells x fastest, raw values of the run's precision
// (block.size() * 4 or 8 bytes).
struct CheckpointField {
  std::string name;
  std::vector<unsigned char> bytes;
};

struct CheckpointState {
  // Identity: what the checkpoint can be restarted with.
  std::string problem, method;
  Precision precision = Precision::Double;
  std::string deck_hash, deck_hashed;
  // The run's lineage and the output steps <= step of its HDF5 series (io/run_identity.hpp).
  // Writing: left empty (and has_series_steps false), both are taken from the process's
  // run_identity() and series manifest. Reading: has_series_steps says the file had them.
  std::string lineage;
  bool has_series_steps = false;
  std::vector<std::int64_t> series_steps;
  // How far diagnostics.csv had come (io/diagnostics_writer.hpp). Writing: left unset
  // (has_diagnostics false), it is taken from the process's diagnostics writer
  // (diagnostics_mark_through(step); none: not recorded). Reading: has_diagnostics says the
  // file had it.
  bool has_diagnostics = false;
  DiagnosticsMark diagnostics;
  // The energy balance's time integral of inflow and source power so far (J; diagnostics.csv's
  // `balance`); NaN when the run keeps no balance.
  double heat_integral = std::numeric_limits<double>::quiet_NaN();
  int dims = 3;
  std::array<int, 3> cells{1, 1, 1};
  // Progress and solver state.
  std::int64_t step = 0;
  double time = 0, dt = 0, residual = 0;
  int anderson_depth = 0;
  std::int64_t ring_position = -1;
  std::vector<std::pair<std::int64_t, double>> residual_history;
  // Decomposition of the writing run (blocks of all ranks; on write only `block` is used,
  // the others are gathered).
  int ranks = 1;
  std::vector<Block> blocks;
  // This rank's part of the fields.
  Block block;
  std::vector<CheckpointField> fields;

  const CheckpointField* field(const std::string& name) const;
};

// The deck part that identifies a run: cfg.deck (the deck as given, after --set) without
//   output             (the whole section: directory, every, formats, overwrite,
//                      checkpoint_every only change what is written, not what is computed;
//                      but output.interval and output.diagnostics.interval stay: they choose
//                      dt, docs/deck.md "Output at fixed times")
//   execution          (the whole section: backend, kernel, block, time_block,
//                      decomposition, halo, overlap, walltime say how/where it runs;
//                      precision is compared on its own)
//   time.end, time.steps, solver.max_iterations   (a run may be extended)
// serialised canonically (keys sorted, no whitespace). Equal decks written differently
// (`1e-3` vs `0.001`, a default spelt out vs left out) hash differently.
std::string checkpoint_deck_json(const Config& cfg);
// FNV-1a 64 of checkpoint_deck_json(cfg), 16 hex digits.
std::string checkpoint_deck_hash(const Config& cfg);

// `<directory>/checkpoint_<%08d step>.h5` and `<directory>/checkpoint_latest`.
std::string checkpoint_path(const std::string& directory, std::int64_t step);
std::string checkpoint_latest_path(const std::string& directory);

// Writes `state` (this rank's block) to `path` atomically. Serial. Throws std::runtime_error.
void write_checkpoint(const std::string& path, const CheckpointState& state);
#ifdef HEATSOLVE_HAVE_MPI
// Collective over `comm`: every rank passes its block; rank 0 writes. Every rank throws if
// the write failed.
void write_checkpoint(const std::string& path, const CheckpointState& state, MPI_Comm comm);
#endif

// Updates `<directory>/checkpoint_latest` (atomically) to name `path`, then deletes the
// checkpoints older than the kCheckpointsKept newest up to `step` (later ones, left by a
// run that was restarted from further back, are kept). Call on one rank only.
void publish_checkpoint(const std::string& directory, const std::string& path, std::int64_t step);

// Reads the attributes, history and decomposition (no fields). Throws std::runtime_error
// naming the file and what is wrong (not a checkpoint, unsupported format version, ...).
CheckpointState read_checkpoint_header(const std::string& path);
// Reads everything, fields restricted to `block`.
CheckpointState read_checkpoint(const std::string& path, const Block& block);

// Reads every dataset of the checkpoint in full (each chunk's checksum is verified on the
// way) and checks that the fields a restart of `header` needs are there, in the grid's shape
// and the checkpoint's precision: "u", and for Anderson F0..F<m>, G0..G<m-1>, g_prev. Throws
// CheckpointDamaged naming the file and what is wrong.
void verify_checkpoint(const std::string& path, const CheckpointState& header);

// `--restart` argument -> checkpoint file: "latest" resolves through checkpoint_latest in
// `directory`. Throws CheckpointMismatch when there is nothing to restart from.
std::string resolve_restart_path(const std::string& arg, const std::string& directory);
// The checkpoints a restart may use, best first: for a file, just it; for "latest", the one
// checkpoint_latest names, then the older `checkpoint_<step>.h5` of `directory`, newest first
// (the fall-backs when it turns out to be damaged). Throws CheckpointMismatch when
// checkpoint_latest is missing or empty, or names a missing file with no older one.
std::vector<std::string> restart_candidates(const std::string& arg, const std::string& directory);

// Throws CheckpointMismatch saying what differs (deck keys, precision, grid, problem) when
// the checkpoint `header` cannot continue `cfg`.
void check_checkpoint_matches(const CheckpointState& header, const Config& cfg,
                              const std::string& path);

}  // namespace heatsolve
