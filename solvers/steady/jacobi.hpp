// Poisson -Lap u = f by Jacobi sweeps, the residual ||f - A u|| checked every
// solver.check_every sweeps against the initial field's (initial_residual_norm). A singular
// problem gets a compatible source and returns the solution of zero mean (compatible_start).
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
  Sweeper<T>& sw_;
  HelmholtzOperator<T> op_;
  SweepForm<T> form_;
  std::unique_ptr<Array<T>> scratch_;  // variable coefficients: the residual field
  double reference_ = 1, residual_ = 0;
  std::int64_t it_ = 0;
  int check_ = 1;
  bool fused_ = false, converged_ = false, singular_ = false;
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

// The start of a steady solve by sweeps (Jacobi, Anderson) on a singular problem
// (op.singular(): no face on any rank fixes the level; docs/deck.md "Singular problems"), as
// MultigridSolve::start does it: the deck's initial field u0 (u itself, or v when restarted:
// a checkpoint holds the iterate) loses its mean, and the source is shifted by the mean of
// f - A u0 over all cells, the imbalance of the sources and the faces' inflow per volume that
// no solution can remove. Then the initial residual norm (initial_residual_norm) with the
// shifted source. Returns whether the problem was singular.
template <typename T>
bool compatible_start(Sweeper<T>& sw, const HelmholtzOperator<T>& op, bool restarted,
                      double* reference, Array<T>* scratch = nullptr);

// Whether a Poisson deck is singular (no face fixes the level), for the memory preflight.
bool singular_poisson(const Config& cfg);

// A restarted steady solve whose checkpoint holds the converged state.
bool restarted_converged(const CheckpointState* restored, double tolerance);

}  // namespace heatsolve
