// Multigrid choices a deck names (solver.multigrid) and the kernels understand.
#pragma once

#include <algorithm>

namespace heatsolve {

// Prolongation order of the coarse-grid correction (Backend::prolong_add). Cubic (exact for
// cubics per axis) is full multigrid's interpolation of a coarse solution
// (Backend::interpolate): its order must exceed the discretisation's (2) for one pass to land
// at the discretisation error; not a choice of the deck's.
enum class Prolongation { Constant, Linear, Cubic };
// V: one visit per level and cycle; F: a V-cycle started from each coarser level in turn
// (more coarse work, fewer cycles); FMG: full multigrid (nested iteration from the coarsest
// level: solved there, interpolated up, one V-cycle per level) as the first pass, V-cycles
// after it.
enum class MultigridCycle { V, F, FMG };
// Weighted Jacobi (omega tuned to the dimension) or Chebyshev-accelerated Jacobi (the
// sweeps' weights are the roots of the Chebyshev polynomial on the smoothing range).
enum class MultigridSmoother { Jacobi, Chebyshev };

// solver.multigrid.agglomerate_below: auto.
inline constexpr long long kAgglomerateAuto = -1;

// solver.multigrid: the cycle's shape (docs/deck.md).
struct MultigridSettings {
  MultigridCycle cycle = MultigridCycle::V;
  MultigridSmoother smoother = MultigridSmoother::Chebyshev;
  int pre_sweeps = 3, post_sweeps = 3;
  // Sweeps each way, at least, on the small coarse levels (solvers/multigrid) where
  // the cycle smooths (a variable V-cycle; 0: the levels' own pre/post sweeps). 8 takes a 3D
  // Poisson V(3,3) cycle from a factor of 0.137 to 0.068 (12 to 9 cycles to 1e-10).
  int coarse_sweeps = 8;
  Prolongation prolongation = Prolongation::Linear;
  double coarse_tolerance = 1e-10;  // relative residual of the coarsest level's CG solve
  // Decomposed grids: coarse levels stay distributed over the ranks (each keeps its block)
  // while they have at least this many cells in all; the first smaller one is gathered and
  // solved, with everything coarser, on every rank (0: distributed as far as blocks halve;
  // kAgglomerateAuto: chosen by where the gathered level travels, solvers/multigrid).
  long long agglomerate_below = kAgglomerateAuto;
  // Consecutive smoothing sweeps of a level in one fused pass where the backend can
  // (Backend::stencil_sweeps: CUDA temporal blocking, the same bits), and the residual
  // restricted without storing it (Backend::stencil_restrict); false: one sweep at a time
  // (benchmarks compare the two).
  bool fused = true;
  // A cycle's levels below 128^3 cells on one rank's memory (a serial hierarchy's, the
  // gathered levels) are recorded once and replayed as one launch where the backend can (CUDA
  // graphs: their kernels are short and launch-bound), the same bits; false: launched one by
  // one (tests compare the two).
  bool replay = true;

  // Decomposed grids split along the stream axis alone: the depth of the margins a run's fields
  // carry (solvers/parallel/margins.hpp), so that a distributed level's smoothing runs as one
  // pass after one exchange of margins this deep. One more than the sweeps: the smoothed
  // iterate's Exchange ghosts (the innermost margin plane) then hold the neighbours' values,
  // and the residual and the interpolation that read them need no exchange of their own.
  int margin_depth() const { return std::max(pre_sweeps, post_sweeps) + 1; }
};

}  // namespace heatsolve
