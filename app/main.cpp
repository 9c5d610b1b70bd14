// heatsolve command line: run | validate | bench | info.
#include <fmt/format.h>
#include <omp.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "app/bench/bench_command.hpp"
#include "app/exit_codes.hpp"
#include "app/info.hpp"
#include "app/mpi_session.hpp"
#include "app/run_command.hpp"
#include "app/version.hpp"
#include "io/hdf5_storage.hpp"
#include "kernels/device.hpp"

namespace {

// Runs the command; the exit code.
int run_cli(int argc, char** argv, heatsolve::MpiSession& mpi);

}  // namespace

int main(int argc, char** argv) {
  using namespace heatsolve;
  // A closed pipe on stdout/stderr and a file past `ulimit -f` make writes fail with EPIPE /
  // EFBIG, which end the run with an error message, instead of killing it silently.
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGXFSZ, SIG_IGN);
  MpiSession mpi(argc, argv);  // first: MPI_Init_thread; MPI_Finalize when main returns
  const int rc = run_cli(argc, argv, mpi);
  if (hdf5_objects_leaked()) {
    // An HDF5 file could not be closed (an I/O error inside the library): its exit-time
    // clean-up would crash on it (io/hdf5_storage.hpp). The error was reported; leave now.
    std::fflush(nullptr);
    if (mpi.size() > 1) mpi.abort(rc);
    std::_Exit(rc);
  }
  return rc;
}

namespace {

// Prints one error line, whatever state stderr is in (it may be a closed pipe).
template <typename... Args>
void print_error(fmt::format_string<Args...> format, Args&&... args) noexcept {
  try {
    fmt::print(stderr, format, std::forward<Args>(args)...);
  } catch (...) {
  }
}

int run_cli(int argc, char** argv, heatsolve::MpiSession& mpi) {
  using namespace heatsolve;
  CLI::App app{"heatsolve: heat equation and Jacobi/Poisson solver on CPU and CUDA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version", [] { return version_report(); },
      "print version, commit, compiler, CUDA, MPI and HDF5 versions, and exit");
  app.footer(exit_code::kHelpTable);

  RunOptions run_opts;
  auto add_deck_options = [&run_opts](CLI::App* cmd) {
    cmd->add_option("deck", run_opts.deck, "YAML input deck")->required();
    cmd->add_option("--set", run_opts.overrides,
                    "override a deck key, e.g. --set grid.cells=[32,32,32] (repeatable)")
        ->type_name("KEY.PATH=VALUE")
        ->allow_extra_args(false);
  };
  CLI::App* run = app.add_subcommand("run", "run a deck");
  run->footer(exit_code::kHelpTable);
  add_deck_options(run);
  run->add_flag("--overwrite", run_opts.overwrite, "replace a previous run's results");
  run->add_flag("-q,--quiet", run_opts.quiet, "no progress output");
  run->add_option("--restart", run_opts.restart, "continue from a checkpoint file, or 'latest'");

  CLI::App* validate = app.add_subcommand("validate", "check a deck and exit (2 on errors)");
  validate->footer(exit_code::kHelpTable);
  add_deck_options(validate);
  validate->add_flag("-q,--quiet", run_opts.quiet, "print errors only");

  BenchOptions bench_opts;
  CLI::App* bench = app.add_subcommand(
      "bench", "benchmark the kernels on this machine's GPU (without one: the CPU backend)");
  add_bench_options(bench, bench_opts);

  CLI::App* info = app.add_subcommand("info", "show build features and devices");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = mpi.rank() == 0 ? app.exit(e) : e.get_exit_code();  // print once
    return rc == 0 ? exit_code::kSuccess : exit_code::kInputError;
  }

  try {
    if (*run) return run_command(run_opts);
    if (*validate) return validate_command(run_opts);
    if (*bench) {
      bench_opts.ranks = mpi.size();
      bench_opts.rank = mpi.rank();
      bench_opts.device = gpu_for_this_rank(device::count());
      return bench_command(bench_opts);
    }
    if (*info) return info_command();
  } catch (const std::bad_alloc&) {
    // A resource problem, not a bug: the memory preflight (app/preflight.hpp) let it through
    // (its estimate is a lower bound) or other processes took the memory meanwhile.
    const char* what = "out of memory (see 'Memory preflight' in docs/robustness.md)";
    if (mpi.size() > 1) abort_job(what, exit_code::kRuntimeError);
    print_error("error: {}\n", what);
    return exit_code::kRuntimeError;
  } catch (const std::logic_error& e) {
    // A broken invariant (std::logic_error and kin: out_of_range, invalid_argument, ...) is
    // a bug in heatsolve, never a problem with the input: exit 4, distinct from exit 1.
    if (mpi.size() > 1) abort_job_for(e);
    print_error("internal error: {} (please report this)\n", e.what());
    return exit_code::kInternalError;
  } catch (const std::exception& e) {
    // Under MPI a failure on one rank must end every rank (the others may be blocked in a
    // halo exchange or a reduction): name the rank and abort the job.
    if (mpi.size() > 1) abort_job_for(e);
    print_error("error: {}\n", e.what());
    return exit_code::kRuntimeError;
  } catch (...) {
    if (mpi.size() > 1)
      abort_job("unknown exception (please report this)", exit_code::kInternalError,
                "internal error");
    print_error("internal error: unknown exception (please report this)\n");
    return exit_code::kInternalError;
  }
  return exit_code::kSuccess;
}

}  // namespace
