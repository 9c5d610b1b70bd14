#include "solvers/steady/multigrid_solve.hpp"

#include <fmt/format.h>

#include <chrono>
#include <type_traits>
#include <utility>

#include "core/stopwatch.hpp"
#include "solvers/multigrid/setup.hpp"

namespace heatsolve {

namespace {
// A cycle that reduces the residual by less than this has stagnated.
constexpr double kStagnationFactor = 0.95;
}  // namespace

template <typename T>
MultigridSolve<T>::MultigridSolve(Sweeper<T>& sweeper)
    : sw_(sweeper), op_(sweeper.make_operator(0.0, false, true)) {}

template <typename T>
Footprint MultigridSolve<T>::footprint(const Config& cfg, const GridDesc& local, bool decomposed) {
  Footprint fp;
  bool dirichlet = false;
  for (int f = 0; f < 2 * cfg.dimensions; ++f)
    dirichlet = dirichlet || cfg.boundary[f].type == BoundaryType::Dirichlet;
  fp.add(cfg.mixed_precision ? FloatCorrection::footprint_fields(local, !dirichlet)
                             : Multigrid<T>::footprint_fields(local, !dirichlet),
         cfg.mixed_precision ? "multigrid hierarchy (float)" : "multigrid hierarchy");
  if (cfg.mixed_precision && !dirichlet) fp.add(1, "ones");
  fp.add(MultigridIteration<T>::footprint_fields(cfg.method, cfg.multigrid.cycle),
         cfg.method == SolverMethod::MultigridCG ? "CG vectors" : "residual");
  if (!has_source_field(cfg)) fp.add(1, "zero source");
  add_fmg_scratch<T>(fp, cfg, local, decomposed);
  return fp;
}

template <typename T>
StepReport MultigridSolve<T>::start(const CheckpointState* restored) {
  const Config& cfg = sw_.config();
  const auto t0 = std::chrono::steady_clock::now();
  solve_ = make_multigrid_iteration(sw_, op_);
  setup_seconds_ = seconds_since(t0);
  MultigridIteration<T>& mg = *solve_;
  T* f = sw_.source_or_zero();
  // The singular shift and, without a source, the reference residual come from the deck's
  // initial field, so that a restarted run shifts f and measures its residual as the
  // uninterrupted run did: it stops at the same cycle, bit for bit. The checkpointed iterate
  // is taken as saved (no second projection onto zero mean).
  T* x0 = sw_.u().data();
  if (restored) {
    const std::vector<T> initial = sw_.initial_field();
    sw_.v().copy_from_host(initial.data());
    x0 = sw_.v().data();
  }
  mg.remove_mean(x0);
  // cycle: fmg: the first cycle is a full-multigrid pass on the problem (planned before start();
  // a restarted run continues with the V-cycles that followed it).
  if (!restored) solve_->plan_fmg(BoundaryMode::Deck);
  double rn = solve_->start(x0, f);
  if (mg.singular()) {
    const GridDesc& g = sw_.grid();
    const double sum = sw_.global_reduce(sw_.backend().reduce(solve_->residual(), g, ReduceOp::Sum),
                                         ReduceOp::Sum);
    sw_.shift_source(sum / double(sw_.global_points()));
    f = sw_.source_or_zero();
    rn = solve_->start(x0, f);
  }
  // The one stopping test of steady solves: relative to the initial field's residual, the
  // boundary data included (solvers/steady/jacobi.hpp).
  reference_ = rn > 0 ? rn : 1.0;
  if (restored) {
    it_ = start_it_ = restored->step;
    rn = solve_->start(sw_.u().data(), f);
  }
  rn_ = rn;
  residual_ = rn / reference_;
  converged_ = residual_ <= cfg.tolerance;
  return StepReport::iteration(it_, residual_, false, converged_ || it_ >= cfg.max_iterations);
}

template <typename T>
StepReport MultigridSolve<T>::advance(std::int64_t count, Monitor monitor) {
  (void)count, (void)monitor;  // one cycle per advance, each checked
  const Config& cfg = sw_.config();
  T* u = sw_.u().data();
  const T* f = sw_.source();
  const auto t0 = std::chrono::steady_clock::now();
  const double rn_new = solve_->confirm(u, f, solve_->iterate(u, f), reference_, cfg.tolerance);
  // The norm came back to the host: the cycle's work is done.
  cycle_seconds_.push_back(seconds_since(t0));
  ++it_;
  factors_.push_back(rn_ > 0 ? rn_new / rn_ : 0.0);
  rn_ = rn_new;
  residual_ = rn_ / reference_;
  converged_ = residual_ <= cfg.tolerance;
  // Three cycles in a row that barely reduce the residual: it sits at the rounding floor of
  // the precision (float: about eps * 6 n^2 * ||u|| / ||f||); more cycles cannot help.
  stagnant_ = factors_.back() > kStagnationFactor ? stagnant_ + 1 : 0;
  const bool stagnated = !converged_ && stagnant_ >= 3;
  if (stagnated)
    stagnation_ = fmt::format("the residual stagnated at {:.3e} (the {} rounding floor)", residual_,
                              std::is_same_v<T, float> ? "float" : "double");
  return StepReport::iteration(it_, residual_, true,
                               converged_ || stagnated || it_ == cfg.max_iterations);
}

template <typename T>
void MultigridSolve<T>::result(RunResult& r) const {
  r.converged = converged_;
  r.multigrid = solve_->report(sw_.config(), it_ - start_it_, factors_, setup_seconds_);
  // Each cycle's seconds: the first ones carry first-use costs (lazy kernel loading, tuning of
  // grids not tuned at set-up), the later ones what a cycle costs.
  r.multigrid["cycle_seconds"] = cycle_seconds_;
  if (!stagnation_.empty() && r.stop_reason.empty()) r.stop_reason = stagnation_;
}

template class MultigridSolve<float>;
template class MultigridSolve<double>;

}  // namespace heatsolve
