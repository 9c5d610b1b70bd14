// Heat equation, forward Euler: u' = u + dt (alpha Lap u + f), one sweep per step, or with
// temporal blocking (execution.time_block) several steps per fused pass (deep halos under
// MPI). The rate of change (RMS du/dt) needs the state before a step, so a monitored step
// (and the last) runs alone after the block. Inputs that change with time (docs/deck.md
// "Time-varying inputs") are taken at each step's start, t_n, one step at a time.
#pragma once

#include "solvers/footprint.hpp"
#include "solvers/operator/helmholtz.hpp"
#include "solvers/run/solver_interface.hpp"
#include "solvers/run/sweeper.hpp"
#include "solvers/time/time_steps.hpp"

namespace heatsolve {

template <typename T>
class ExplicitHeat final : public Solver<T> {
 public:
  explicit ExplicitHeat(Sweeper<T>& sweeper);
  static Footprint footprint(const Config& cfg, const GridDesc& local, bool decomposed);

  bool transient() const override { return true; }
  std::int64_t total() const override { return steps_.last; }
  StepReport start(const CheckpointState* restored) override;
  std::int64_t max_advance() const override;
  StepReport advance(std::int64_t count, Monitor monitor) override;
  bool monitored() const override { return true; }
  std::string residual_name() const override { return "the temperature change"; }
  void save(CheckpointState& s) const override { s.dt = steps_.dt; }

 private:
  Sweeper<T>& sw_;
  HelmholtzOperator<T> op_;
  TimeSteps steps_;
  SweepForm<T> form_;
  std::int64_t step_ = 0;
  int depth_ = 1;    // steps per fused pass
  double rate_ = 0;  // the newest RMS du/dt
};

// RMS of (now - before) / dt over all ranks' interiors.
template <typename T>
double heat_rate(Sweeper<T>& sw, const T* now, const T* before, double dt);

}  // namespace heatsolve
