// What ties the files of a run together (docs/batch.md, "Which series a restart continues").
//
// A *lineage* is one computation from step 0 to its end, however many times it was stopped
// and restarted: a fresh run (no --restart, or --overwrite) starts a new one with a random
// id, a restarted run keeps the id of the checkpoint it continues. The id and the deck hash
// are written into the HDF5 series (`<name>.h5`, `.partial`) and into every checkpoint, so
// that a restart continues only a series of its own deck and lineage, never one of another
// deck or of the run that an --overwrite replaced.
//
// The *series manifest* lists the output steps the run's HDF5 series holds (the ones copied
// on restart and the ones written since, each recorded once it was flushed). Every
// checkpoint stores the steps up to its own: a restart must find exactly those steps, intact,
// in the series it continues.
//
// Both are process-wide (one run per process): run_command sets the identity before the
// writers and the solver start; the HDF5 writer and write_checkpoint() read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace heatsolve {

struct RunIdentity {
  std::string lineage;    // 32 hex digits; "" = none (unit tests, files of older versions)
  std::string deck_hash;  // checkpoint_deck_hash() of the deck; "" = none
};

void set_run_identity(const RunIdentity& identity);
const RunIdentity& run_identity();
// A new random lineage id (32 hex digits, from getrandom(2)).
std::string new_lineage_id();

// The series manifest of this process's run.
void record_series_step(std::int64_t step);
// Recorded steps <= `step`, ascending.
std::vector<std::int64_t> series_steps_through(std::int64_t step);
void clear_series_steps();

// Test-only fault injection for the e2e fault suite (tests/e2e/fault_*.sh):
// HEATSOLVE_TEST_FAULT="<point>@<step>:<signal>[,...]" raises the signal (KILL, TERM, USR1,
// INT, ABRT, SEGV) in this process when it reaches <point> at <step>. Points: `checkpoint`
// (right after checkpoint_latest names the checkpoint of that step), `series` (step's data
// written into the HDF5 series, not yet flushed: a kill in the middle of an output step),
// `diagnostics` (the row of that step written into diagnostics.csv.partial), and, in the
// child process that examines a restart's candidates (io/crash_isolation.hpp),
// `read-checkpoint` (the checkpoint of that step, its header read) and `read-series` (a series
// candidate for the checkpoint of that step): a crash of the HDF5 library there. Unset:
// nothing.
void fault_point(const char* point, std::int64_t step);

}  // namespace heatsolve
