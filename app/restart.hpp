// The state an output directory carries from one run to the next (docs/batch.md,
// "Restarting"; docs/robustness.md): which checkpoint and which series a restart continues,
// what a fresh start removes, stale temporaries, planted symbolic links. Every function here
// runs on rank 0 only, while it holds the directory's lock (io/run_lock.hpp), except
// copy_series (every rank, its own block).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/checkpoint.hpp"
#include "io/config.hpp"
#include "io/diagnostics_writer.hpp"
#include "io/field_writer.hpp"

namespace heatsolve {

// The output directory cannot be used as asked (exit 2): it holds a previous run's results,
// a run that can still be continued, a symbolic link where heatsolve writes, or is held.
struct OutputRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// No series in the directory holds the steps a checkpoint needs, intact (exit 2, like a
// damaged checkpoint; `--restart latest` falls back to an older checkpoint).
struct SeriesDamaged : CheckpointMismatch {
  using CheckpointMismatch::CheckpointMismatch;
};

struct RestartPlan {
  std::string checkpoint;  // the checkpoint to continue ("" = fresh start)
  std::int64_t step = 0;   // the step or iteration it holds
  std::string lineage;     // its lineage (io/run_identity.hpp; a new one for older files)
  // The series to copy `series_steps` from (every output step up to `step` of the lineage);
  // "" when there is nothing to copy (no HDF5 output). A `<name>.h5.restart-source`, moved
  // there from `.partial` when that was the source, is deleted when the run has published
  // its own series (finish_restart).
  std::string series_source;
  std::vector<std::int64_t> series_steps;
  // diagnostics.csv (output.diagnostics; io/diagnostics_writer.hpp): the file and bytes the
  // restarted run's diagnostics.csv starts with (rank 0). No source: a new file.
  DiagnosticsResume diagnostics;
};

// Resolves `--restart <arg>` and checks everything a restart needs before any file is
// written: the checkpoint matches the deck (CheckpointMismatch), reads back intact
// (verify_checkpoint: every checksum), and, unless `check_only` or the deck writes no HDF5,
// a series of the same deck and lineage holds every output step up to it, intact: the
// newest consistent one of `<name>.h5.partial` (a killed run's), `<name>.h5.restart-source`
// (a killed restart's source) and `<name>.h5` (a finished or stopped run's). With `latest`,
// a damaged checkpoint or one whose series is damaged is skipped for the checkpoint before
// it, with a warning on stderr; the last reason is thrown when none is left. A directory
// holding none of the three (a checkpoint continued elsewhere) starts its series at the
// checkpoint, with a warning. A `.partial` chosen as the source is moved to
// `.restart-source` (the new run writes `.partial`). The same for diagnostics.csv (a deck
// with output.diagnostics whose checkpoint recorded it): choose_diagnostics_source, whose
// failure is a SeriesDamaged.
RestartPlan plan_restart(const std::string& arg, const Config& cfg, bool check_only = false);

// Copies the plan's series steps (this rank's block) into `writers`: the restarted run's
// series starts with exactly the steps its lineage had written up to the checkpoint.
void copy_series(const RestartPlan& plan, const Config& cfg, const Block& block,
                 const std::vector<FieldWriter*>& writers);

// After the restarted run published its own series (finished, or stopped with exit 75):
// removes `<name>.h5.restart-source` and `diagnostics.csv.restart-source`.
void finish_restart(const Config& cfg);

// A run that does not restart starts a new lineage: refuses (OutputRefused) a directory
// holding a run that can be continued (checkpoint_latest) unless `overwrite`, then removes
// the previous lineage's checkpoints, checkpoint_latest and the `.restart-source` files, so
// that a later `--restart latest` can only continue this run.
void start_fresh(const Config& cfg, bool overwrite);

// Refuses (OutputRefused) a symbolic link at a name heatsolve creates in the directory
// (`<name>.h5.partial`, `<name>.h5.restart-source`, `diagnostics.csv.partial` and
// `.restart-source`, `<name>_vti`, temporaries): heatsolve
// never writes through one. (The lock file is checked by RunLock, final names are replaced
// by rename(2), which never follows a link.)
void refuse_planted_links(const Config& cfg);

// Removes the temporaries that a killed run left (`*.tmp.<pid>` of heatsolve's files,
// `checkpoint_<step>.h5.tmp`, the Catalyst scripts' `.<extract>.tmp<pid>.<ext>`): the
// directory's lock guarantees that no other run is writing them.
void remove_stale_temporaries(const Config& cfg);

}  // namespace heatsolve
