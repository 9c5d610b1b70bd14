// The fields of a run and the machinery that sweeps them: the backend, the solution u and its
// partner v, the deck's source f, the halo exchange (overlapped with the sweep's core when
// execution.overlap), temporal blocking (fused passes; deep halos under MPI) and reductions
// over ranks. Explicit heat, Jacobi and Anderson sweep through it; multigrid and PCG reach
// its fields through their operator (solvers/operator/). Knows no method and no output.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "solvers/operator/field_space.hpp"
#include "solvers/operator/helmholtz.hpp"
#include "solvers/parallel/deep_halo.hpp"
#include "solvers/parallel/margins.hpp"
#include "solvers/solver.hpp"

namespace heatsolve {

template <typename T>
class Sweeper {
 public:
  // Allocates u and v (the deck's initial field) and f (the deck's source, if any) on the
  // backend the deck asks for, and tunes its kernels for the block. Inputs that change with
  // time start at t = 0 (set_inputs moves them).
  Sweeper(const Config& cfg, RunContext& ctx);
  ~Sweeper();
  Sweeper(const Sweeper&) = delete;
  Sweeper& operator=(const Sweeper&) = delete;

  const Config& config() const { return cfg_; }
  const RunContext& context() const { return ctx_; }
  Backend<T>& backend() { return *backend_; }
  const GridDesc& grid() const { return g_; }  // this rank's block
  const Domain& domain() const { return ctx_.domain; }
  // The block's faces as the kernels apply them: the deck's, lowered for the materials
  // (solvers/problem/materials.hpp), Exchange where a neighbour rank fills the ghosts; their
  // values at the time of the last set_inputs (t = 0 before any).
  const BoundaryFaces& faces() const { return faces_; }
  // Materials by region: the variable-coefficient operator (no fused passes).
  bool variable() const { return bool(wx_); }
  // Variable coefficients: rho cp per cell (padded, host) and the cells' resistances.
  const std::vector<T>& capacity() const { return capacity_; }
  const ConductanceLevel& conductance() const { return *conductance_; }
  // The operator of this block: A = sigma C - div(K grad .) (uniform material: sigma - alpha
  // Lap with alpha = k/(rho cp) for an explicit step, 1 otherwise). `explicit_step`: it
  // carries the explicit step's 1/C; `exchange`: it fills Exchange ghosts itself (multigrid,
  // PCG; sweeps through the Sweeper exchange there).
  // With execution.overlap and exchange, the operator's sweeps overlap the exchange with
  // their core (HelmholtzOperator::with_split_exchange).
  HelmholtzOperator<T> make_operator(double sigma, bool explicit_step, bool exchange);
  std::int64_t global_points() const { return global_points_; }
  const std::string& kernel() const { return kernel_; }

  // ---- Inputs over time (docs/deck.md "Time-varying inputs") -----------------------------
  // Whether a face value or a source term of a heat deck changes with time (tables): each
  // step then sets them (set_inputs), and sweeps run single steps (fused_depth() is 1).
  bool inputs_vary() const { return faces_vary_ || source_varies_; }
  // The inputs of one step: the faces' values at `faces_time` (the ghost rules of sweep() and
  // fill_ghosts(), faces()), and the source f as (1 - w) S(t0) + w S(t1), each term's value and
  // amplitude mixed so (with regions f holds the flux of neumann and heat_flux faces too, their
  // values mixed the same way). What does not vary, or is already at those times, is kept.
  // A uniform material's one separable term is rescaled in place (Backend::rescale_source);
  // otherwise f is refilled on the host: every term's fill_shape (the constant terms' sum kept
  // from the start) plus the faces' flux.
  void set_inputs(double faces_time, double t0, double t1, double w);
  void set_inputs(double t) { set_inputs(t, t, t, 0.0); }
  // The faces' values at time t only (the source is left as it is: whoever reads the faces
  // alone, such as the diagnostics of a uniform material, spares a refill).
  void set_faces(double t);
  // The faces an operator of this block takes at time t, in make_operator's representation (a
  // uniform material: the deck's, with Exchange faces; regions: the kernel rules), for
  // HelmholtzOperator::set_face_values.
  BoundaryFaces operator_faces(double t) const;
  // The block's deck faces (Exchange kept) with their values at time t (diagnostics' flows).
  BoundaryFaces deck_faces(double t) const { return deck_faces_at(t, t, 0.0); }

