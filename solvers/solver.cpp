#include "solvers/solver.hpp"

#include "solvers/registry.hpp"
#include "solvers/run/run_loop.hpp"

namespace heatsolve {

namespace {
template <typename T>
RunResult run(const Config& cfg, RunContext& ctx, std::vector<FieldWriter*> writers,
              std::vector<T>* final_field) {
  Sweeper<T> sweeper(cfg, ctx);
  const std::unique_ptr<Solver<T>> solver = make_solver<T>(cfg, sweeper);
  RunResult r = RunLoop<T>(cfg, ctx, sweeper, *solver, std::move(writers)).run();
  if (final_field) *final_field = sweeper.interior();
  return r;
}
}  // namespace

RunResult run_simulation(const Config& cfg, RunContext& ctx, std::vector<FieldWriter*> writers) {
  if (cfg.precision == Precision::Float) return run<float>(cfg, ctx, std::move(writers), nullptr);
  return run<double>(cfg, ctx, std::move(writers), nullptr);
}

BackendOptions backend_options_for(const Config& cfg) {
  BackendOptions o;
  o.kernel = cfg.kernel;
  o.block = cfg.block;
  o.time_block = cfg.time_block;
  return o;
}

template <typename T>
RunResult run_serial(const Config& cfg, std::vector<T>* final_field,
                     std::vector<FieldWriter*> writers) {
  RunContext ctx;
  ctx.domain = serial_domain(cfg.grid(), cfg.boundary);
  ctx.backend_options = backend_options_for(cfg);
  return run<T>(cfg, ctx, std::move(writers), final_field);
}

template RunResult run_serial<float>(const Config&, std::vector<float>*, std::vector<FieldWriter*>);
template RunResult run_serial<double>(const Config&, std::vector<double>*,
                                      std::vector<FieldWriter*>);

}  // namespace heatsolve
