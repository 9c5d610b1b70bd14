#include "solvers/multigrid/mixed_plan.hpp"

#include <stdexcept>
#include <type_traits>

#include "solvers/multigrid/agglomeration.hpp"

namespace heatsolve {

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

template MixedParts mixed_parts<float>(Sweeper<float>&);
template MixedParts mixed_parts<double>(Sweeper<double>&);

}  // namespace heatsolve
