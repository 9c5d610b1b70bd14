#include "app/run_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "app/exit_codes.hpp"
#include "app/progress.hpp"
#include "app/summary.hpp"
#include "io/deck.hpp"
#ifdef HEATSOLVE_HAVE_HDF5
#include "io/hdf5_writer.hpp"
#endif

namespace fs = std::filesystem;

namespace heatsolve {

namespace {

// Refuses to clobber a previous run's results, then makes sure the directory is writable.
// Throws DeckError-free runtime errors; the caller maps them to exit codes.
struct OutputRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void prepare_output_directory(const Config& cfg, bool overwrite) {
  const fs::path dir(cfg.output_directory);
  const fs::path previous[] = {dir / "summary.json", dir / (cfg.name + ".h5"),
                               dir / (cfg.name + ".xdmf"), dir / (cfg.name + ".pvd")};
  if (!overwrite)
    for (const fs::path& p : previous)
      if (fs::exists(p))
        throw OutputRefused(fmt::format(
            "output directory '{}' already holds results of a previous run ({}); pass "
            "--overwrite or set output.overwrite: true to replace them, or choose another "
            "output.directory",
            dir.string(), p.filename().string()));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error(
        fmt::format("cannot create output directory '{}': {}", dir.string(), ec.message()));
  const fs::path probe = dir / fmt::format(".heatsolve-write-test.{}", ::getpid());
  {
    std::ofstream f(probe);
    if (!f)
      throw std::runtime_error(fmt::format("output directory '{}' is not writable", dir.string()));
  }
  fs::remove(probe, ec);
}

}  // namespace

int validate_command(const RunOptions& opts) {
  try {
    const Config cfg = load_deck(opts.deck, opts.overrides);
    if (!opts.quiet)
      fmt::print("{}: valid ({} {}D, {} cells{})\n", opts.deck, to_string(cfg.problem),
                 cfg.dimensions, cfg.grid().interior_size(),
                 cfg.problem == ProblemType::Heat
                     ? fmt::format(", {} steps of dt={:.6g}", cfg.steps, cfg.dt)
                     : std::string());
    return exit_code::kSuccess;
  } catch (const DeckError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return exit_code::kInputError;
  }
}

int run_command(const RunOptions& opts) {
  Config cfg;
  try {
    cfg = load_deck(opts.deck, opts.overrides);
  } catch (const DeckError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return exit_code::kInputError;
  }
  const bool overwrite = opts.overwrite || cfg.overwrite;
  try {
    prepare_output_directory(cfg, overwrite);
  } catch (const OutputRefused& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return exit_code::kInputError;
  }

  std::vector<std::unique_ptr<FieldWriter>> writers;
  for (const std::string& format : cfg.formats) {
    if (format == "hdf5") {
#ifdef HEATSOLVE_HAVE_HDF5
      writers.push_back(
          make_hdf5_writer(cfg.output_directory, cfg.name, output_grid(cfg), cfg.precision));
#else
      throw std::runtime_error(
          "output format 'hdf5' requested but heatsolve was built without HDF5");
#endif
    } else {
      throw std::runtime_error(
          fmt::format("output format '{}' is not available in this build", format));
    }
  }
  std::vector<FieldWriter*> writer_ptrs;
  for (auto& w : writers) writer_ptrs.push_back(w.get());

  RunContext ctx;
  ctx.domain = serial_domain(cfg.grid(), cfg.boundary);
  ctx.backend_options.kernel = cfg.kernel;
  ctx.backend_options.block = cfg.block;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  ProgressPrinter progress(cfg.problem == ProblemType::Heat, stderr, tty);
  if (!opts.quiet) ctx.on_progress = [&progress](const ProgressInfo& p) { progress(p); };

  if (!opts.quiet)
    fmt::print(stderr, "[heatsolve] {}: {} {}D, {} cells, {}\n", cfg.name, to_string(cfg.problem),
               cfg.dimensions, cfg.grid().interior_size(), to_string(cfg.precision));
  RunResult result = run_simulation(cfg, ctx, writer_ptrs);
  progress.finish();
  for (auto& w : writers) {
    w->finalize();
    for (const std::string& f : w->files()) result.files.push_back(f);
  }
  write_residual_history(cfg.output_directory, result);
  write_summary(cfg.output_directory, make_summary(cfg, result, 1));
  if (!opts.quiet)
    fmt::print(stderr,
               "[heatsolve] done: {} {} on {} ({}), kernel {}, {:.3f} s, {:.3g} Mpoints/s, "
               "final residual {:.3e}\n",
               result.steps, cfg.problem == ProblemType::Heat ? "steps" : "iterations",
               result.backend, result.backend_description, result.kernel, result.wall_seconds,
               result.points_per_second * 1e-6, result.final_residual);
  if (cfg.problem == ProblemType::Poisson && !result.converged) {
    fmt::print(stderr,
               "warning: did not converge to tolerance {:.3e} in {} iterations (residual {:.3e})\n",
               cfg.tolerance, result.steps, result.final_residual);
    return exit_code::kNotConverged;
  }
  return exit_code::kSuccess;
}

}  // namespace heatsolve
