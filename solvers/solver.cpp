#include "solvers/solver.hpp"

#include "solvers/simulation.hpp"

namespace heatsolve {

RunResult run_simulation(const Config& cfg, RunContext& ctx, std::vector<FieldWriter*> writers) {
  if (cfg.precision == Precision::Float) return Simulation<float>(cfg, ctx, writers).run();
  return Simulation<double>(cfg, ctx, writers).run();
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
  Simulation<T> sim(cfg, ctx, std::move(writers));
  RunResult r = sim.run();
  if (final_field) *final_field = sim.interior();
  return r;
}

template RunResult run_serial<float>(const Config&, std::vector<float>*, std::vector<FieldWriter*>);
template RunResult run_serial<double>(const Config&, std::vector<double>*,
                                      std::vector<FieldWriter*>);

}  // namespace heatsolve
