#include "solvers/time/implicit_heat.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/stopwatch.hpp"
#include "solvers/multigrid/setup.hpp"
#include "solvers/time/explicit_heat.hpp"

namespace heatsolve {

namespace {
// A cycle that reduces the residual by less than this has stagnated.
constexpr double kStagnationFactor = 0.95;
}  // namespace

template <typename T>
Footprint ImplicitHeat<T>::footprint(const Config& cfg, const GridDesc& local, bool decomposed) {
  Footprint fp;
  fp.add(1, "right side");
  fp.add(cfg.mixed_precision ? FloatCorrection::footprint_fields(local, false)
                             : Multigrid<T>::footprint_fields(local, false),
         cfg.mixed_precision ? "multigrid hierarchy (float)" : "multigrid hierarchy");
  fp.add(MultigridIteration<T>::footprint_fields(cfg.method, cfg.multigrid.cycle),
         cfg.method == SolverMethod::MultigridCG ? "CG vectors" : "residual");
  add_fmg_scratch<T>(fp, cfg, local, decomposed);
  return fp;
}

template <typename T>
StepReport ImplicitHeat<T>::start(const CheckpointState* restored) {
  const Config& cfg = sw_.config();
  steps_ = resolve_time_steps(cfg, restored);
  step_ = steps_.first;
  if (restored) rate_ = restored->residual;
  const double theta = scheme_theta(cfg.scheme), alpha = cfg.diffusivity;
  // Uniform material, divided by theta dt alpha: (sigma - Lap) u' = ..., sigma =
  // 1/(theta dt alpha). Variable coefficients: (C/(theta dt) - div K grad) u' =
  // C/(theta dt) u + (1-theta)/theta div K grad u + q/theta.
  const bool variable = sw_.variable();
  const double sigma = variable ? 1.0 / (theta * steps_.dt) : 1.0 / (theta * steps_.dt * alpha);
  const double c = (1.0 - theta) / theta;
  const auto t0 = std::chrono::steady_clock::now();
  op_ = std::make_unique<HelmholtzOperator<T>>(sw_.make_operator(sigma, false, true));
  if (variable) rhs_variable_ = op_->combine(c, 1.0 / theta);
  solve_ = make_multigrid_iteration(sw_, *op_);
  setup_seconds_ = seconds_since(t0);
  const GridDesc& g = sw_.grid();
  const double ix = 1.0 / (g.hx * g.hx), iy = 1.0 / (g.hy * g.hy);
  const double iz = g.dims == 3 ? 1.0 / (g.hz * g.hz) : 0.0;
  rhs_.center = static_cast<T>(sigma - 2.0 * c * (ix + iy + iz));
  rhs_.cx = static_cast<T>(c * ix);
  rhs_.cy = static_cast<T>(c * iy);
  rhs_.cz = static_cast<T>(c * iz);
  rhs_.source = static_cast<T>(1.0 / (theta * alpha));
  b_ = sw_.allocate();
  return StepReport::time_step(step_, steps_.start_time, rate_, false, false, step_ >= steps_.last);
}

template <typename T>
StepReport ImplicitHeat<T>::advance(std::int64_t count, Monitor monitor) {
  (void)count;  // one step per advance (max_advance() is 1)
  const Config& cfg = sw_.config();
  const std::int64_t s = step_ + 1;
  if (sw_.inputs_vary()) {
    // Inputs over time: the right side's explicit half takes the faces at t_n (u's ghosts),
    // the source is theta f(t_{n+1}) + (1 - theta) f(t_n) (with regions the flux faces' part
    // too), and the operator's faces are at t_{n+1}: implicit Euler the faces and source at
    // t_{n+1}, Crank-Nicolson the trapezoidal rule.
    const double t0 = steps_.time_at(step_), t1 = steps_.time_at(s);
    sw_.set_inputs(t0, t0, t1, scheme_theta(cfg.scheme));
    op_->set_face_values(sw_.operator_faces(t1));
  }
  T* u = sw_.u().data();
  T* b = b_->data();
  sw_.fill_ghosts(u);
  if (rhs_variable_.variable) {
    CellRange all;
    all.hi = {sw_.grid().nx, sw_.grid().ny, sw_.grid().dims == 3 ? sw_.grid().nz : 1};
    sw_.backend().stencil_variable(u, b, sw_.source(), sw_.grid(), rhs_variable_.v, all);
  } else {
    sw_.backend().stencil(u, b, sw_.source(), sw_.grid(), rhs_);
  }
  // u^n, for the rate of change: on the backend's stream (an Array's own copy waits for the
  // device, once per step).
  sw_.backend().copy_values(sw_.v().data(), sw_.u().data(), sw_.u().size());
  const double b_norm = sw_.norm2(sw_.backend().reduce(b, sw_.grid(), ReduceOp::SumSquares));
  // cycle: fmg: the step's first cycle is a full-multigrid pass on u^n's correction (planned
  // before start(), which then stores the residual it corrects).
  solve_->plan_fmg(BoundaryMode::Homogeneous);
  double rn = solve_->start(u, b);
  const double reference = b_norm > 0 ? b_norm : 1.0;
  const std::int64_t max_cycles = std::min<std::int64_t>(cfg.max_iterations, 1000);
  std::int64_t k = 0;
  int stagnant = 0;
  while (rn / reference > cfg.tolerance && k < max_cycles && stagnant < 3) {
    const double rn_new = solve_->confirm(u, b, solve_->iterate(u, b), reference, cfg.tolerance);
    factors_.push_back(rn > 0 ? rn_new / rn : 0.0);
    stagnant = factors_.back() > kStagnationFactor ? stagnant + 1 : 0;
    rn = rn_new;
    ++k;
    require_finite(rn, true, s, "the implicit step's residual");
  }
  cycles_ += k;
  if (rn / reference > cfg.tolerance)
    throw BlowUpError(fmt::format(
        "the implicit step {} did not reach solver.tolerance {:g} in {} cycles (residual "
        "{:.3e}{}); loosen solver.tolerance (float: its rounding floor), or raise "
        "solver.max_iterations",
        s, cfg.tolerance, k, rn / reference, stagnant >= 3 ? ", stagnated" : ""));
  step_ = s;
  const bool last = s == steps_.last;
  const bool rate = last || monitor != Monitor::None;
  if (rate) rate_ = heat_rate(sw_, sw_.u().data(), sw_.v().data(), steps_.dt);
  return StepReport::time_step(s, steps_.time_at(s), rate_, rate,
                               last || monitor == Monitor::Record, last);
}

template <typename T>
void ImplicitHeat<T>::result(RunResult& r) const {
  r.multigrid = solve_->report(sw_.config(), cycles_, factors_, setup_seconds_);
}

template class ImplicitHeat<float>;
template class ImplicitHeat<double>;

}  // namespace heatsolve
