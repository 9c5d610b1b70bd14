#include "solvers/registry.hpp"

#include <stdexcept>

#include "solvers/steady/anderson.hpp"
#include "solvers/steady/jacobi.hpp"
#include "solvers/steady/multigrid_solve.hpp"
#include "solvers/time/explicit_heat.hpp"
#include "solvers/time/implicit_heat.hpp"

namespace heatsolve {

namespace {

template <template <typename> class S>
SolverEntry entry(const char* name, bool (*matches)(const Config&)) {
  return {name, matches,
          [](Sweeper<float>& s) -> std::unique_ptr<Solver<float>> {
            return std::make_unique<S<float>>(s);
          },
          [](Sweeper<double>& s) -> std::unique_ptr<Solver<double>> {
            return std::make_unique<S<double>>(s);
          },
          &S<double>::footprint};
}

bool heat(const Config& c, TimeScheme scheme) {
  return c.problem == ProblemType::Heat && c.scheme == scheme;
}
bool poisson(const Config& c, SolverMethod method) {
  return c.problem == ProblemType::Poisson && c.method == method;
}

}  // namespace

const std::vector<SolverEntry>& solver_registry() {
  static const std::vector<SolverEntry> entries{
      entry<ExplicitHeat>("explicit heat",
                          [](const Config& c) { return heat(c, TimeScheme::Explicit); }),
      entry<ImplicitHeat>("implicit heat",
                          [](const Config& c) {
                            return c.problem == ProblemType::Heat &&
                                   c.scheme != TimeScheme::Explicit;
                          }),
      entry<Jacobi>("jacobi", [](const Config& c) { return poisson(c, SolverMethod::Jacobi); }),
      entry<Anderson>("anderson",
                      [](const Config& c) { return poisson(c, SolverMethod::Anderson); }),
      entry<MultigridSolve>("multigrid",
                            [](const Config& c) { return poisson(c, SolverMethod::Multigrid); }),
      entry<MultigridSolve>("mg-cg",
                            [](const Config& c) { return poisson(c, SolverMethod::MultigridCG); }),
  };
  return entries;
}

const SolverEntry& find_solver(const Config& cfg) {
  for (const SolverEntry& e : solver_registry())
    if (e.matches(cfg)) return e;
  throw std::logic_error("no solver for this deck's problem, scheme and method");
}

template <>
std::unique_ptr<Solver<float>> make_solver<float>(const Config& cfg, Sweeper<float>& sweeper) {
  return find_solver(cfg).make_float(sweeper);
}
template <>
std::unique_ptr<Solver<double>> make_solver<double>(const Config& cfg, Sweeper<double>& sweeper) {
  return find_solver(cfg).make_double(sweeper);
}

Footprint run_footprint(const Config& cfg, const GridDesc& local, bool decomposed) {
  Footprint fp;
  fp.add(2, "u, v");
  if (has_source_field(cfg)) fp.add(1, "f");
  const Footprint own = find_solver(cfg).footprint(cfg, local, decomposed);
  if (own.fields > 0) fp.add(own.fields, own.what);
  fp.host_bytes += own.host_bytes;
  fp.device_bytes += own.device_bytes;
  fp.device_what = own.device_what;
  const double padded = double(local.padded_size());
  const double value = cfg.precision == Precision::Float ? 4.0 : 8.0;
  // A source refilled on the host each step (Sweeper::set_inputs): the constant terms' sum,
  // a term's values, the sum (doubles) and the values in the run's precision.
  if (source_refilled_on_host(cfg)) fp.host_bytes += padded * (3 * 8.0 + value);
  // `initial: {type: file}`: the block as read (doubles) besides the output staging.
  if (cfg.initial.type == ShapeType::File) fp.host_bytes += padded * 8.0;
  return fp;
}

}  // namespace heatsolve
