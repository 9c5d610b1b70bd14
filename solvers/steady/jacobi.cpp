#include "solvers/steady/jacobi.hpp"

#include <algorithm>
#include <limits>

namespace heatsolve {

template <typename T>
double poisson_residual(Sweeper<T>& sw, T* u, const T* f, double f_norm, const T* previous) {
  Backend<T>& b = sw.backend();
  if (f_norm == 0.0) {
    const double du = sw.norm2(b.reduce_diff(u, previous, sw.grid(), ReduceOp::SumSquares));
    const double un = sw.norm2(b.reduce(u, sw.grid(), ReduceOp::SumSquares));
    return un > 0 ? du / un : du;
  }
  sw.fill_ghosts(u);
  return sw.norm2(b.reduce_residual(u, f, sw.grid(), ReduceOp::SumSquares)) / f_norm;
}

bool restarted_converged(const CheckpointState* restored, double tolerance) {
  return restored && restored->step > 0 && !restored->residual_history.empty() &&
         restored->residual_history.back().first == restored->step &&
         restored->residual <= tolerance;
}

template <typename T>
Jacobi<T>::Jacobi(Sweeper<T>& sweeper)
    : sw_(sweeper), op_(sweeper.space(), sweeper.domain().faces, 0.0) {}

template <typename T>
Footprint Jacobi<T>::footprint(const Config& cfg, const GridDesc& local, bool decomposed) {
  (void)local;
  Footprint fp;
  if (decomposed && cfg.kernel == "temporal")
    fp.add(cfg.source.type != ShapeType::None ? 3 : 2, "deep-halo fields");
  return fp;
}

template <typename T>
StepReport Jacobi<T>::start(const CheckpointState* restored) {
  const Config& cfg = sw_.config();
  c_ = op_.jacobi();
  const T* f = sw_.source();
  f_norm_ = f ? sw_.norm2(sw_.backend().reduce(f, sw_.grid(), ReduceOp::SumSquares)) : 0.0;
  residual_ = restored ? restored->residual : std::numeric_limits<double>::infinity();
  it_ = restored ? restored->step : 0;
  converged_ = restarted_converged(restored, cfg.tolerance);
  check_ = std::max(1, cfg.check_every);
  // Temporal blocking (kernel: temporal, one rank): the sweeps before a residual check run as
  // fused passes of the backend's k (Backend::stencil_steps: the same sweeps).
  fused_ = sw_.fused_depth(f, c_) > 1;
  StepReport r = report(false);
  r.done = converged_ || it_ >= cfg.max_iterations;
  return r;
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
    sw_.fused_steps(f, c_, int(block));
  } else if (block == 1) {
    sw_.sweep(sw_.u().data(), sw_.v().data(), f, c_, true);
    sw_.swap_uv();
  }
  it_ += block;
  sw_.sync_state();
  // Nothing reads u's ghosts after the sweep (the residual fills v's): the rules may be
  // applied inside it.
  sw_.sweep(sw_.u().data(), sw_.v().data(), f, c_, true);
  ++it_;
  bool fresh = false;
  if (it_ % check_ == 0 || it_ == cfg.max_iterations) {
    residual_ = poisson_residual(sw_, sw_.v().data(), f, f_norm_, sw_.u().data());
    converged_ = residual_ <= cfg.tolerance;
    fresh = true;
  }
  sw_.swap_uv();
  StepReport r = report(fresh);
  r.done = converged_ || it_ == cfg.max_iterations;
  return r;
}

template <typename T>
StepReport Jacobi<T>::report(bool fresh) const {
  StepReport r;
  r.step = it_;
  r.time = double(it_);
  r.residual = residual_;
  r.fresh = r.record = fresh;
  return r;
}

template class Jacobi<float>;
template class Jacobi<double>;
template double poisson_residual<float>(Sweeper<float>&, float*, const float*, double,
                                        const float*);
template double poisson_residual<double>(Sweeper<double>&, double*, const double*, double,
                                         const double*);

}  // namespace heatsolve