  // ---- Fields -----------------------------------------------------------------------------
  Array<T>& u() { return *u_; }
  Array<T>& v() { return *v_; }
  void swap_uv() { std::swap(u_, v_); }
  // Exchanges u (or v) with another field of the block's size (a history buffer).
  void swap_u(std::unique_ptr<Array<T>>& other) { std::swap(u_, other); }
  void swap_v(std::unique_ptr<Array<T>>& other) { std::swap(v_, other); }
  const T* source() const { return f_ ? f_->data() : nullptr; }
  // The source field, allocated as zeros where the deck has none.
  T* source_or_zero();
  // Replaces the source's values (host, padded): the backend forgets its separable form, and
  // set_inputs leaves f as it is from then on.
  void set_source(const std::vector<T>& padded);
  // f -= shift, rounded in T from double (a singular problem's compatibility shift).
  void shift_source(double shift);
  // x -= mean of x over all ranks' cells, rounded in T from double (a singular problem's
  // solution of zero mean); through the host, for the few times a solve needs it.
  void remove_mean(Array<T>& x);
  // A field of the block (with the run's margins, solvers/parallel/margins.hpp).
  std::unique_ptr<Array<T>> allocate() const {
    return allocate_with_margins(*backend_, g_.padded_size(), margins_);
  }
  // The deck's initial field on the block (padded, ghosts 0), as u started: a shape's values
  // at the cell centres, or the block of an `initial: {type: file}` dataset
  // (io/initial_field.hpp).
  std::vector<T> initial_field() const;
  // The block's interior of u, x fastest (the newest state: after sync_state()).
  std::vector<T> interior();
  // Replaces u's interior (x fastest, raw values of T) from a checkpoint; ghosts are kept.
  void load_interior(const std::vector<unsigned char>& bytes);

  // ---- Sums over ranks ------------------------------------------------------------------------
  double global_reduce(double local, ReduceOp op) const;
  // global_reduce(v, Sum) of each value, in one message.
  void global_sum_each(std::vector<double>& values) const;
  double norm2(double local_sum_squares) const {
    return std::sqrt(global_reduce(local_sum_squares, ReduceOp::SumSquares));
  }
  // The block's fields with sums over ranks.
  FieldSpace<T> space();
  // Fills the ghosts of Exchange faces of x (settling an exchange in flight first); unset
  // when the block has no peers.
  std::function<void(T*)> exchange_hook();

  // ---- Sweeps ----------------------------------------------------------------------------
  // Sets the halo exchange up with a first exchange of u (buffers, pinned memory, IPC
  // mappings, MPI connections), so that the run's clock measures steps.
  void warm_up() {
    if (exchanger_) fill_ghosts(u_->data());
  }
  // Halo exchange (finishing the one in flight for u, if any), then physical boundaries
  // (unless `physical` is false).
  void fill_ghosts(T* u, bool physical = true);
  // Completes a halo exchange left in flight by sweep() (before the run ends, or before
  // another buffer's exchange).
  void settle();
  // out = stencil(u) with u's ghosts filled first; with execution.overlap and peers, out's
  // halos are sent while its core is computed and left in flight. With rules_in_sweep
  // (callers that never read u's ghosts afterwards) the backend may apply the physical face
  // rules inside the sweep instead of writing u's ghosts.
  void sweep(T* u, T* out, const T* f, const StencilCoeffs<T>& c, bool rules_in_sweep = false);
  // The same for either representation (variable coefficients: the face rules are always
  // written into u's ghosts).
  void sweep(T* u, T* out, const T* f, const SweepForm<T>& form, bool rules_in_sweep = false);

  // ---- Temporal blocking ------------------------------------------------------------------
  // The steps per fused pass this run takes (1: single steps), decided at the first call.
  // Under MPI the ranks agree on it and it sets up the deep halo (solvers/parallel/
  // deep_halo.hpp); with time_block: auto the ranks first time both ways, exchanges
  // included.
  int fused_depth(const T* f, const StencilCoeffs<T>& c);
  int fused_depth(const T* f, const SweepForm<T>& form);
  int fused_depth_taken() const { return std::max(1, fused_depth_); }
  // Advances u by `steps` (> 1) steps in fused passes: the backend's stencil_steps on the
  // block, or under MPI on the deep halo's extended grid, which then holds the newest state.
  void fused_steps(const T* f, const StencilCoeffs<T>& c, int steps);
  // Brings u up to date when the deep halo's extended grid holds the newest state.
  void sync_state();

  // The halo exchange's part of RunResult (transport, depth, trial, set-up time).
  void describe(RunResult& r) const;
  // Set-up of the first fused pass under MPI, kept out of the run's wall time.
  double setup_seconds() const { return halo_setup_seconds_; }

