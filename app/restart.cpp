#include "app/restart.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>

#include "io/crash_isolation.hpp"
#include "io/run_identity.hpp"
#ifdef HEATSOLVE_HAVE_HDF5
#include "io/hdf5_writer.hpp"
#endif

namespace fs = std::filesystem;

namespace heatsolve {

namespace {

bool writes_hdf5(const Config& cfg) {
  return std::find(cfg.formats.begin(), cfg.formats.end(), "hdf5") != cfg.formats.end();
}

// Present under this name (a dangling link too).
bool present(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

std::string step_list(const std::vector<std::int64_t>& steps) {
  std::string out;
  for (std::size_t i = 0; i < steps.size() && i < 8; ++i)
    out += (i ? ", " : "") + std::to_string(steps[i]);
  if (steps.size() > 8) out += fmt::format(", ... ({} in all)", steps.size());
  return out;
}

struct SeriesChoice {
  std::string source;  // "" = nothing to copy
  std::vector<std::int64_t> steps;
};

// The series that continues checkpoint `header` (see plan_restart): throws SeriesDamaged
// saying why each candidate was passed over.
SeriesChoice choose_series(const Config& cfg, const CheckpointState& header,
                           const std::string& checkpoint) {
  SeriesChoice choice;
  if (!writes_hdf5(cfg)) return choice;
  if (header.has_series_steps && header.series_steps.empty()) return choice;  // none written
#ifdef HEATSOLVE_HAVE_HDF5
  const fs::path dir(cfg.output_directory);
  const fs::path candidates[] = {dir / (cfg.name + ".h5.partial"),
                                 dir / (cfg.name + ".h5.restart-source"), dir / (cfg.name + ".h5")};
  const GridDesc g = cfg.grid();
  std::vector<std::string> notes;
  SeriesChoice legacy_best;  // checkpoints of older versions: the candidate with most steps
  // One candidate: the steps to copy from it, or nothing with *note saying why not; throws
  // on a read error (`verify`: also each step's checksums).
  const auto examine = [&](const fs::path& path, bool verify,
                           std::string* note) -> std::optional<std::vector<std::int64_t>> {
    const std::string name = path.filename().string();
    const Hdf5SeriesInfo info = read_hdf5_series_info(path.string());
    if (info.format != "heatsolve-timeseries") {
      *note = name + " is not a heatsolve series";
      return std::nullopt;
    }
    if (info.grid.dims != cfg.dimensions || info.grid.cells[0] != g.nx ||
        info.grid.cells[1] != g.ny || info.grid.cells[2] != (cfg.dimensions == 3 ? g.nz : 1)) {
      *note = name + " is of another grid";
      return std::nullopt;
    }
    if (info.lineage != header.lineage || info.deck_hash != header.deck_hash) {
      *note = fmt::format("{} belongs to another run ({})", name,
                          info.deck_hash != header.deck_hash
                              ? "another deck"
                              : "another lineage: a fresh start or --overwrite");
      return std::nullopt;
    }
    std::vector<std::int64_t> steps;
    if (header.has_series_steps) {
      steps = header.series_steps;
      std::vector<std::int64_t> missing;
      std::set_difference(steps.begin(), steps.end(), info.steps.begin(), info.steps.end(),
                          std::back_inserter(missing));
      if (!missing.empty()) {
        *note = fmt::format("{} lacks step{} {}", name, missing.size() > 1 ? "s" : "",
                            step_list(missing));
        return std::nullopt;
      }
    } else {
      for (std::int64_t s : info.steps)
        if (s <= header.step) steps.push_back(s);
    }
    if (verify) {
      Hdf5SeriesReader reader(path.string());
      for (std::int64_t s : steps) reader.verify(s);
    }
    return steps;
  };
  for (const fs::path& path : candidates) {
    if (!present(path)) continue;
    // First in a child process: a damaged file (a run killed mid-write) may crash HDF5
    // rather than fail a read. Examined there in full, it needs no second verification here.
    const ChildResult probe = run_in_child([&] {
      fault_point("read-series", header.step);
      std::string note;
      examine(path, true, &note);
    });
    if (probe.end == ChildEnd::Crashed) {
      const std::string why = fmt::format("reading {} crashed the HDF5 library (signal {})",
                                          path.filename().string(), probe.signal);
      fmt::print(stderr, "warning: {}: passed over as damaged\n", why);
      notes.push_back(why);
      continue;
    }
    try {
      std::string note;
      const auto steps = examine(path, probe.end != ChildEnd::Finished, &note);
      if (!steps) {
        notes.push_back(note);
        continue;
      }
      if (header.has_series_steps) return {path.string(), *steps};
      if (steps->size() > legacy_best.steps.size()) legacy_best = {path.string(), *steps};
    } catch (const std::exception& e) {
      notes.push_back(e.what());
    }
  }
  if (!header.has_series_steps) return legacy_best;
  if (notes.empty()) {
    // No series of any run here (a checkpoint continued in another directory): the new series
    // starts at the checkpoint, as it does without HDF5 output.
    fmt::print(stderr,
               "warning: '{}' holds no series ({}.h5, .h5.partial or .h5.restart-source): the "
               "restarted run's series starts after step {} of checkpoint '{}'\n",
               cfg.output_directory, cfg.name, header.step, checkpoint);
    return choice;
  }
  std::string why;
  for (const std::string& n : notes) why += "; " + n;
  throw SeriesDamaged(fmt::format(
      "cannot continue the series of checkpoint '{}': no series in '{}' holds its {} output "
      "step{} ({}) intact{}",
      checkpoint, cfg.output_directory, header.series_steps.size(),
      header.series_steps.size() > 1 ? "s" : "", step_list(header.series_steps), why));
#else
  (void)header, (void)checkpoint;
  return choice;
#endif
}

// One candidate checkpoint: throws CheckpointDamaged or SeriesDamaged when it cannot be used
// (the caller may try an older one), CheckpointMismatch when it does not belong to the deck.
RestartPlan plan_from(const std::string& path, const Config& cfg, bool check_only) {
  // First in a child process, as the series candidates: a damaged checkpoint may crash HDF5
  // rather than fail a read. Read and verified there in full, it is not verified again here.
  const ChildResult probe = run_in_child([&] {
    const CheckpointState h = read_checkpoint_header(path);
    fault_point("read-checkpoint", h.step);
    verify_checkpoint(path, h);
  });
  if (probe.end == ChildEnd::Crashed)
    throw CheckpointDamaged(
        fmt::format("checkpoint '{}' is damaged: reading it crashed the HDF5 library (signal {})",
                    path, probe.signal));
  CheckpointState header;
  try {
    header = read_checkpoint_header(path);
  } catch (const std::exception& e) {
    // Unreadable, truncated, not a checkpoint: an input problem. Named in the message.
    const std::string what = e.what();
    throw CheckpointDamaged(what.find("'" + path + "'") != std::string::npos
                                ? what
                                : fmt::format("checkpoint '{}' is damaged: {}", path, what));
  }
  check_checkpoint_matches(header, cfg, path);
  if (cfg.problem == ProblemType::Poisson && header.step > cfg.max_iterations)
    throw CheckpointMismatch(
        fmt::format("checkpoint '{}' is at iteration {}, beyond solver.max_iterations = {}", path,
                    header.step, cfg.max_iterations));
  if (cfg.problem == ProblemType::Heat && header.dt == cfg.dt && header.step > cfg.steps)
    throw CheckpointMismatch(fmt::format(
        "checkpoint '{}' is at step {}, beyond the deck's {} steps", path, header.step, cfg.steps));
  if (cfg.problem == ProblemType::Heat && header.time > cfg.end_time * (1 + 1e-12))
    throw CheckpointMismatch(fmt::format("checkpoint '{}' is at t = {:g}, beyond time.end = {:g}",
                                         path, header.time, cfg.end_time));
  if (probe.end != ChildEnd::Finished) verify_checkpoint(path, header);
  RestartPlan plan;
  plan.checkpoint = path;
  plan.step = header.step;
  plan.lineage = header.lineage.empty() ? new_lineage_id() : header.lineage;
  if (check_only) return plan;
  const SeriesChoice series = choose_series(cfg, header, path);
  plan.series_source = series.source;
  plan.series_steps = series.steps;
  if (cfg.diagnostics.enabled() && header.has_diagnostics) {
    try {
      std::string warning;
      plan.diagnostics = choose_diagnostics_source(cfg.output_directory, diagnostics_columns(cfg),
                                                   header.diagnostics, &warning);
      if (!warning.empty()) fmt::print(stderr, "warning: {}\n", warning);
    } catch (const DiagnosticsSourceError& e) {
      throw SeriesDamaged(fmt::format("checkpoint '{}': {}", path, e.what()));
    }
  }
  return plan;
}

}  // namespace

RestartPlan plan_restart(const std::string& arg, const Config& cfg, bool check_only) {
  const std::vector<std::string> candidates = restart_candidates(arg, cfg.output_directory);
  for (std::size_t i = 0;; ++i) {
    try {
      RestartPlan plan = plan_from(candidates[i], cfg, check_only);
      // The new writer creates `.partial` afresh: a source of that name moves aside first.
      const fs::path dir(cfg.output_directory);
      const fs::path partial = dir / (cfg.name + ".h5.partial");
      if (!plan.series_source.empty() && fs::path(plan.series_source) == partial) {
        const fs::path moved = dir / (cfg.name + ".h5.restart-source");
        fs::rename(partial, moved);
        plan.series_source = moved.string();
      }
      return plan;
    } catch (const CheckpointDamaged& e) {
      if (i + 1 == candidates.size()) throw;
      fmt::print(stderr, "warning: {}; falling back to the checkpoint before it, '{}'\n", e.what(),
                 candidates[i + 1]);
    } catch (const SeriesDamaged& e) {
      if (i + 1 == candidates.size()) throw;
      fmt::print(stderr, "warning: {}; falling back to the checkpoint before it, '{}'\n", e.what(),
                 candidates[i + 1]);
    }
  }
}

void copy_series(const RestartPlan& plan, const Config& cfg, const Block& block,
                 const std::vector<FieldWriter*>& writers) {
  if (plan.series_source.empty() || plan.series_steps.empty()) return;
#ifdef HEATSOLVE_HAVE_HDF5
  Hdf5SeriesReader reader(plan.series_source);
  for (const std::int64_t step : plan.series_steps) {
    const Hdf5StepData d = reader.read(step, &block);
    if (cfg.precision == Precision::Float) {
      const std::vector<float> v(d.data.begin(), d.data.end());  // exact: stored as float
      for (FieldWriter* w : writers) w->write(d.step, d.time, v.data(), block);
    } else {
      for (FieldWriter* w : writers) w->write(d.step, d.time, d.data.data(), block);
    }
  }
#else
  (void)cfg, (void)block, (void)writers;
#endif
}

void finish_restart(const Config& cfg) {
  std::error_code ec;
  fs::remove(fs::path(cfg.output_directory) / (cfg.name + ".h5.restart-source"), ec);
  fs::remove(fs::path(cfg.output_directory) / (std::string(kDiagnosticsFile) + ".restart-source"),
             ec);
}

void start_fresh(const Config& cfg, bool overwrite) {
  const fs::path dir(cfg.output_directory);
  const fs::path latest = checkpoint_latest_path(cfg.output_directory);
  if (!overwrite && present(latest))
    throw OutputRefused(fmt::format(
        "output directory '{}' holds a run that can be continued ({}): continue it with "
        "--restart latest, or pass --overwrite to start over (its checkpoints and partial "
        "series are then deleted)",
        dir.string(), latest.filename().string()));
  static const std::regex checkpoint_re("checkpoint_[0-9]{8,}\\.h5");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, checkpoint_re)) fs::remove(entry.path(), ec);
  }
  fs::remove(latest, ec);
  fs::remove(dir / (cfg.name + ".h5.restart-source"), ec);
  fs::remove(dir / (std::string(kDiagnosticsFile) + ".restart-source"), ec);
}

