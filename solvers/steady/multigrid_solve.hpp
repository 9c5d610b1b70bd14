// Poisson -Lap u = f by multigrid cycles (solver.method: multigrid) or mg-cg (flexible PCG
// with one V-cycle as preconditioner), every iteration checked: until ||f - A u|| <=
// tolerance * ||f|| (* ||f - A u0|| when f = 0); the residual's ratio per iteration is the
// convergence factor. Singular problems (no Dirichlet face): f is shifted by the mean of the
// initial residual (the part no u can remove: the source's mean plus the boundary fluxes),
// and u has zero mean. Three iterations in a row that barely reduce the residual mean it sits
// at the precision's rounding floor: the solve stops there (not converged).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "solvers/footprint.hpp"
#include "solvers/multigrid/iteration.hpp"
#include "solvers/run/solver_interface.hpp"
#include "solvers/run/sweeper.hpp"

namespace heatsolve {

template <typename T>
class MultigridSolve final : public Solver<T> {
 public:
  explicit MultigridSolve(Sweeper<T>& sweeper);
  static Footprint footprint(const Config& cfg, const GridDesc& local, bool decomposed);

  bool transient() const override { return false; }
  std::int64_t total() const override { return sw_.config().max_iterations; }
  StepReport start(const CheckpointState* restored) override;
  StepReport advance(std::int64_t count, Monitor monitor) override;
  void finish() override { solve_->remove_mean(sw_.u().data()); }
  void result(RunResult& r) const override;

 private:
  Sweeper<T>& sw_;
  HelmholtzOperator<T> op_;
  std::unique_ptr<MultigridIteration<T>> solve_;
  double rn_ = 0, reference_ = 1, residual_ = 0, setup_seconds_ = 0;
  std::int64_t it_ = 0, start_it_ = 0;
  int stagnant_ = 0;
  bool converged_ = false;
  std::string stagnation_;
  std::vector<double> factors_;
  std::vector<double> cycle_seconds_;  // wall seconds of each cycle, its convergence check included
};

}  // namespace heatsolve
