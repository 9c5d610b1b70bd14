// Geometric multigrid for A u = f with A = sigma I - Lap (7-point, cell-centred) on the
// stencil ladder: the smoother is the backend's Jacobi sweep with per-sweep weights, the
// residual the same sweep with other coefficients, the transfers Backend::restrict_average
// and prolong_add, and the coarsest level is solved by conjugate gradients. Poisson solves
// use sigma = 0; an implicit heat step sigma = 1 / (theta dt alpha).
//
// Levels halve every axis that is even, at least 4 cells long and not much coarser than the
// finest axis (semi-coarsening keeps anisotropic cells near isotropic, as PFMG does); the
// hierarchy stops when no axis can be halved. Coarse levels solve for corrections, with the
// faces' types and zero values. The finest level may be one rank's block of a decomposed
// grid: its ghost cells and global sums come from the caller (Hooks); coarse levels are then
// gathered onto rank 0 (Agglomeration) and solved there.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/multigrid.hpp"
#include "kernels/backend.hpp"

namespace heatsolve {

// Moves the first coarse level of a decomposed grid to rank 0 and its correction back.
// gather: each rank's local coarse interior (padded, local grid) -> the global coarse grid
// (padded) on rank 0. scatter: rank 0's global coarse field (with ghosts filled) -> each
// rank's local block including one ghost layer. Host arrays.
template <typename T>
struct Agglomeration {
  GridDesc global_coarse;             // the whole first coarse level
  BoundaryFaces global_zero_faces{};  // the global grid's face types, zero values
  // Rank 0: a backend of its own for the coarse levels, so that tuning their kernels (CUDA
  // "auto") does not wait for the other ranks to agree on timings they never take.
  std::unique_ptr<Backend<T>> backend;
  bool root = false;  // this rank solves the coarse levels
  std::function<void(const std::vector<T>& local, std::vector<T>& global)> gather;
  std::function<void(const std::vector<T>& global, std::vector<T>& local)> scatter;
};

template <typename T>
class Multigrid {
 public:
  struct Hooks {
    // Fills x's ghost cells of faces shared with other ranks (halo exchange) on the finest
    // level; null when there are none (the face rules are applied by the Multigrid).
    std::function<void(T* x)> exchange;
    // Sum over ranks (identity when serial).
    std::function<double(double)> global_sum;
  };
  struct Timing {
    double smooth = 0, transfer = 0, coarse = 0;  // seconds, all levels
    std::vector<double> per_level;                // smoothing + residual per level
  };

  // `singular`: no Dirichlet face and sigma == 0 (pure Neumann/periodic): the mean of the
  // solution is fixed to zero and right-hand sides are projected onto zero mean.
  Multigrid(Backend<T>& backend, const GridDesc& fine, const BoundaryFaces& faces, double sigma,
            const MultigridSettings& settings, Hooks hooks, bool singular,
            std::unique_ptr<Agglomeration<T>> agglomeration = nullptr);

  // One cycle (settings.cycle) on A u = f on the finest level; f null means zero.
  void cycle(T* u, const T* f);
  // e = one V-cycle from zero on A e = r with zero face values (the mg-cg preconditioner).
  void precondition(const T* r, T* e);
  // r = f - A u (u's ghosts filled with the deck's values); returns ||r||_2 over all ranks.
  double residual(T* u, const T* f, T* r);
  // y = A x with zero face values.
  void apply(T* x, T* y);
  double dot(const T* a, const T* b);
  // x -= mean(x) (singular problems).
  void remove_mean(T* x);
  bool singular() const { return singular_; }

  int levels() const { return int(levels_.size()); }
  // "64x64x64 -> 32x32x32 -> ... -> 2x2x2"
  std::string describe() const;
  const Timing& timing() const { return timing_; }
  int coarse_iterations() const { return coarse_iterations_; }

 private:
  struct Level {
    GridDesc g;
    std::array<int, 3> ratio{1, 1, 1};  // to the next coarser level
    std::unique_ptr<Array<T>> u, f, r, tmp, p, q, ones;
    double diag = 0;  // sigma + sum_d 2/h_d^2
  };
  void build(const GridDesc& fine);
  void fill(int l, T* x);
  // `sweeps` weighted Jacobi sweeps from *cur; the buffers alternate between *cur and *other
  // (no copy back), *cur holds the iterate on return.
  void smooth(int l, T** cur, T** other, const T* f, int sweeps, bool reverse);
  const BoundaryFaces& level_faces(int l) const {
    return l == 0 && !homogeneous_fine_ ? faces_ : zero_faces_;
  }
  void level_residual(int l, T* x, const T* f, T* r);
  void visit(int l, T* x, const T* f, MultigridCycle type);
  void coarse_solve(int l, T* x, const T* f);
  void axpby(int l, T* y, double a, const T* x, double b);  // y = a y + b x
  void zero(int l, T* x);
  double level_dot(int l, const T* a, const T* b);
  void level_remove_mean(int l, T* x);
  StencilCoeffs<T> jacobi(int l, double omega) const;
  StencilCoeffs<T> residual_coeffs(int l) const;
  void agglomerated_correction(T* x, MultigridCycle type);
  // cycle() on this hierarchy's finest level with an explicit cycle type.
  void run(T* u, const T* f, MultigridCycle type);

  Backend<T>& backend_;
  BoundaryFaces faces_, zero_faces_;
  double sigma_;
  MultigridSettings settings_;
  Hooks hooks_;
  bool singular_;
  bool homogeneous_fine_ = false;  // level 0 fills with zero face values (precondition)
  bool smooth_finest_ = true;      // false: a gathered fine level that the ranks smoothed
  std::vector<Level> levels_;      // [0]: the finest (fields are the caller's)
  std::unique_ptr<Agglomeration<T>> agg_;
  // Agglomerated runs: the coarse hierarchy after gathering (rank 0 only) and host staging.
  std::unique_ptr<Multigrid<T>> coarse_;
  std::vector<T> stage_local_, stage_global_;
  std::unique_ptr<Array<T>> agg_rhs_, agg_corr_;
  std::vector<double> weights_;  // smoothing weights, one per sweep (Chebyshev) or constant
  Timing timing_;
  int coarse_iterations_ = 0;
};

// The grid of the next coarser level and the ratio per axis; ratio {1,1,1} when no axis can
// be halved.
GridDesc coarsen(const GridDesc& g, std::array<int, 3>* ratio);

}  // namespace heatsolve