 private:
  int choose_fused_depth(const T* f, const StencilCoeffs<T>& c);
  std::array<double, 2> time_single_and_fused(const T* f, const StencilCoeffs<T>& c, int passes);
  // One pass of k steps on the extended grid (the newest state stays in deep_u_). Its margins
  // come from the exchange the previous pass overlapped, else from one first. Where the
  // stream axis alone is split and the backend stores plane ranges, the planes the
  // neighbours need are stored first and the next pass's exchange runs on the side lane
  // while the other planes are computed (OverlapPlanes).
  void deep_pass(const T* fe, const StencilCoeffs<T>& c, int k);
  HelmholtzOperator<T> make_operator_no_overlap(double sigma, bool explicit_step, bool exchange);

  // The domain's deck faces (Exchange kept) with each table's value mixed as set_inputs does.
  BoundaryFaces deck_faces_at(double t0, double t1, double w) const;
  // Deck faces lowered to the kernels' rules (faces_).
  BoundaryFaces kernel_faces(const BoundaryFaces& deck) const;
  // A source term with its value and amplitude mixed between t0 and t1 and scaled as the
  // kernels take it.
  Shape term_at(const Shape& term, double t0, double t1, double w) const;
  // f from the terms (and, with regions, the faces' flux) mixed between t0 and t1.
  void fill_source(double t0, double t1, double w);

  const Config& cfg_;
  RunContext& ctx_;
  GridDesc g_;
  std::unique_ptr<Backend<T>> backend_;
  std::unique_ptr<Array<T>> u_, v_, f_;
  Margins margins_;  // around every field of the block (decomposed along the stream axis)
  BoundaryFaces faces_{};
  // The deck's source terms (tables kept) and the factor the kernels take them with: 1/(rho cp)
  // for heat, 1/k for Poisson on a uniform physical material, else 1.
  std::vector<Shape> terms_;
  double source_factor_ = 1;
  // A uniform material with one term: f is its separable form's (generated by a device backend
  // in its sweeps), form_ its factors. Otherwise f holds the sum of the terms' fill_shape
  // values (plus the flux faces' with regions), fixed_terms_ the constant terms' part on the
  // host while some term varies.
  bool separable_ = false;
  SeparableSource<T> form_;
  // Poisson with margins: the grid whose view of f (from margins_.before elements early) is
  // described with the same form, the extended grid of multigrid's deep-halo passes, so that
  // they generate the source too (the margins hold the neighbours' values of the same form).
  // Poisson's source does not vary: nothing rescales it.
  std::optional<GridDesc> extended_g_;
  // The deck's separable source (at t = 0) over a domain's cells.
  SeparableSource<T> deck_form(const Domain& domain) const;
  std::vector<double> fixed_terms_;
  bool faces_vary_ = false, source_varies_ = false;
  double faces_time_ = 0;                     // the faces' values are at this time
  std::array<double, 3> source_at_{0, 0, 0};  // f is at (t0, t1, w)
  // Variable coefficients (materials by region): face coefficients and rho cp per cell.
  std::shared_ptr<Array<T>> wx_, wy_, wz_;
  std::vector<T> capacity_;
  std::shared_ptr<const ConductanceLevel> conductance_;
  Exterior exterior_{};
  bool anchored_ = false;
  std::string kernel_;
  HaloExchanger<T>* exchanger_ = nullptr;
  bool overlap_ = false;  // execution.overlap and at least one Exchange face
  T* pending_ = nullptr;  // buffer whose halo exchange sweep() left in flight
  // Deep halo (temporal blocking under MPI): the extended grid's fields, its face rules, and
  // whether deep_u_ is newer than u_.
  std::unique_ptr<DeepHaloExchanger<T>> deep_;
  std::unique_ptr<Array<T>> deep_u_, deep_v_, deep_f_;
  BoundaryFaces deep_faces_{};
  bool deep_newer_ = false;
  bool deep_ready_ = false;    // deep_u_'s margins hold the neighbours' cells (an overlapped pass)
  bool overlap_deep_ = false;  // overlap_planes() applies to the geometry
  OverlapPlanes deep_parts_;
  int fused_depth_ = 0;                     // 0: not decided yet
  std::array<double, 2> trial_ms_{-1, -1};  // auto under MPI: ms a step, single and fused
  double halo_setup_seconds_ = 0;           // fused_depth's set-up under MPI
  CellRange core_;
  std::vector<CellRange> shell_;
  Reducer serial_reducer_;
  std::int64_t global_points_ = 0;
};

}  // namespace heatsolve
