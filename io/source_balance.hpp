// The compatibility condition of a steady problem without a fixed value on its boundary
// (docs/deck.md "Singular problems"): -div(k grad u) = f with only flux, insulated or periodic
// faces has a solution only when the sources balance the heat flowing in through the faces,
//
//   sum over cells of f dV  +  sum over faces of the inflow  =  0,
//
// the inflow of a neumann face being k du/dn dA (k of the cell at the face, du/dn = flux) and
// of a heat_flux face value dA; then it has one up to a constant. Evaluated on the grid as
// the solvers discretise it (f at the cell centres), per axis, in long double.
#pragma once

#include <cmath>

#include "io/config.hpp"

namespace heatsolve {

struct SourceBalance {
  // No face fixes the level: no dirichlet face, no convective face with h > 0 (the problem
  // is singular; the sums below are what its solvability depends on).
  bool singular = false;
  double source = 0;     // sum of f dV over the cells (every source term; t = 0)
  double inflow = 0;     // sum of the neumann and heat_flux faces' inflow (t = 0)
  double magnitude = 0;  // sum of |f| dV plus sum of |inflow| of each face: the scale of both
  double imbalance() const { return source + inflow; }
  // |imbalance| <= tolerance * magnitude (a problem with no source and no inflow balances).
  bool balanced(double tolerance = kTolerance) const {
    return std::abs(imbalance()) <= tolerance * magnitude;
  }
  static constexpr double kTolerance = 1e-12;
};

// The balance of cfg's sources and faces (any problem type; only Poisson decks need it).
SourceBalance source_balance(const Config& cfg);

}  // namespace heatsolve
