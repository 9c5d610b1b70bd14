#include "solvers/steady/jacobi.hpp"

#include <algorithm>
#include <limits>

#include "solvers/problem/materials.hpp"

namespace heatsolve {

namespace {
// A reduction of f - A u over this rank's cells (u's ghosts filled here with the deck's faces).
template <typename T>
double residual_reduce(Sweeper<T>& sw, const HelmholtzOperator<T>& op, T* u, const T* f,
                       Array<T>* scratch, ReduceOp reduce) {
  Backend<T>& b = sw.backend();
  const GridDesc& g = sw.grid();
  sw.fill_ghosts(u);
  if (!op.is_variable()) return b.reduce_residual(u, f, g, reduce);
  CellRange all;
  all.hi = {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
  b.stencil_variable(u, scratch->data(), f, g, op.residual_form().v, all);
  return b.reduce(scratch->data(), g, reduce);
}
}  // namespace

template <typename T>
double residual_norm(Sweeper<T>& sw, const HelmholtzOperator<T>& op, T* u, const T* f,
                     Array<T>* scratch) {
  return sw.norm2(residual_reduce(sw, op, u, f, scratch, ReduceOp::SumSquares));
}

template <typename T>
bool compatible_start(Sweeper<T>& sw, const HelmholtzOperator<T>& op, bool restarted,
                      double* reference, Array<T>* scratch) {
  if (!op.singular()) {
    *reference = initial_residual_norm(sw, op, sw.source(), restarted, scratch);
    return false;
  }
  Array<T>* x0 = &sw.u();
  if (restarted) {
    const std::vector<T> initial = sw.initial_field();
    sw.v().copy_from_host(initial.data());
    x0 = &sw.v();
  }
  sw.remove_mean(*x0);
  const double sum = sw.global_reduce(
      residual_reduce(sw, op, x0->data(), sw.source(), scratch, ReduceOp::Sum), ReduceOp::Sum);
  sw.shift_source(sum / double(sw.global_points()));
  *reference = residual_norm(sw, op, x0->data(), sw.source(), scratch);
  return true;
}

bool singular_poisson(const Config& cfg) {
  if (cfg.problem != ProblemType::Poisson) return false;
  for (int f = 0; f < 2 * cfg.dimensions; ++f)
    if (anchors(cfg.boundary[std::size_t(f)])) return false;
  return true;
}

template <typename T>
double initial_residual_norm(Sweeper<T>& sw, const HelmholtzOperator<T>& op, const T* f,
                             bool restarted, Array<T>* scratch) {
  if (!restarted) return residual_norm(sw, op, sw.u().data(), f, scratch);
  // The deck's initial field in v (whose values the method does not need yet).
  const std::vector<T> initial = sw.initial_field();
  sw.v().copy_from_host(initial.data());
  return residual_norm(sw, op, sw.v().data(), f, scratch);
}

bool restarted_converged(const CheckpointState* restored, double tolerance) {
  return restored && restored->step > 0 && !restored->residual_history.empty() &&
         restored->residual_history.back().first == restored->step &&
         restored->residual <= tolerance;
}

template <typename T>
Jacobi<T>::Jacobi(Sweeper<T>& sweeper)
    : sw_(sweeper), op_(sweeper.make_operator(0.0, false, false)) {}

template <typename T>
Footprint Jacobi<T>::footprint(const Config& cfg, const GridDesc& local, bool decomposed) {
  (void)local;
  Footprint fp;
  if (decomposed && cfg.kernel == "temporal")
    fp.add(has_source_field(cfg) ? 3 : 2, "deep-halo fields");
  if (singular_poisson(cfg) && !has_source_field(cfg)) fp.add(1, "compatible source");
  return fp;
}

template <typename T>
StepReport Jacobi<T>::start(const CheckpointState* restored) {
  const Config& cfg = sw_.config();
  form_ = op_.jacobi();
  if (form_.variable) scratch_ = sw_.allocate();
  singular_ = compatible_start(sw_, op_, restored != nullptr, &reference_, scratch_.get());
  const T* f = sw_.source();
  residual_ = restored ? restored->residual : std::numeric_limits<double>::infinity();
  it_ = restored ? restored->step : 0;
  converged_ = restarted_converged(restored, cfg.tolerance);
  check_ = std::max(1, cfg.check_every);
  // Temporal blocking (kernel: temporal, one rank): the sweeps before a residual check run as
  // fused passes of the backend's k (Backend::stencil_steps: the same sweeps).
  fused_ = sw_.fused_depth(f, form_) > 1;
  return StepReport::iteration(it_, residual_, false, converged_ || it_ >= cfg.max_iterations);
}

template <typename T>
std::int64_t Jacobi<T>::max_advance() const {
  if (!fused_) return 1;
  return std::min<std::int64_t>(check_ - it_ % check_, sw_.config().max_iterations - it_);
}

template <typename T>
StepReport Jacobi<T>::advance(std::int64_t count, Monitor monitor) {
  (void)monitor;  // the residual comes at the checks
  const Config& cfg = sw_.config();
  const T* f = sw_.source();
  const std::int64_t block = count - 1;  // the last sweep runs alone
  if (block > 1) {
    sw_.fused_steps(f, form_.c, int(block));  // fused passes: constant coefficients only
  } else if (block == 1) {
    sw_.sweep(sw_.u().data(), sw_.v().data(), f, form_, true);
    sw_.swap_uv();
  }
  it_ += block;
  sw_.sync_state();
  // Nothing reads u's ghosts after the sweep (the residual fills v's): the rules may be
  // applied inside it.
  sw_.sweep(sw_.u().data(), sw_.v().data(), f, form_, true);
  ++it_;
  bool fresh = false;
  if (it_ % check_ == 0 || it_ == cfg.max_iterations) {
    const double rn = residual_norm(sw_, op_, sw_.v().data(), f, scratch_.get());
    residual_ = reference_ > 0 ? rn / reference_ : rn;
    converged_ = residual_ <= cfg.tolerance;
    fresh = true;
  }
  sw_.swap_uv();
  const StepReport r =
      StepReport::iteration(it_, residual_, fresh, converged_ || it_ == cfg.max_iterations);
  // A singular problem's solution is defined up to a constant: the one of zero mean, as
  // multigrid returns it (the sweeps commute with adding a constant, so removing it once
  // converged gives what removing it after every sweep would). An iterate stopped short of the
  // tolerance is left as it is, so that a checkpoint of it continues bit for bit.
  if (converged_ && singular_) sw_.remove_mean(sw_.u());
  return r;
}

template class Jacobi<float>;
template class Jacobi<double>;
template double residual_norm<float>(Sweeper<float>&, const HelmholtzOperator<float>&, float*,
                                     const float*, Array<float>*);
template double residual_norm<double>(Sweeper<double>&, const HelmholtzOperator<double>&, double*,
                                      const double*, Array<double>*);
template bool compatible_start<float>(Sweeper<float>&, const HelmholtzOperator<float>&, bool,
                                      double*, Array<float>*);
template bool compatible_start<double>(Sweeper<double>&, const HelmholtzOperator<double>&, bool,
                                       double*, Array<double>*);
template double initial_residual_norm<float>(Sweeper<float>&, const HelmholtzOperator<float>&,
                                             const float*, bool, Array<float>*);
template double initial_residual_norm<double>(Sweeper<double>&, const HelmholtzOperator<double>&,
                                              const double*, bool, Array<double>*);

}  // namespace heatsolve
