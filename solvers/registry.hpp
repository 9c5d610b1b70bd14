// The one map from a deck's problem, scheme and method to the class that solves it and to
// what it keeps in memory. Adding a solver: one class (solvers/steady/ or solvers/time/)
// implementing Solver<T> with a static footprint(), and one row in solvers/registry.cpp.
#pragma once

#include <memory>
#include <vector>

#include "solvers/footprint.hpp"
#include "solvers/run/solver_interface.hpp"
#include "solvers/run/sweeper.hpp"

namespace heatsolve {

struct SolverEntry {
  const char* name;                    // for messages and summary.json
  bool (*matches)(const Config& cfg);  // this deck's problem / scheme / method
  std::unique_ptr<Solver<float>> (*make_float)(Sweeper<float>& sweeper);
  std::unique_ptr<Solver<double>> (*make_double)(Sweeper<double>& sweeper);
  // Beyond u, v and the source: the fields on a rank's block `local` (decomposed: the grid is
  // split over several ranks).
  Footprint (*footprint)(const Config& cfg, const GridDesc& local, bool decomposed);
};

const std::vector<SolverEntry>& solver_registry();
// The entry for cfg; std::logic_error when none matches (the deck validator prevents it).
const SolverEntry& find_solver(const Config& cfg);

template <typename T>
std::unique_ptr<Solver<T>> make_solver(const Config& cfg, Sweeper<T>& sweeper);

// Everything a run keeps on its backend per rank, in padded fields of the block: u, v, the
// source, and the solver's own.
Footprint run_footprint(const Config& cfg, const GridDesc& local, bool decomposed);

}  // namespace heatsolve
