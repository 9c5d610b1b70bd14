#include "solvers/time/explicit_heat.hpp"

#include <algorithm>
#include <cmath>

namespace heatsolve {

template <typename T>
double heat_rate(Sweeper<T>& sw, const T* now, const T* before, double dt) {
  const double ss = sw.global_reduce(
      sw.backend().reduce_diff(now, before, sw.grid(), ReduceOp::SumSquares), ReduceOp::SumSquares);
  return std::sqrt(ss / double(sw.global_points())) / dt;
}

template <typename T>
ExplicitHeat<T>::ExplicitHeat(Sweeper<T>& sweeper)
    : sw_(sweeper), op_(sweeper.make_operator(0.0, true, false)) {}

template <typename T>
Footprint ExplicitHeat<T>::footprint(const Config& cfg, const GridDesc& local, bool decomposed) {
  (void)local;
  Footprint fp;
  // Temporal blocking under MPI works on the block extended by deep halos: u, v (and f).
  if (decomposed && (cfg.kernel == "temporal" || cfg.kernel == "auto"))
    fp.add(has_source_field(cfg) ? 3 : 2, "deep-halo fields");
  return fp;
}

template <typename T>
StepReport ExplicitHeat<T>::start(const CheckpointState* restored) {
  steps_ = resolve_time_steps(sw_.config(), restored);
  step_ = steps_.first;
  if (restored) rate_ = restored->residual;
  form_ = op_.explicit_step(steps_.dt);
  // Temporal blocking (execution.time_block; `auto`: the backend's choice, 1 on the CPU and
  // for variable coefficients).
  depth_ = sw_.fused_depth(sw_.source(), form_);
  return StepReport::time_step(step_, steps_.start_time, rate_, false, false, step_ >= steps_.last);
}

template <typename T>
std::int64_t ExplicitHeat<T>::max_advance() const {
  return std::min<std::int64_t>(depth_, steps_.last - step_);
}

template <typename T>
StepReport ExplicitHeat<T>::advance(std::int64_t count, Monitor monitor) {
  const T* f = sw_.source();
  const std::int64_t end = step_ + count;
  const bool last = end == steps_.last;
  const bool rate = last || monitor != Monitor::None;
  // Blocks of the run's k, landing where the loop asked; a monitored last step alone.
  const std::int64_t block = rate ? count - 1 : count;
  // Inputs that change with time: each step's faces and source at its start, t_n (forward
  // Euler), so single steps.
  const bool vary = sw_.inputs_vary();
  if (block > 1 && !form_.variable && !vary) {
    sw_.fused_steps(f, form_.c, int(block));
  } else {
    sw_.sync_state();
    // Nothing reads u's ghosts after these sweeps: the rules may be applied inside them.
    for (std::int64_t s = 0; s < block; ++s) {
      if (vary) sw_.set_inputs(steps_.time_at(step_ + s));
      sw_.sweep(sw_.u().data(), sw_.v().data(), f, form_, true);
      sw_.swap_uv();
    }
  }
  if (rate) {
    sw_.sync_state();
    if (vary) sw_.set_inputs(steps_.time_at(end - 1));
    sw_.sweep(sw_.u().data(), sw_.v().data(), f, form_, true);
    rate_ = heat_rate(sw_, sw_.v().data(), sw_.u().data(), steps_.dt);
    sw_.swap_uv();
  }
  step_ = end;
  return StepReport::time_step(end, steps_.time_at(end), rate_, rate,
                               last || monitor == Monitor::Record, last);
}

template class ExplicitHeat<float>;
template class ExplicitHeat<double>;
template double heat_rate<float>(Sweeper<float>&, const float*, const float*, double);
template double heat_rate<double>(Sweeper<double>&, const double*, const double*, double);

}  // namespace heatsolve
