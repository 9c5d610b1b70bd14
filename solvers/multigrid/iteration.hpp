// An iterative solve of A u = f on the finest level, one step at a time: multigrid cycles, or
// mg-cg (flexible PCG preconditioned by one V-cycle). Poisson solves (solvers/steady/) and
// implicit heat steps (solvers/time/) drive it and decide when to stop.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "io/config.hpp"
#include "solvers/multigrid/multigrid.hpp"
#include "solvers/steady/pcg.hpp"

namespace heatsolve {

template <typename T>
class MultigridIteration {
 public:
  // `method`: Multigrid (cycles) or MultigridCG.
  MultigridIteration(const HelmholtzOperator<T>& fine, const MultigridSettings& settings,
                     SolverMethod method, std::unique_ptr<Agglomeration<T>> agglomeration);

  // Starts on A u = f from u (the deck's faces); returns ||f - A u|| over all ranks.
  double start(T* u, const T* f);
  // One cycle or CG iteration; returns the residual norm after it (mg-cg: its recurrence).
  double iterate(T* u, const T* f);
  // mg-cg's running residual drifts from f - A u by rounding (in float, below the precision's
  // floor): a step that claims rn / reference <= tolerance is confirmed on the true residual,
  // and CG restarts from it when that misses. Cycles return the true residual already.
  double confirm(T* u, const T* f, double rn, double reference, double tolerance);
  // f - A u as of the last start() or iterate().
  const T* residual();

  Multigrid<T>& multigrid() { return *mg_; }
  const Multigrid<T>& multigrid() const { return *mg_; }
  // summary.json's multigrid block: the settings, hierarchy, cycles and their factors, time
  // per phase.
  nlohmann::json report(const Config& cfg, std::int64_t cycles, const std::vector<double>& factors,
                        double setup_seconds) const;

  // Padded fields the iteration allocates beyond the hierarchy (mg-cg's CG vectors, or the
  // cycles' residual).
  static double footprint_fields(SolverMethod method) {
    return method == SolverMethod::MultigridCG ? 4 : 1;
  }

 private:
  const HelmholtzOperator<T>& op_;
  SolverMethod method_;
  std::unique_ptr<Multigrid<T>> mg_;
  std::unique_ptr<Array<T>> r_;  // cycles: the residual
  std::unique_ptr<Pcg<T>> cg_;   // mg-cg
};

}  // namespace heatsolve
