// The float hierarchy's parts of a mixed-precision run (execution.precision: mixed,
// solvers/multigrid/mixed.hpp) on a run's Sweeper.
#pragma once

#include "solvers/multigrid/mixed.hpp"
#include "solvers/run/sweeper.hpp"

namespace heatsolve {

// A float backend of the sweeper's kind on its device, the float halo exchange of its block
// and the float agglomeration of its ranks (collective under MPI); empty unless the run is
// mixed (Config::mixed_precision, T = double).
template <typename T>
MixedParts mixed_parts(Sweeper<T>& sweeper);

}  // namespace heatsolve
