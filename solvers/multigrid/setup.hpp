// A run's multigrid iteration, built on its Sweeper: the float parts of a mixed-precision run
// (execution.precision: mixed, solvers/multigrid/mixed.hpp) or the plan of the ranks' coarse
// levels (solvers/multigrid/agglomeration.hpp), then the hierarchy. Steady solves
// (solvers/steady/multigrid_solve.cpp) and implicit steps (solvers/time/implicit_heat.cpp)
// start through it.
#pragma once

#include <memory>

#include "solvers/multigrid/iteration.hpp"
#include "solvers/run/sweeper.hpp"

namespace heatsolve {

// The iteration on `op` (one of the sweeper's operators, which outlives it) with the deck's
// method and settings, its hierarchy built and the device drained, so that the set-up is
// timed apart from the first cycle (collective under MPI). The planning's host seconds go to
// the iteration's report (MultigridIteration::set_planning_seconds).
template <typename T>
std::unique_ptr<MultigridIteration<T>> make_multigrid_iteration(Sweeper<T>& sweeper,
                                                                const HelmholtzOperator<T>& op);

}  // namespace heatsolve
