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
// The Deck faces' values may change (set_face_values: faces over time in implicit heat steps);
// copies of an operator share them, so that a multigrid hierarchy's finest level, a copy of
// the operator it was built from, sees the change.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "kernels/backend.hpp"
#include "solvers/operator/conductance.hpp"
#include "solvers/operator/field_space.hpp"
#include "solvers/parallel/margins.hpp"

namespace heatsolve {

enum class BoundaryMode { Deck, Homogeneous };

// A halo exchange in its split form (HaloExchanger::begin/send/finish, solvers/parallel/
// domain.hpp), so that a sweep computes the cells that read no Exchange ghost while its
// input's halos travel (execution.overlap).
template <typename T>
struct SplitExchange {
  std::function<void(T*)> begin;   // posts receives, queues packing x's boundary layers
  std::function<void()> send;      // waits for the packing alone, sends
  std::function<void(T*)> finish;  // waits for the messages, queues unpacking into x's ghosts
  explicit operator bool() const { return bool(begin); }
};

// Smoothing through deep halos: a distributed level whose fields carry margins along the
// stream axis (solvers/parallel/margins.hpp) runs up to `depth` sweeps as the passes of one
// rank's grid on the extended grid, after one exchange of the iterate's margins, instead of a
// sweep and an exchange at a time; the block's cells get the same bits
// (solvers/parallel/deep_halo.hpp).
template <typename T>
struct DeepSmoothing {
  GridDesc extended;  // the block with its margins
  Margins margins;    // the extended array around a block field
  int depth = 0;      // sweeps one fill of the margins covers
  // Fills the margins of a block field (data() of an allocate_with_margins field) from the
  // neighbours' blocks. Collective over the level's ranks.
  std::function<void(T*)> fill;
  explicit operator bool() const { return bool(fill); }
};

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
    return mode == BoundaryMode::Deck ? *faces_ : zero_faces_;
  }
  // New values for the Deck faces, of the same types, in the constructor's representation
  // (constant: the deck's, lowered here; variable: kernel rules), for this operator and every
  // copy of it. The Homogeneous faces do not change.
  void set_face_values(const BoundaryFaces& faces);
  bool exchanges() const { return bool(exchange_); }
  // The hook that fills the ghosts of Exchange faces (unset: none), and a copy of this
  // operator with another one (e.g. the same exchange, timed).
  const std::function<void(T*)>& exchange_hook() const { return exchange_; }
  HelmholtzOperator with_exchange(std::function<void(T*)> exchange) const {
    HelmholtzOperator op = *this;
    op.exchange_ = std::move(exchange);
    return op;
  }
  // The exchange split (unset: none), and a copy of this operator whose sweeps overlap it:
  // x's physical ghosts filled, its halos begun, the core (cells one layer in from Exchange
  // faces) swept, the halos finished, then the shell; each point's arithmetic is a whole
  // sweep's, so the bits are the same. Where the backend cannot sweep the core alone (CUDA,
  // constant coefficients: only slabs of the slowest axis) the exchange completes and the
  // whole sweep runs. An empty split: none (the exchange completes before each sweep).
  const SplitExchange<T>& split_exchange() const { return split_; }
  HelmholtzOperator with_split_exchange(SplitExchange<T> split) const;
  // A copy of this operator whose fused smoothing runs through deep halos where its fields
  // have the margins (see DeepSmoothing), and otherwise as before.
  const DeepSmoothing<T>& deep_smoothing() const { return deep_; }
  HelmholtzOperator with_deep_smoothing(DeepSmoothing<T> deep) const {
    HelmholtzOperator op = *this;
    op.deep_ = std::move(deep);
    return op;
  }
  // Whether smooth() (fused) runs `sweeps` on these fields through deep halos; and whether the
  // iterate's Exchange ghosts then hold the neighbours' values (sweeps short of the margins'
  // depth: the innermost margin plane is still exact).
  bool smooths_deep(const T* cur, const T* other, const T* f, int sweeps) const;
  bool deep_fills_ghosts(int sweeps) const { return sweeps < deep_.depth; }
  // Deep smoothing: fills the margins of the source x of the sweeps to come (the passes read
  // f in the margins; x's values are left as they are) and returns true; false, nothing done,
  // where x has no margins or the operator no deep smoothing. Collective.
  bool fill_margins(const T* x) const;
  // fill_for_interpolation() over the extended grid: x's margins filled (fill_margins), then
  // the face ghosts of every plane, the margins' too, so that a finer level's deep pass can
  // prolong x into its own margins (prolong_add_and_smooth). False, nothing done, where
  // fill_margins() would be. Collective.
  // `filled`: x's margins hold the neighbours' values already (a deep pass left them): the face
  // ghosts only.
  bool fill_margins_for_interpolation(T* x, bool filled = false) const;
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
  // The coefficients of smooth()'s sweeps, in the order they run.
  std::vector<StencilCoeffs<T>> sweep_coeffs(const std::vector<double>& weights, int sweeps,
                                             bool reverse) const;
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
  // exterior value its sweeps read. `exchanged`: x's Exchange ghosts hold the neighbours'
  // values already (a deep smoothing's result, deep_fills_ghosts): no exchange.
  void fill_for_interpolation(T* x, bool exchanged = false) const;
  // out = form(x) on every cell, x's ghosts filled here (f may be null).
  void sweep(T* x, T* out, const T* f, const SweepForm<T>& form, BoundaryMode mode) const;
  // r = f - A x (x's ghosts filled here; f may be null).
  void residual(T* x, const T* f, T* r, BoundaryMode mode) const;
  // y = A x (x's ghosts filled here).
  void apply(T* x, T* y, BoundaryMode mode) const;
  // `weights.size()`-cycled weighted Jacobi sweeps from *cur (sweep s takes weights[s], or
  // weights[sweeps - 1 - s] when `reverse`); the iterate alternates between *cur and *other
  // and *cur holds it on return. The backend may apply the face rules inside the sweep
  // (whatever reads the iterate's ghosts later fills them), with an exchange too once the
  // Exchange ghosts are in memory. `fused`: one rank's constant sweeps may run as fused
  // passes (Backend::stencil_sweeps, the same bits), and a distributed level's through deep
  // halos (with_deep_smoothing; f's margins filled first: fill_margins); false: one sweep at a
  // time.
  void smooth(T** cur, T** other, const T* f, const std::vector<double>& weights, int sweeps,
              bool reverse, BoundaryMode mode, bool fused = true) const;
  // smooth() (fused) as one pass that leaves *cur's values as they were (the iterate moves to
  // *other, then the pointers swap), measuring ||f - A x|| of the input x = *cur in it
  // (Backend::stencil_sweeps_with_norm). Returns false, having done nothing to the fields,
  // where the backend has no such pass for this grid, operator and sweep count. Deep smoothing:
  // on the extended grid, the block's residual measured (f's margins filled first:
  // fill_margins); collective, the same answer on every rank.
  bool smooth_measuring_residual(T** cur, T** other, const T* f, const std::vector<double>& weights,
                                 int sweeps, BoundaryMode mode, double* residual_norm) const;
  // prolong_add of the correction `coarse` (on gc, `ratio`; its ghosts filled for
  // interpolation) into *cur, then smooth() (fused), in passes that never store the corrected
  // iterate (Backend::prolong_add_sweeps, the same bits): *cur's values are left as they were.
  // Deep smoothing: the pass on the extended grid corrects the margins too, from the coarse
  // field's own margins (filled by the coarser operator's fill_margins_for_interpolation, deep
  // enough for the margins' children); collective, the same answer on every rank. Returns
  // false, having done nothing to the fields, where the backend has no such pass, and on other
  // distributed grids and variable coefficients. `sent` (deep smoothing): where the backend
  // stores plane ranges of the pass (Backend::prolong_add_sweeps_planes, agreed by every
  // rank), the pass is stored in parts: the planes the neighbours need first, then
  // sent(output) (the caller's exchange of the output's margins on the side lane), then the
  // rest; the output's margins are then the exchange's, not the pass's.
  bool prolong_add_and_smooth(const T* coarse, const GridDesc& gc, const std::array<int, 3>& ratio,
                              Prolongation p, T** cur, T** other, const T* f,
                              const std::vector<double>& weights, int sweeps, bool reverse,
                              BoundaryMode mode, const std::function<void(T*)>& sent = {}) const;
  // ||f - A x|| over all cells (all ranks). `fused` and a constant operator without a split
  // exchange: the residual is never stored (Backend::stencil_square_sum); otherwise it is left
  // in `scratch`, a field of this grid.
  double residual_norm(T* x, const T* f, T* scratch, BoundaryMode mode, bool fused = true) const;
  // coarse = the mean of each coarse cell's children of r = f - A x (Backend::
  // restrict_average of residual()), on the coarser grid gc of `ratio`. `fused` and a
  // constant operator without a split exchange: r is never stored (Backend::stencil_restrict,
  // the same bits; x's face ghosts are the backend's to fill or apply in the pass, so they may
  // be left unfilled); otherwise it goes through `scratch`, a field of this grid.
  // `exchanged` as for fill_for_interpolation.
  void residual_restrict(T* x, const T* f, T* coarse, const GridDesc& gc,
                         const std::array<int, 3>& ratio, T* scratch, BoundaryMode mode,
                         bool fused = true, bool exchanged = false) const;
  // The fused residual_restrict (x's Exchange ghosts filled) stored in parts along the stream
  // axis: first the coarse planes [0, lo) and [hi, gc.nz), then sent() (the caller's exchange
  // of those planes, on the side lane), then the rest; the same bits. False, nothing done,
  // where the backend stores no plane ranges of it (Backend::stencil_restrict_planes).
  bool residual_restrict_in_parts(T* x, const T* f, T* coarse, const GridDesc& gc,
                                  const std::array<int, 3>& ratio, BoundaryMode mode, int lo,
                                  int hi, const std::function<void()>& sent) const;

  // The same operator on a coarser grid `space` (transfers between them: kernels/multigrid/):
  // the deck's faces lowered for its spacing (Deck: the same problem on the coarse grid, as
  // full multigrid solves it; Homogeneous: corrections), no exchange; variable coefficients
  // averaged from this grid's (their Deck faces are this one's exterior values): a coarse
  // face's K/H^2 is the mean of the fine faces on it times (h/H)^2 along its normal, a coarse
  // cell's mass the mean of its children's.
  HelmholtzOperator coarsened(FieldSpace<T> space) const;
  // The same on the coarser block `space` of a decomposed grid (a distributed multigrid
  // level; its space sums over ranks): `exchange` fills its Exchange ghosts, and
  // `exchange_double` the Exchange ghosts of a double field of the block, with which the
  // coarsened resistances get their ghost ring from the neighbours (collective, like the
  // boundary faces' mean resistances of a variable operator, summed over ranks).
  HelmholtzOperator coarsened(
      FieldSpace<T> space, std::function<void(T*)> exchange,
      const std::function<void(std::vector<double>&)>& exchange_double) const;
  // Variable: the level's resistances (host) and its mass (host, empty for none).
  const ConductanceLevel& conductance() const { return *arrays_.conductance; }
  std::vector<T> host_mass() const;
  // The variable representation on `space` from a level's resistances (coarse levels on one
  // rank: the agglomerated global level), with `faces`' rules and exterior resistances, this
  // operator's anchoring, no exchange; `mass` empty: none. A decomposed space makes it
  // collective (the boundary faces' mean resistances are summed over ranks).
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
  // The variable-coefficient `form` over this operator's arrays (the heat scale for a Step,
  // the mass for the others); the form's own scalars are the caller's.
  SweepForm<T> variable_form(VariableForm form) const;
  // out = form(x) on the cells of r (all cells: r null); false where the backend cannot
  // restrict this form's sweep to r (nothing done then).
  bool sweep_cells(const T* x, T* out, const T* f, const SweepForm<T>& form,
                   const CellRange* r) const;
  // sweep(); with rules_in_sweep (the smoother: whatever reads x's ghosts later fills them)
  // a constant form may take the face rules inside the sweep (Backend::stencil_with_boundary
  // and stencil_region_with_boundary) instead of a ghost-fill pass.
  void sweep_exchanged(T* x, T* out, const T* f, const SweepForm<T>& form, BoundaryMode mode,
                       bool rules_in_sweep) const;
  // faces(mode) with the Exchange faces closed (the deep smoothing's extended grid).
  BoundaryFaces extended_faces(BoundaryMode mode) const;
  // pass(&a, &b, fe) on the extended arrays of the block fields *cur, *other and f (fe null
  // when f is); where it returns true, *cur and *other take its swaps back to the block.
  template <typename Pass>
  bool on_extended(T** cur, T** other, const T* f, Pass&& pass) const;

  FieldSpace<T> space_{};
  BoundaryFaces deck_faces_{}, zero_faces_{}, interpolation_faces_{};
  // The Deck faces as the kernels apply them, shared by copies (set_face_values).
  std::shared_ptr<BoundaryFaces> faces_ = std::make_shared<BoundaryFaces>();
  double sigma_ = 0, alpha_ = 1, diag_ = 0, k_ = 1;
  bool anchored_ = false;
  std::function<void(T*)> exchange_;
  SplitExchange<T> split_;
  CellRange core_;                // split_: the cells that read no Exchange ghost
  std::vector<CellRange> shell_;  // and the others
  DeepSmoothing<T> deep_;
  OperatorArrays<T> arrays_;
};

}  // namespace heatsolve
