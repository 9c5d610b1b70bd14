// Graceful stop for batch jobs: SIGTERM, SIGINT and SIGUSR1 (Slurm `--signal=USR1@...`) set
// a flag that the engine polls once per step; it then finishes the step, writes a
// checkpoint, finalizes the outputs and the run exits with exit_code::kInterrupted (75).
// A second SIGINT/SIGTERM while the first is being handled terminates at once (default
// action), so an impatient Ctrl-C still works.
#pragma once

#include <chrono>
#include <csignal>

namespace heatsolve {

// Installs the handlers (sigaction, SA_RESTART). Idempotent.
void install_stop_handlers();
// Restores the handlers that were installed before install_stop_handlers().
void restore_stop_handlers();
// The flag the handlers set: 0, or the number of the first stop signal received. Async-
// signal-safe to read and write; what RunContext::stop_flag points at.
const volatile std::sig_atomic_t* stop_flag();
// "SIGTERM", "SIGINT", "SIGUSR1", or "signal N".
const char* signal_name(int signo);
// Clears the flag (tests).
void reset_stop_flag();
// When the kernel created this process (before the dynamic loader, main and MPI_Init; under
// `exec heatsolve` the job script's own start): the origin of execution.walltime, which the
// batch system counts from the job's start.
std::chrono::steady_clock::time_point process_start_time();

}  // namespace heatsolve
