#include "solvers/multigrid/setup.hpp"

#include <chrono>
#include <stdexcept>
#include <type_traits>

#include "core/stopwatch.hpp"
#include "kernels/device.hpp"
#include "solvers/multigrid/agglomeration.hpp"

namespace heatsolve {

namespace {

// A float backend of the sweeper's kind on its device, the float halo exchange of its block
// and the float agglomeration of its ranks (collective under MPI); empty unless the run is
// mixed (Config::mixed_precision, T = double).
template <typename T>
MixedParts mixed_parts(Sweeper<T>& sweeper) {
  MixedParts parts;
  const Config& cfg = sweeper.config();
  if (!std::is_same_v<T, double> || !cfg.mixed_precision) return parts;
  const RunContext& ctx = sweeper.context();
  BackendOptions options = ctx.backend_options;
  options.source = true;  // every sweep of the hierarchy has a right side
  const BackendKind kind =
      sweeper.backend().name() == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  parts.backend = make_backend<float>(kind, options);
  if (sweeper.exchange_hook()) {
    HaloExchanger<float>* exchanger = ctx.exchanger_f;
    if (!exchanger)
      throw std::logic_error("mixed precision on a decomposed grid needs a float halo exchanger");
    Backend<float>* backend = parts.backend.get();
    parts.exchange = [exchanger, backend](float* x) { exchanger->exchange(*backend, x); };
  }
  parts.agglomeration = plan_agglomeration<float>(ctx, cfg, parts.backend->device_memory());
  return parts;
}

}  // namespace

template <typename T>
std::unique_ptr<MultigridIteration<T>> make_multigrid_iteration(Sweeper<T>& sweeper,
                                                                const HelmholtzOperator<T>& op) {
  const Config& cfg = sweeper.config();
  const auto t0 = std::chrono::steady_clock::now();
  // The hierarchy's dozens of small arrays (levels of 128^3 cells and fewer, the gathered
  // levels) from a few device blocks, not a cudaMalloc each.
  const device::AllocationBatch batch;
  MixedParts mixed = mixed_parts(sweeper);
  std::unique_ptr<Agglomeration<T>> agglomeration;
  if (!mixed)
    agglomeration =
        plan_agglomeration<T>(sweeper.context(), cfg, sweeper.backend().device_memory());
  const double planning = seconds_since(t0);
  auto iteration = std::make_unique<MultigridIteration<T>>(
      op, cfg.multigrid, cfg.method, std::move(agglomeration), std::move(mixed));
  iteration->set_planning_seconds(planning);
  sweeper.backend().synchronize();
  return iteration;
}

template std::unique_ptr<MultigridIteration<float>> make_multigrid_iteration(
    Sweeper<float>&, const HelmholtzOperator<float>&);
template std::unique_ptr<MultigridIteration<double>> make_multigrid_iteration(
    Sweeper<double>&, const HelmholtzOperator<double>&);

}  // namespace heatsolve
