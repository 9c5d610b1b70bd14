// Exit codes for batch users (documented in docs/batch.md). Stable: job scripts test them.
#pragma once

namespace heatsolve::exit_code {
constexpr int kSuccess = 0;
constexpr int kRuntimeError = 1;   // I/O failure, backend failure, blow-up, rank failure
constexpr int kInputError = 2;     // bad deck, bad command line, refused or busy output dir
constexpr int kNotConverged = 3;   // Poisson: max_iterations reached above tolerance
constexpr int kInternalError = 4;  // a bug in heatsolve: please report it
constexpr int kInterrupted = 75;   // stopped by signal/walltime after writing a checkpoint
}  // namespace heatsolve::exit_code
