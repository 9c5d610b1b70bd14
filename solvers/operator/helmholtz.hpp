// The operator every solver consumes: A = sigma I - alpha Lap (7-point in 3D, 5-point in 2D,
// cell-centred) on one grid with its face rules. Explicit heat steps, Jacobi, multigrid
// levels, PCG and the implicit step all take their sweeps from here: the operator knows the
// coefficients of each form (step, smoothing sweep, residual, application) and the boundary
// rules; the solvers know only what to do with them.
//
// The boundary mode is an argument: Deck fills ghosts with the deck's face values (the
// problem A u = f), Homogeneous with zero values of the same types (corrections, search
// directions, coarse levels). A decomposed grid's Exchange faces are filled by `exchange`.
#pragma once

#include <functional>
#include <vector>

#include "kernels/backend.hpp"
#include "solvers/operator/field_space.hpp"

namespace heatsolve {

enum class BoundaryMode { Deck, Homogeneous };

template <typename T>
class HelmholtzOperator {
 public:
  // `exchange` fills the ghosts of Exchange faces from other ranks (unset: none).
  HelmholtzOperator(FieldSpace<T> space, const BoundaryFaces& faces, double sigma,
                    double alpha = 1.0, std::function<void(T*)> exchange = {});

  const FieldSpace<T>& space() const { return space_; }
  const GridDesc& grid() const { return space_.grid(); }
  Backend<T>& backend() const { return space_.backend(); }
  double sigma() const { return sigma_; }
  double alpha() const { return alpha_; }
  // A's diagonal: sigma + alpha sum_d 2/h_d^2.
  double diagonal() const { return diag_; }
  const BoundaryFaces& faces(BoundaryMode mode) const {
    return mode == BoundaryMode::Deck ? faces_ : zero_faces_;
  }
  bool exchanges() const { return bool(exchange_); }
  // sigma == 0 and no Dirichlet face on any rank: A is singular (constants are in its null
  // space). Collective on a decomposed grid.
  bool singular() const;

  // ---- The forms of one sweep (kernels/stencil/coefficients.hpp) --------------------------
  // Forward Euler for du/dt = -A u + f: u' = u + dt (f - A u) (sigma = 0).
  StencilCoeffs<T> explicit_step(double dt) const;
  // Point Jacobi for A u = f with sigma = 0: u' = D^-1 (offdiag u + f).
  StencilCoeffs<T> jacobi() const;
  // Weighted Jacobi: x' = x + omega D^-1 (f - A x).
  StencilCoeffs<T> weighted_jacobi(double omega) const;
  // r = f - A x, and y = A x.
  StencilCoeffs<T> residual_form() const;
  StencilCoeffs<T> apply_form() const;

  // ---- Operations on fields of this grid ----------------------------------------------------
  // Ghosts of x: the exchange, then the face rules of `mode`.
  void fill(T* x, BoundaryMode mode) const;
  // r = f - A x (x's ghosts filled here; f may be null).
  void residual(T* x, const T* f, T* r, BoundaryMode mode) const;
  // y = A x (x's ghosts filled here).
  void apply(T* x, T* y, BoundaryMode mode) const;
  // `weights.size()`-cycled weighted Jacobi sweeps from *cur (sweep s takes weights[s], or
  // weights[sweeps - 1 - s] when `reverse`); the iterate alternates between *cur and *other
  // and *cur holds it on return. Without an exchange the backend may apply the face rules
  // inside the sweep (whatever reads the iterate's ghosts later fills them).
  void smooth(T** cur, T** other, const T* f, const std::vector<double>& weights, int sweeps,
              bool reverse, BoundaryMode mode) const;

  // The same operator on a coarser grid `space` (transfers between them: kernels/multigrid/):
  // zero face values, no exchange.
  HelmholtzOperator coarsened(FieldSpace<T> space) const;

 private:
  FieldSpace<T> space_;
  BoundaryFaces faces_, zero_faces_;
  double sigma_, alpha_, diag_;
  std::function<void(T*)> exchange_;
};

}  // namespace heatsolve
