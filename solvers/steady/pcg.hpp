// Preconditioned conjugate gradients on A x = b for any HelmholtzOperator and any
// Preconditioner (HYPRE's PCG with SetPrecond): mg-cg runs it with the multigrid V-cycle, the
// multigrid's coarsest level without one. The search directions and residuals are
// homogeneous (zero face values); only the start's residual sees the deck's faces.
#pragma once

#include <memory>

#include "solvers/operator/helmholtz.hpp"

namespace heatsolve {

// z = M r, an approximation of A^-1 r.
template <typename T>
class Preconditioner {
 public:
  virtual ~Preconditioner() = default;
  virtual void apply(const T* r, T* z) = 0;
};

// Plain CG takes beta = (r.z)_new / (r.z)_old (Fletcher-Reeves). A preconditioner that is not a
// symmetric operator (the V-cycle with linear prolongation and averaging restriction) loses
// conjugacy with it; flexible CG takes the Polak-Ribiere beta = r.(z - z_old) / (r.z)_old.
enum class CgBeta { FletcherReeves, PolakRibiere };

template <typename T>
class Pcg {
 public:
  // `preconditioner` null: none (z is r). The operator and preconditioner outlive the Pcg.
  Pcg(const HelmholtzOperator<T>& op, Preconditioner<T>* preconditioner, CgBeta beta);

  // Starts on A x = b from x: r = b - A x (x's ghosts with `mode`'s faces), z = M r, p = z.
  // Returns ||r||.
  double start(T* x, const T* b, BoundaryMode mode);
  // Starts from a residual r already in residual() (x's correction from zero, e.g. a coarse
  // level's e with A e = r).
  void start_from_residual();
  // One iteration: x += alpha p, r -= alpha A p, z = M r, p = z + beta p. Returns ||r|| (the
  // recurrence, not b - A x). Where p.Ap <= 0 (converged to rounding) alpha is 0, or with
  // `stop_on_breakdown` nothing is changed and *breakdown is set.
  double iterate(T* x, bool stop_on_breakdown = false, bool* breakdown = nullptr);

  T* residual() { return r_->data(); }
  // Scratch of the grid's size that start() and iterate() do not keep anything in between
  // calls (the search direction's image, free after each iteration).
  T* scratch() { return q_->data(); }
  double rz() const { return rz_; }  // r.z of the current residual (r.r without preconditioner)

 private:
  const HelmholtzOperator<T>& op_;
  Preconditioner<T>* m_;
  CgBeta beta_;
  std::unique_ptr<Array<T>> r_, z_, p_, q_;
  double rz_ = 0;
};

}  // namespace heatsolve
