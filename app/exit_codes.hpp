// Exit codes for batch users (documented in docs/batch.md). Stable: job scripts test them.
#pragma once

namespace heatsolve::exit_code {
constexpr int kSuccess = 0;
constexpr int kRuntimeError = 1;   // I/O failure, backend failure, blow-up, rank failure
constexpr int kInputError = 2;     // bad deck, bad command line, refused or busy output dir
constexpr int kNotConverged = 3;   // Poisson: max_iterations reached above tolerance
constexpr int kInternalError = 4;  // a bug in heatsolve: please report it
constexpr int kInterrupted = 75;   // stopped by signal/walltime after writing a checkpoint

// The table `heatsolve --help` ends with (the README's and docs/batch.md's, in short).
inline constexpr const char* kHelpTable =
    "Exit codes:\n"
    "  0   success\n"
    "  1   runtime failure: I/O, not enough memory, device, blow-up, another rank failed\n"
    "  2   bad input: deck (file:line:col), command line, an output directory holding results\n"
    "      or held by another run, a checkpoint that does not match the deck\n"
    "  3   Poisson: did not reach solver.tolerance within solver.max_iterations\n"
    "  4   internal error (a bug: please report it)\n"
    "  75  stopped by a signal or execution.walltime after writing a checkpoint:\n"
    "      continue with --restart latest";
}  // namespace heatsolve::exit_code
