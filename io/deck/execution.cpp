// Section reader for `execution`: backend, precision, kernel and block, decomposition, halo,
// walltime; checked against this build and (when known) this machine's GPU.
#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <optional>

#include "core/stencil_policies.hpp"
#include "io/deck/reader.hpp"

namespace heatsolve::deck_reader {

namespace {

// execution.backend: cuda where no CUDA device can be used is an input error on this machine
// (exit 2 at the key, before any output), not a failure of the run.
void check_cuda_device(const MapView& v, const Config& cfg, const DeckFeatures& features) {
  if (cfg.backend != BackendKind::Cuda || !features.cuda_device_problem) return;
  const std::string why = features.cuda_device_problem();
  if (!why.empty())
    fail(v.get("backend")->loc,
         fmt::format("execution.backend: cuda: {}; use backend: auto (the CPU when there is no "
                     "GPU) or cpu",
                     why));
}

// execution.kernel and execution.block against the CUDA shapes this build compiles
// (core/stencil_policies.hpp, the table the launchers instantiate): a named variant that has no
// shape for the deck's dimension and precision, or a block it does not compile, is a deck error
// here rather than a BackendError once the run has started. The CPU backend has one stencil
// (kernel and block do not apply); `auto` and `temporal` take the block where a variant compiles
// it and its default elsewhere. A variant the run's GPU cannot run (2.5d-tma below sm_90) is
// checked when `features` can name that GPU (heatsolve run), not by validate.
void check_stencil_choice(const MapView& v, const Config& cfg, const DeckFeatures& features) {
  if (cfg.backend == BackendKind::Cpu) return;
  const std::optional<StencilVariant> variant = parse_stencil_variant(cfg.kernel);
  if (!variant) return;
  const int bytes = cfg.precision == Precision::Float ? 4 : 8;
  const auto at = [&v](const char* key) { return v.get(key) ? v.key_loc(key) : v.loc(); };
  if (compiled_stencil_shapes(*variant, cfg.dimensions, bytes).empty())
    fail(at("kernel"),
         "execution.kernel: " + stencil_block_error(*variant, cfg.dimensions, bytes, cfg.block));
  if (!resolve_stencil_block(*variant, cfg.dimensions, bytes, cfg.block))
    fail(at("block"),
         "execution.block: " + stencil_block_error(*variant, cfg.dimensions, bytes, cfg.block));
  const int need = stencil_variant_row(*variant).min_compute_capability;
  if (need == 0 || !features.compute_capability) return;
  const int have = features.compute_capability();
  if (have > 0 && have < need)
    fail(at("kernel"),
         fmt::format("execution.kernel: '{}' needs a GPU of compute capability {}.{} or newer; "
                     "this run's GPU has {}.{} (kernel: auto picks among the variants it can run)",
                     cfg.kernel, need / 10, need % 10, have / 10, have % 10));
}

// execution.precision: mixed solves multigrid's correction equation in float: it needs a
// multigrid solve (a Poisson deck's multigrid or mg-cg, or implicit heat steps).
void check_mixed_precision(const MapView& v, const Config& cfg) {
  const bool implicit = cfg.problem == ProblemType::Heat && cfg.scheme != TimeScheme::Explicit;
  const bool multigrid =
      cfg.problem == ProblemType::Poisson &&
      (cfg.method == SolverMethod::Multigrid || cfg.method == SolverMethod::MultigridCG);
  if (implicit || multigrid) return;
  const std::string what = cfg.problem == ProblemType::Heat
                               ? "explicit heat steps"
                               : fmt::format("solver.method {}", to_string(cfg.method));
  fail(v.get("precision")->loc,
       fmt::format("execution.precision: mixed solves multigrid's correction equation in float: "
                   "it applies to solver.method multigrid or mg-cg (poisson) and to implicit heat "
                   "steps, not to {}; use float or double",
                   what));
}

}  // namespace

void read_execution(const DeckNode& n, Config& cfg, const DeckFeatures& features) {
  const MapView v(n, "execution",
                  {"backend", "precision", "kernel", "block", "time_block", "decomposition", "halo",
                   "overlap", "walltime"});
  const auto get = [&](const char* key, auto fallback, auto convert) {
    return v.optional(key, fallback, convert);
  };
  cfg.backend = get("backend", cfg.backend, [](const DeckNode& e, const std::string& w) {
    return choice(e, w, {BackendKind::Auto, BackendKind::Cpu, BackendKind::Cuda});
  });
  check_cuda_device(v, cfg, features);
  // mixed: double fields, the multigrid correction equation in float (Config::mixed_precision).
  const std::vector<std::string> precisions{"float", "double", "mixed"};
  const std::size_t precision =
      get("precision", std::size_t(1),
          [&](const DeckNode& e, const std::string& w) { return choice_index(e, w, precisions); });
  cfg.precision = precision == 0 ? Precision::Float : Precision::Double;
  cfg.mixed_precision = precision == 2;
  if (cfg.mixed_precision) check_mixed_precision(v, cfg);
  cfg.kernel = get("kernel", cfg.kernel, [](const DeckNode& e, const std::string& w) {
    return kKernelNames[choice_index(e, w, kKernelNames)];
  });
  const auto positive_ints = [](int dims) {
    return [dims](const DeckNode& e, const std::string& w) {
      return per_axis(e, w, dims, dims == 3 ? 0 : 1, positive_int);
    };
  };
  cfg.block = get("block", cfg.block, [&](const DeckNode& e, const std::string& w) {
    return auto_or(e, w, "a list of 3 positive integers", std::array<int, 3>{0, 0, 0},
                   [](const DeckNode& b, const std::string& bw) {
                     return per_axis(b, bw, 3, 0, positive_int);
                   });
  });
  cfg.time_block = get("time_block", cfg.time_block, [](const DeckNode& e, const std::string& w) {
    return auto_or(e, w, "a positive integer", 0, positive_int);
  });
  cfg.decomposition =
      get("decomposition", cfg.decomposition, [&](const DeckNode& e, const std::string& w) {
        return auto_or(e, w, "a list of positive integers", std::array<int, 3>{0, 0, 0},
                       positive_ints(cfg.dimensions));
      });
  cfg.halo = get("halo", cfg.halo, [](const DeckNode& e, const std::string& w) {
    return choice(e, w, {HaloMode::Auto, HaloMode::Staged, HaloMode::CudaAware, HaloMode::Ipc});
  });
  cfg.overlap = get("overlap", cfg.overlap, boolean);
  cfg.walltime_seconds = get("walltime", cfg.walltime_seconds, walltime);
  check_stencil_choice(v, cfg, features);
}

}  // namespace heatsolve::deck_reader
