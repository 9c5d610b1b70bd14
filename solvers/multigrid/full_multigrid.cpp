// Full multigrid (solvers/multigrid/multigrid.hpp, Multigrid::fmg): nested iteration from the
// bottom of the hierarchy (the coarsest level solved, or on a decomposed grid the gathered
// levels' own pass), interpolated up level by level with a higher order, a V-cycle on each.
#include "solvers/multigrid/multigrid.hpp"
#include "solvers/multigrid/phase_timer.hpp"

namespace heatsolve {

using multigrid_detail::PhaseTimer;

template <typename T>
void Multigrid<T>::fmg(T* u, const T* f, BoundaryMode m) {
  pending_ = {};
  forget_filled_margins(0);
  Backend<T>& backend = levels_[0].op.backend();
  // The bottom of the nested iteration: the coarsest level, solved; on a decomposed grid the
  // last distributed level, started from the gathered levels' own pass.
  const int bottom = agg_ ? last_distributed() : int(levels_.size()) - 1;
  const auto x = [&](int l) { return l == 0 ? u : levels_[l].u->data(); };
  const auto rhs = [&](int l) -> const T* { return l == 0 ? f : levels_[l].f->data(); };
  // The right side on every level: the mean of the children (a source density, and the
  // fluxes of Neumann and heat-flux faces that variable coefficients carry in it). Blocks of
  // distributed levels halve evenly: each rank averages its own.
  {
    PhaseTimer<T> t(clock_, &timing_.transfer, nullptr, timed_);
    for (int l = 0; l < bottom; ++l) {
      T* coarse = levels_[l + 1].f->data();
      if (rhs(l))
        backend.restrict_average(rhs(l), grid(l), coarse, grid(l + 1), levels_[l].ratio);
      else
        levels_[l + 1].op.space().zero(coarse);
    }
  }
  levels_[bottom].op.space().zero(x(bottom));
  if (agg_) {
    // The bottom's residual from zero restricted and gathered, the gathered levels' own full
    // multigrid pass on it (zero faces: the deck's face values are in the residual),
    // prolongated; then a V-cycle of the bottom level.
    restrict_residual(bottom, x(bottom), rhs(bottom), m, false);
    agglomerated_correction(bottom, x(bottom), MultigridCycle::FMG);
    const int cycles = bottom > 0 ? 2 : 1;
    for (int c = 0; c < cycles; ++c) visit(bottom, x(bottom), rhs(bottom), MultigridCycle::V, m);
  } else {
    coarse_solve(bottom, x(bottom), rhs(bottom), m);
  }
  // The interpolation of a solution: cubic where the corrections are linear (smooth
  // coefficients); variable coefficients keep their own order (a solution kinks at a jump).
  // On a distributed level the coarse block's ghosts come from the neighbours and the cubic
  // stencils at the block's edges are one-sided, as at walls (one ghost layer).
  const Prolongation order =
      settings_.prolongation == Prolongation::Linear ? Prolongation::Cubic : settings_.prolongation;
  for (int l = bottom - 1; l >= 0; --l) {
    {
      PhaseTimer<T> t(clock_, &timing_.transfer, nullptr, timed_);
      // The coarse solution's ghosts: the problem's faces, or a correction's mirror rules.
      if (m == BoundaryMode::Deck)
        levels_[l + 1].op.fill(x(l + 1), m);
      else
        levels_[l + 1].op.fill_for_interpolation(x(l + 1));
      backend.interpolate(x(l + 1), grid(l + 1), x(l), grid(l), levels_[l].ratio, order);
    }
    visit(l, x(l), rhs(l), MultigridCycle::V, m);
  }
  if (singular_) level_remove_mean(0, u);
  clock_.settle(false);
}

template void Multigrid<float>::fmg(float*, const float*, BoundaryMode);
template void Multigrid<double>::fmg(double*, const double*, BoundaryMode);

}  // namespace heatsolve