namespace {

// Names of temporaries heatsolve (and the shipped Catalyst scripts) create in the directory
// and in `<name>_vti/`.
bool is_temporary(const std::string& file, const Config& cfg, bool in_vti) {
  static const std::regex pid_suffix(".*\\.tmp\\.[0-9]+");
  static const std::regex checkpoint_tmp("checkpoint_[0-9]{8,}\\.h5\\.tmp");
  static const std::regex extract_tmp("\\..+\\.tmp[0-9]+\\.[A-Za-z0-9]+");
  if (in_vti) return file.rfind(cfg.name + "_", 0) == 0 && std::regex_match(file, pid_suffix);
  if (std::regex_match(file, checkpoint_tmp) || std::regex_match(file, extract_tmp)) return true;
  if (file.rfind(".heatsolve-write-test.", 0) == 0) return true;
  if (!std::regex_match(file, pid_suffix)) return false;
  const std::string base = file.substr(0, file.rfind(".tmp."));
  return base == "summary.json" || base == "residuals.csv" || base == kDiagnosticsFile ||
         base == "checkpoint_latest" || base == cfg.name + ".xdmf" || base == cfg.name + ".pvd";
}

template <typename Fn>
void for_each_temporary(const Config& cfg, Fn&& fn) {
  const fs::path dir(cfg.output_directory);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (is_temporary(entry.path().filename().string(), cfg, false)) fn(entry.path());
  const fs::path vti = dir / (cfg.name + "_vti");
  if (fs::is_symlink(vti, ec)) return;
  for (const auto& entry : fs::directory_iterator(vti, ec))
    if (is_temporary(entry.path().filename().string(), cfg, true)) fn(entry.path());
}

}  // namespace

void refuse_planted_links(const Config& cfg) {
  const fs::path dir(cfg.output_directory);
  const std::string diagnostics = kDiagnosticsFile;
  std::vector<fs::path> names{dir / (cfg.name + ".h5.partial"),
                              dir / (cfg.name + ".h5.restart-source"),
                              dir / (diagnostics + ".partial"),
                              dir / (diagnostics + ".restart-source"), dir / (cfg.name + "_vti")};
  for_each_temporary(cfg, [&](const fs::path& p) { names.push_back(p); });
  for (const fs::path& p : names) {
    std::error_code ec;
    if (fs::is_symlink(p, ec))
      throw OutputRefused(fmt::format(
          "'{}' is a symbolic link, at a name heatsolve writes: it never writes through one "
          "(remove it, or choose another output.directory)",
          p.string()));
  }
}

void remove_stale_temporaries(const Config& cfg) {
  for_each_temporary(cfg, [](const fs::path& p) {
    std::error_code ec;
    fs::remove(p, ec);
  });
}

}  // namespace heatsolve
