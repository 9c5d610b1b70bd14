// Poisson -Lap u = f by Jacobi sweeps, the residual checked every solver.check_every sweeps:
// ||f + Lap u|| / ||f||, or without a source the relative update ||u - u_prev|| / ||u||.
// With temporal blocking the sweeps between checks run as fused passes (the same sweeps,
// so the same bits); the checked sweep runs alone, since the check compares it with its
// predecessor.
#pragma once

#include <memory>

#include "solvers/footprint.hpp"
#include "solvers/operator/helmholtz.hpp"
#include "solvers/run/solver_interface.hpp"
#include "solvers/run/sweeper.hpp"

namespace heatsolve {

template <typename T>
class Jacobi final : public Solver<T> {
 public:
  explicit Jacobi(Sweeper<T>& sweeper);
  static Footprint footprint(const Config& cfg, const GridDesc& local, bool decomposed);

  bool transient() const override { return false; }
  std::int64_t total() const override { return sw_.config().max_iterations; }
  StepReport start(const CheckpointState* restored) override;
  std::int64_t max_advance() const override;
  StepReport advance(std::int64_t count, Monitor monitor) override;
  void result(RunResult& r) const override { r.converged = converged_; }

 private:
  StepReport report(bool fresh) const;

  Sweeper<T>& sw_;
  HelmholtzOperator<T> op_;
  SweepForm<T> form_;
  std::unique_ptr<Array<T>> scratch_;  // variable coefficients: the residual field
  double reference_ = 1, residual_ = 0;
  std::int64_t it_ = 0;
  int check_ = 1;
  bool fused_ = false, converged_ = false;
};

// ||f - A u|| over all ranks (u's ghosts filled here with the deck's faces: the boundary data
// are part of it). Variable coefficients go through `op`'s residual form into `scratch`.
template <typename T>
double residual_norm(Sweeper<T>& sw, const HelmholtzOperator<T>& op, T* u, const T* f,
                     Array<T>* scratch = nullptr);

// Every steady method's stopping test (docs/deck.md "solver"): ||f - A u|| relative to the
// same norm of the deck's initial field, whatever a checkpoint holds, so that a restarted
// solve stops where the uninterrupted one does. Computed once at the start (u's interior is
// borrowed from v meanwhile when restarted); 0 when the initial field solves the problem.
template <typename T>
double initial_residual_norm(Sweeper<T>& sw, const HelmholtzOperator<T>& op, const T* f,
                             bool restarted, Array<T>* scratch = nullptr);

// A restarted steady solve whose checkpoint holds the converged state.
bool restarted_converged(const CheckpointState* restored, double tolerance);

}  // namespace heatsolve
