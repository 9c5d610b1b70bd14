// Multigrid choices a deck names (solver.multigrid) and the kernels understand.
#pragma once

namespace heatsolve {

// Prolongation order of the coarse-grid correction (Backend::prolong_add).
enum class Prolongation { Constant, Linear };
// V: one visit per level and cycle; F: a V-cycle started from each coarser level in turn
// (more coarse work, fewer cycles).
enum class MultigridCycle { V, F };
// Weighted Jacobi (omega tuned to the dimension) or Chebyshev-accelerated Jacobi (the
// sweeps' weights are the roots of the Chebyshev polynomial on the smoothing range).
enum class MultigridSmoother { Jacobi, Chebyshev };

// solver.multigrid: the cycle's shape (docs/deck.md).
struct MultigridSettings {
  MultigridCycle cycle = MultigridCycle::V;
  MultigridSmoother smoother = MultigridSmoother::Chebyshev;
  int pre_sweeps = 3, post_sweeps = 3;
  Prolongation prolongation = Prolongation::Linear;
  double coarse_tolerance = 1e-10;  // relative residual of the coarsest level's CG solve
};

}  // namespace heatsolve
