// The operator every solver consumes: A = sigma C - div(K grad .) in cell-centred finite
// volumes on one grid with its face rules. Explicit heat steps, Jacobi, multigrid levels, PCG
// and the implicit step all take their sweeps from here: the operator knows the coefficients
// of each form (step, smoothing sweep, residual, application) and the boundary rules; the
// solvers know only what to do with them.
//
// Two representations, one interface:
//   constant     a uniform material: A = sigma - alpha Lap with scalar coefficients, swept by
//                the stencil ladder (kernels/stencil/coefficients.hpp: fused temporal passes,
//                deep halos, generated sources). Deck faces are lowered to ghost rules for the
//                grid's spacing (solvers/problem/materials.hpp), so a coarser level lowers them
//                again for its own.
//   variable     materials by region: face coefficients K_f/h^2, a per-cell mass sigma C and
//                the explicit step's 1/C (kernels/stencil/variable.hpp); a coarser level's
//                coefficients are averaged from this one's (coarsened()).
//
// The boundary mode is an argument: Deck fills ghosts with the deck's face values (the
// problem A u = f), Homogeneous with zero values of the same types (corrections, search
// directions, coarse levels). A decomposed grid's Exchange faces are filled by `exchange`.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "kernels/backend.hpp"
#include "solvers/operator/conductance.hpp"
#include "solvers/operator/field_space.hpp"

namespace heatsolve {

enum class BoundaryMode { Deck, Homogeneous };

// One sweep of either representation.
template <typename T>
struct SweepForm {
  bool variable = false;
  StencilCoeffs<T> c;   // constant
  VariableCoeffs<T> v;  // variable (pointers into the operator's arrays)
};

// The variable representation's device arrays (shared by copies of an operator).
template <typename T>
struct OperatorArrays {
  std::shared_ptr<Array<T>> wx, wy, wz;  // K_f / h^2 at each cell's lower face
  std::shared_ptr<Array<T>> mass;        // sigma C per cell; null: 0
  std::shared_ptr<Array<T>> scale;       // 1 / C per cell (explicit steps); null: none
  // On the host, for coarsening: the level's resistances and its faces' exterior ones.
  std::shared_ptr<const ConductanceLevel> conductance;
  Exterior exterior{};
};

template <typename T>
class HelmholtzOperator {
 public:
  // Constant: A = sigma - alpha Lap. `faces`: the deck's (Convective and HeatFlux are lowered
  // with conductivity `k`); `exchange` fills the ghosts of Exchange faces from other ranks.
  HelmholtzOperator(FieldSpace<T> space, const BoundaryFaces& faces, double sigma,
                    double alpha = 1.0, std::function<void(T*)> exchange = {}, double k = 1.0);
  // Variable: A = mass - div(K grad .) with `arrays`; `faces` are kernel rules already
  // (solvers/problem/materials.hpp); `anchored`: some face on some rank fixes the level.
  static HelmholtzOperator variable(FieldSpace<T> space, const BoundaryFaces& faces,
                                    OperatorArrays<T> arrays, bool anchored,
                                    std::function<void(T*)> exchange = {});

  const FieldSpace<T>& space() const { return space_; }
  const GridDesc& grid() const { return space_.grid(); }
  Backend<T>& backend() const { return space_.backend(); }
  bool is_variable() const { return bool(arrays_.wx); }
  double sigma() const { return sigma_; }
  double alpha() const { return alpha_; }
  double conductivity() const { return k_; }  // constant: what Convective/HeatFlux are lowered with
  // A's diagonal (constant representation): sigma + alpha sum_d 2/h_d^2.
  double diagonal() const { return diag_; }
  const BoundaryFaces& faces(BoundaryMode mode) const {
    return mode == BoundaryMode::Deck ? faces_ : zero_faces_;
  }
  bool exchanges() const { return bool(exchange_); }
  // sigma == 0 and no face on any rank fixes the solution's level: A is singular (constants
  // are in its null space). Collective on a decomposed grid.
  bool singular() const;

  // ---- The forms of one sweep ---------------------------------------------------------------
  // Forward Euler for C du/dt = -A u + f: u' = u + dt C^-1 (f - A u) (sigma = 0).
  SweepForm<T> explicit_step(double dt) const;
  // Point Jacobi for A u = f: u' = u + D^-1 (f - A u).
  SweepForm<T> jacobi() const;
  // Weighted Jacobi: x' = x + omega D^-1 (f - A x).
  SweepForm<T> weighted_jacobi(double omega) const;
  // r = f - A x, and y = A x.
  SweepForm<T> residual_form() const;
  SweepForm<T> apply_form() const;
  // Variable only: out = mass u - a (A - mass) u + b f, i.e. (mass u + a L(u)) + b f.
  SweepForm<T> combine(double a, double b) const;

  // ---- Operations on fields of this grid ----------------------------------------------------
  // Ghosts of x: the exchange, then the face rules of `mode`.
  void fill(T* x, BoundaryMode mode) const;
  // Ghosts of a correction (zero face values) for interpolating it to a finer level: the
  // homogeneous rules, except that a variable operator's faces take the mirror rule of their
  // coupling (Dirichlet -inner, insulated +inner, convective in between) instead of the
  // exterior value its sweeps read.
  void fill_for_interpolation(T* x) const;
  // out = form(x) on every cell, x's ghosts filled here (f may be null).
  void sweep(T* x, T* out, const T* f, const SweepForm<T>& form, BoundaryMode mode) const;
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
  // the deck's faces lowered for its spacing (Deck: the same problem on the coarse grid, as
  // full multigrid solves it; Homogeneous: corrections), no exchange; variable coefficients
  // averaged from this grid's (their Deck faces are this one's exterior values): a coarse
  // face's K/H^2 is the mean of the fine faces on it times (h/H)^2 along its normal, a coarse
  // cell's mass the mean of its children's.
  HelmholtzOperator coarsened(FieldSpace<T> space) const;
  // Variable: the level's resistances (host) and its mass (host, empty for none).
  const ConductanceLevel& conductance() const { return *arrays_.conductance; }
  std::vector<T> host_mass() const;
  // The variable representation on `space` from a level's resistances (coarse levels on one
  // rank: the agglomerated global level), with `faces`' rules and exterior resistances, this
  // operator's anchoring, no exchange; `mass` empty: none.
  HelmholtzOperator with_level(FieldSpace<T> space, std::shared_ptr<const ConductanceLevel> level,
                               const Exterior& exterior, const std::vector<T>& mass,
                               const BoundaryFaces& faces) const;
  // The same operator in precision U on `space` (this grid on a Backend<U>: mixed precision's
  // float hierarchy), with `exchange` for its Exchange faces: the constant representation
  // from the same scalars and deck faces, the variable one with its arrays converted on the
  // device (Backend::to_float) and the same host coefficients for coarsening.
  template <typename U>
  HelmholtzOperator<U> in_precision(FieldSpace<U> space, std::function<void(U*)> exchange) const;

 private:
  template <typename>
  friend class HelmholtzOperator;
  HelmholtzOperator() = default;
  void set_faces(const BoundaryFaces& kernel_faces);

  FieldSpace<T> space_{};
  BoundaryFaces deck_faces_{}, faces_{}, zero_faces_{}, interpolation_faces_{};
  double sigma_ = 0, alpha_ = 1, diag_ = 0, k_ = 1;
  bool anchored_ = false;
  std::function<void(T*)> exchange_;
  OperatorArrays<T> arrays_;
};

}  // namespace heatsolve
