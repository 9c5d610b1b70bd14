// Section reader for `solver`: method, tolerances, Anderson acceleration and multigrid settings.
#include <fmt/format.h>

#include "io/deck/reader.hpp"

namespace heatsolve::deck_reader {

void read_solver(const DeckNode& n, Config& cfg) {
  const MapView v(n, "solver",
                  {"method", "tolerance", "max_iterations", "check_every", "singular", "anderson",
                   "multigrid"});
  if (const DeckNode* m = v.get("method"))
    cfg.method = choice(*m, v.path("method"),
                        {SolverMethod::Jacobi, SolverMethod::Anderson, SolverMethod::Multigrid,
                         SolverMethod::MultigridCG});
  if (cfg.problem == ProblemType::Heat && cfg.scheme != TimeScheme::Explicit) {
    // Implicit steps are solved by multigrid; a deck without a method gets it.
    if (const DeckNode* m = v.get("method")) {
      if (cfg.method != SolverMethod::Multigrid && cfg.method != SolverMethod::MultigridCG)
        fail(m->loc, fmt::format("solver.method: time.scheme {} solves each step by multigrid: "
                                 "expected 'multigrid' or 'mg-cg', got '{}'",
                                 to_string(cfg.scheme), m->scalar));
    } else {
      cfg.method = SolverMethod::Multigrid;
    }
  }
  cfg.tolerance = v.optional("tolerance", cfg.tolerance, positive_number);
  cfg.max_iterations = v.optional("max_iterations", cfg.max_iterations, positive_integer);
  cfg.check_every = v.optional("check_every", cfg.check_every, positive_int);
  cfg.singular = v.optional("singular", cfg.singular, [](const DeckNode& e, const std::string& w) {
    return choice(e, w, {SingularPolicy::Refuse, SingularPolicy::CompatibleMean});
  });
  if (const DeckNode* a = v.get("anderson")) {
    const MapView av(*a, v.path("anderson"), {"depth", "damping", "every"});
    cfg.anderson_depth = av.optional("depth", cfg.anderson_depth, positive_int);
    cfg.anderson_damping = av.optional("damping", cfg.anderson_damping, fraction);
    cfg.anderson_every =
        av.optional("every", cfg.anderson_every, [](const DeckNode& e, const std::string& w) {
          return static_cast<int>(integer(e, w, 1, 1000));
        });
  }
  // Materials by region: constant prolongation by default. Linear interpolation of a
  // correction across a jump in conductivity is wrong where the solution kinks; with it mg-cg
  // needed 45 iterations on a 64^3 sphere of k 1000 in k 1, with constant ones 16 (docs/deck.md).
  if (!cfg.material.uniform()) cfg.multigrid.prolongation = Prolongation::Constant;
  if (const DeckNode* mg = v.get("multigrid")) {
    const MapView mv(*mg, v.path("multigrid"),
                     {"cycle", "smoother", "pre_sweeps", "post_sweeps", "coarse_sweeps",
                      "prolongation", "coarse_tolerance", "agglomerate_below", "fused", "replay"});
    MultigridSettings& s = cfg.multigrid;
    s.cycle = mv.optional("cycle", s.cycle, [](const DeckNode& e, const std::string& w) {
      return choice(e, w, {MultigridCycle::V, MultigridCycle::F, MultigridCycle::FMG});
    });
    s.smoother = mv.optional("smoother", s.smoother, [](const DeckNode& e, const std::string& w) {
      return choice(e, w, {MultigridSmoother::Jacobi, MultigridSmoother::Chebyshev});
    });
    const auto sweeps = [](const DeckNode& e, const std::string& w) {
      return static_cast<int>(integer(e, w, 0, 64));
    };
    s.pre_sweeps = mv.optional("pre_sweeps", s.pre_sweeps, sweeps);
    s.post_sweeps = mv.optional("post_sweeps", s.post_sweeps, sweeps);
    s.coarse_sweeps = mv.optional("coarse_sweeps", s.coarse_sweeps, sweeps);
    if (s.pre_sweeps + s.post_sweeps == 0)
      fail(mv.loc(), fmt::format("{}: pre_sweeps + post_sweeps must be at least 1 (a cycle "
                                 "without smoothing does not converge)",
                                 v.path("multigrid")));
    s.prolongation =
        mv.optional("prolongation", s.prolongation, [](const DeckNode& e, const std::string& w) {
          return choice(e, w, {Prolongation::Linear, Prolongation::Constant});
        });
    s.coarse_tolerance = mv.optional("coarse_tolerance", s.coarse_tolerance, fraction);
    s.agglomerate_below = mv.optional(
        "agglomerate_below", s.agglomerate_below, [](const DeckNode& e, const std::string& w) {
          return auto_or(e, w, "a non-negative integer", kAgglomerateAuto, nonnegative_integer);
        });
    s.fused = mv.optional("fused", s.fused, boolean);
    s.replay = mv.optional("replay", s.replay, boolean);
  }
}

}  // namespace heatsolve::deck_reader
