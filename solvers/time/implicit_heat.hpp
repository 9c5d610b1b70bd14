// Heat equation, implicit Euler (theta = 1) or Crank-Nicolson (theta = 1/2):
//   (I - theta dt alpha Lap) u' = u + (1 - theta) dt alpha Lap u + dt f,
// divided by theta dt alpha: (sigma - Lap) u' = sigma u + (1-theta)/theta Lap u + f/(theta alpha)
// with sigma = 1/(theta dt alpha). Each step solves it to solver.tolerance (relative to the
// right side) from u, by multigrid cycles or mg-cg (solvers/multigrid/iteration.hpp).
#pragma once

#include <memory>
#include <vector>

#include "solvers/footprint.hpp"
#include "solvers/multigrid/iteration.hpp"
#include "solvers/run/solver_interface.hpp"
#include "solvers/run/sweeper.hpp"
#include "solvers/time/time_steps.hpp"

namespace heatsolve {

template <typename T>
class ImplicitHeat final : public Solver<T> {
 public:
  explicit ImplicitHeat(Sweeper<T>& sweeper) : sw_(sweeper) {}
  static Footprint footprint(const Config& cfg, const GridDesc& local, bool decomposed);

  bool transient() const override { return true; }
  std::int64_t total() const override { return steps_.last; }
  StepReport start(const CheckpointState* restored) override;
  StepReport advance(std::int64_t count, Monitor monitor) override;
  bool monitored() const override { return true; }
  std::string residual_name() const override { return "the temperature change"; }
  void save(CheckpointState& s) const override { s.dt = steps_.dt; }
  void result(RunResult& r) const override;

 private:
  Sweeper<T>& sw_;
  TimeSteps steps_;
  std::unique_ptr<HelmholtzOperator<T>> op_;
  std::unique_ptr<MultigridIteration<T>> solve_;
  std::unique_ptr<Array<T>> b_;  // the right side of a step
  StencilCoeffs<T> rhs_;         // the right side's sweep (uniform material)
  SweepForm<T> rhs_variable_;    // (variable coefficients)
  std::int64_t step_ = 0, cycles_ = 0;
  std::vector<double> factors_;
  double rate_ = 0, setup_seconds_ = 0;
};

}  // namespace heatsolve
