// An iterative solve of A u = f on the finest level, one step at a time: multigrid cycles, or
// mg-cg (flexible PCG preconditioned by one V-cycle). Poisson solves (solvers/steady/) and
// implicit heat steps (solvers/time/) drive it and decide when to stop. In mixed precision
// (T = double with MixedParts) the cycles and the preconditioner are a float hierarchy's
// (solvers/multigrid/mixed.hpp): the cycles become iterative refinement of the double u.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/config.hpp"
#include "solvers/footprint.hpp"
#include "solvers/multigrid/mixed.hpp"
#include "solvers/multigrid/multigrid.hpp"
#include "solvers/steady/pcg.hpp"

namespace heatsolve {

template <typename T>
class MultigridIteration {
 public:
  // `method`: Multigrid (cycles) or MultigridCG. `mixed` (T = double only): the correction
  // equation in float on these parts; `agglomeration` is then unused.
  MultigridIteration(const HelmholtzOperator<T>& fine, const MultigridSettings& settings,
                     SolverMethod method, std::unique_ptr<Agglomeration<T>> agglomeration,
                     MixedParts mixed = {});
  ~MultigridIteration();

  // Starts on A u = f from u (the deck's faces); returns ||f - A u|| over all ranks. Plan a
  // full-multigrid pass (plan_fmg) before, not after: fused plain cycles may begin their first
  // cycle here, measuring the norm in its first pass and storing no residual.
  double start(T* u, const T* f);
  // One cycle or CG iteration; returns the residual norm after it (mg-cg: its recurrence).
  // Cycles may begin the next cycle to measure that norm (Multigrid::begin_cycle), so between
  // two iterate() calls on the same fields u and f change only through start().
  double iterate(T* u, const T* f);
  // mg-cg's running residual drifts from f - A u by rounding (in float, below the precision's
  // floor): a step that claims rn / reference <= tolerance is confirmed on the true residual,
  // and CG restarts from it when that misses. In float, and in double once a restart was
  // needed, every iteration returns the true residual (so that a solve at the floor stagnates
  // visibly and stops there, as cycles do). Cycles return the true residual already.
  double confirm(T* u, const T* f, double rn, double reference, double tolerance);
  // f - A u as of the last start() (unless it began a cycle: not for singular problems or
  // with a full-multigrid pass planned), or of the last iterate() of mg-cg, mixed precision or
  // unfused cycles (fused plain cycles measure its norm without storing it).
  const T* residual();
  // With solver.multigrid.cycle: fmg, the next iterate() is a full-multigrid pass (then
  // V-cycles, or CG restarted from it): of the problem (Deck: u's values are replaced; a
  // steady solve from its initial field) or of u's correction (Homogeneous: u's residual as
  // of the start() that follows; an implicit step from the previous one). Otherwise nothing.
  void plan_fmg(BoundaryMode form);

  // The hierarchy's singular problem (no Dirichlet face, sigma 0) and its mean removal
  // (x -= mean(x); otherwise nothing).
  bool singular() const;
  void remove_mean(T* x);
  bool mixed() const { return bool(mixed_); }
  // summary.json's multigrid block: the settings, hierarchy, cycles and their factors, time
  // per phase.
  nlohmann::json report(const Config& cfg, std::int64_t cycles, const std::vector<double>& factors,
                        double setup_seconds) const;
  // Host seconds of planning the hierarchy before it was built (make_multigrid_iteration):
  // the ranks' agglomeration plan, or a mixed run's float parts; in the report's set-up.
  void set_planning_seconds(double seconds) { planning_seconds_ = seconds; }

  // Padded fields the iteration allocates beyond the hierarchy (mg-cg's CG vectors, or the
  // cycles' residual).
  static double footprint_fields(SolverMethod method, MultigridCycle cycle = MultigridCycle::V) {
    if (method == SolverMethod::MultigridCG) return 4;
    return cycle == MultigridCycle::FMG ? 2 : 1;  // + FMG's correction
  }

 private:
  // The hierarchy's description, in whichever precision it runs.
  int levels() const;
  std::string describe() const;
  int coarse_iterations() const;
  // mixed: sqrt(cells) / ||r|| for the next correction's residual.
  void rescale(double rn);
  // The full-multigrid pass plan_fmg() asked for; returns the residual norm after it.
  double fmg_pass(T* u, const T* f);

  const HelmholtzOperator<T>& op_;
  SolverMethod method_;
  MultigridSettings settings_;
  std::unique_ptr<Multigrid<T>> mg_;        // the hierarchy in T (not mixed)
  std::unique_ptr<FloatCorrection> mixed_;  // the float hierarchy (mixed, T = double)
  std::unique_ptr<Array<T>> r_;             // cycles: the residual
  std::unique_ptr<Array<T>> ones_;          // mixed and singular: a field of ones in T
  std::unique_ptr<Array<T>> e_;             // cycles: FMG's correction (allocated at first use)
  bool fmg_next_ = false;
  double planning_seconds_ = 0;
  BoundaryMode fmg_form_ = BoundaryMode::Deck;
  std::unique_ptr<Pcg<T>> cg_;  // mg-cg
  // mg-cg: return the true residual at every iteration (float; double after a restart).
  bool track_true_ = false;
  // A recurrence this far below the true residual has left it: restart from the true one.
  static constexpr double kGapFactor = 10.0;
};

// Full multigrid's device scratch (Multigrid::interpolation_scratch_bytes) in a solver's
// footprint, where the deck asks for full multigrid.
template <typename T>
void add_fmg_scratch(Footprint& fp, const Config& cfg, const GridDesc& local, bool decomposed) {
  if (cfg.multigrid.cycle != MultigridCycle::FMG) return;
  fp.device_bytes += Multigrid<T>::interpolation_scratch_bytes(local, decomposed);
  fp.device_what = "full multigrid's interpolation scratch";
}

}  // namespace heatsolve
