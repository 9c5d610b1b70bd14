// Geometric multigrid cycles for A u = f on a hierarchy of HelmholtzOperators (AMReX MLMG's
// split: the cycles here know no stencil; each level's operator owns its sweeps, residual,
// application and face rules, solvers/operator/helmholtz.hpp). The smoother is weighted
// (Chebyshev) Jacobi, the transfers Backend::restrict_average and prolong_add, and the
// coarsest level is solved directly (a dense inverse applied on the device,
// solvers/multigrid/coarse_direct.hpp) where it has at most 256 cells, else by conjugate
// gradients (solvers/steady/pcg.hpp).
//
// Levels halve every axis that is even, at least 4 cells long and not much coarser than the
// finest axis (semi-coarsening keeps anisotropic cells near isotropic, as PFMG does); the
// hierarchy stops when no axis can be halved. Coarse levels solve for corrections, with the
// faces' types and zero values. The finest level may be one rank's block of a decomposed
// grid (its operator exchanges halos and its space sums over ranks); coarse levels then stay
// distributed the same way while they are large and their blocks halve, and the first level
// past that is gathered and solved with everything coarser on every rank, or on rank 0
// (solvers/multigrid/agglomeration.hpp; that part of the cycle: distributed.cpp). Each level's
// arithmetic is the serial cycle's.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "core/multigrid.hpp"
#include "solvers/multigrid/agglomeration.hpp"
#include "solvers/multigrid/coarse_direct.hpp"
#include "solvers/multigrid/phase_timer.hpp"
#include "solvers/operator/helmholtz.hpp"
#include "solvers/steady/pcg.hpp"

namespace heatsolve {

// Small coarse levels smooth MultigridSettings::coarse_sweeps each way: they cost little on any
// backend (on a GPU they are launch-bound, replayed as one graph), and the V-cycle's
// convergence rests on how well they are solved. A level is small when the cube (square) on its
// shortest axis has at most kSmallLevelCells cells and the level at most kSmallLevelMaxCells:
// 32^3, 32 x 32 x 128 and 128 x 128 x 8 are small, 64^3 and 512 x 512 x 8 are not. Elongated
// and flat levels left at the deck's sweeps cost cycles (3D Poisson, 64 x 64 x 256 on a 1 x 1
// x 4 box: 11 against 9), a 64^3 level made small costs more than it gains.
inline constexpr long long kSmallLevelCells = 65536;      // 2^16
inline constexpr long long kSmallLevelMaxCells = 262144;  // 2^18
// Whether level grid g (the whole level, not a block) is small.
bool is_small_level(const GridDesc& g);

template <typename T>
class Multigrid : public Preconditioner<T> {
 public:
  struct Timing {
    // Seconds of device time (Backend::stamp), all levels. A cycle's levels below 128^3 cells
    // (this rank's block) are timed as one unit: its seconds count as the coarse solve's and
    // the first of those levels'.
    double smooth = 0, transfer = 0, coarse = 0;
    std::vector<double> per_level;  // smoothing + residual per level (see above)
    // Decomposed grids, per level of this rank's hierarchy: halo exchanges (the host's
    // seconds in them) and their count; and the gathered level's transfers (restricted
    // residual gathered, correction back), seconds.
    std::vector<double> exchange;
    std::vector<long long> exchanges;
    std::vector<long long> deep_passes;  // smoothings through deep halos, per level
    // Deep exchanges queued on the side lane (prefill_margins; counted in `exchanges` too),
    // deep passes that needed none, their margins zeroed with the field (zero_with_margins),
    // and corrections handed to the finer level in margins the level's own post-smoothing
    // left valid (fill_correction).
    std::vector<long long> prefilled, zeroed, kept;
    double agglomeration = 0;
    // Decomposed set-up: tuning the distributed levels' kernels, and their first exchanges
    // (buffers, IPC mappings); host seconds of allocating this rank's levels (and gathering
    // variable coefficients' resistances), of building the gathered hierarchy, and of making
    // the device gather (IPC mappings of every rank's copy).
    double setup_tuning = 0, setup_halos = 0, setup_levels = 0, setup_gathered = 0,
           setup_gather = 0;
  };

  // `fine`: the finest level's operator (Deck faces: the problem's). A singular operator
  // (no Dirichlet face, sigma 0) fixes the solution's mean to zero and projects right-hand
  // sides onto zero mean.
  Multigrid(const HelmholtzOperator<T>& fine, const MultigridSettings& settings,
            std::unique_ptr<Agglomeration<T>> agglomeration = nullptr);

  // One cycle (settings.cycle) on A u = f with the deck's faces; f null means zero.
  void cycle(T* u, const T* f);
  // A cycle in two parts, the convergence check of u riding on the first: begin_cycle runs
  // the finest level's pre-smoothing as one pass that leaves u as it is and measures
  // ||f - A u|| (all ranks) in it; cycle_begun(u, f) completes that cycle, with the bits of
  // cycle(u, f). A caller that stops instead keeps u, the pass wasted. begin_cycle returns
  // false, with nothing begun, where the pass cannot (unfused hierarchies, decomposed ones
  // without deep smoothing, variable coefficients, sweep counts that are not one pass of the
  // backend). Any other call on the hierarchy forgets a begun cycle.
  bool begin_cycle(T* u, const T* f, double* residual_norm);
  bool begun(const T* u, const T* f) const {
    return pending_.u && pending_.u == u && pending_.f == f;
  }
  void cycle_begun(T* u, const T* f);
  // Also forgets the right side whose margins begin_cycle filled: its values may change
  // before the next begin_cycle (MultigridIteration::start).
  void forget_begun() {
    pending_ = {};
    f_margins_filled_ = nullptr;
    forget_filled_margins(0);  // u's, exchanged in the last post-smoothing
  }
  // e = one V-cycle from zero on A e = r with zero face values (the mg-cg preconditioner).
  void precondition(const T* r, T* e);
  // e = one cycle of `type` (V or F) from zero on A e = r with zero face values (a mixed
  // solve's correction: solvers/multigrid/mixed.hpp).
  void correction(const T* r, T* e, MultigridCycle type);
  void apply(const T* r, T* z) override { precondition(r, z); }
  // One full-multigrid pass (solver.multigrid.cycle: fmg) on A u = f with `m`'s faces on
  // every level (Deck: the problem, its face values lowered for each level's spacing;
  // Homogeneous: a correction equation, f a residual): f averaged down to every level, the
  // coarsest level solved, then on each finer level the coarser solution interpolated
  // (Backend::interpolate: cubic with the linear prolongation, else the hierarchy's own)
  // and one V-cycle. u's values on entry are not used; f null means zero. A decomposed
  // hierarchy starts the nested iteration at its last distributed level: the gathered
  // levels' pass on its residual from zero (zero faces), prolongated, then a V-cycle.
  void fmg(T* u, const T* f, BoundaryMode m);
  // x -= mean(x) (singular problems; otherwise nothing).
  void remove_mean(T* x);
  bool singular() const { return singular_; }

  const HelmholtzOperator<T>& fine_operator() const { return levels_[0].op; }
  // Levels of the whole hierarchy (decomposed: the distributed ones and the gathered ones).
  int levels() const;
  // "64x64x64 -> 32x32x32 -> ... -> 2x2x2"
  std::string describe() const;
  const Timing& timing() const {
    clock_.settle(true);
    return timing_;
  }
  // Decomposed grids: per level, where it is solved (distributed blocks, or gathered on
  // every rank / rank 0), its grid and time; null for a serial hierarchy.
  nlohmann::json decomposition_report() const;
  // The last coarsest solve's conjugate-gradient iterations (0: solved directly).
  int coarse_iterations() const { return coarse_iterations_; }
  // "direct" or "cg": how this rank's coarsest level is solved ("" on a rank that solves no
  // gathered levels).
  std::string coarse_solver() const;
  // Visits of this rank's local coarse levels replayed as one launch (settings.replay), this
  // hierarchy's and its gathered hierarchy's.
  long long replays() const;
  // Of those visits' recordings, the ones made while the host waited for a norm (begin_cycle,
  // prerecord_small_visit), this hierarchy's and its gathered hierarchy's.
  long long recorded_ahead() const;

  // Padded fields of the local grid `fine` that a hierarchy built on it allocates (the
  // finest level's own fields are the caller's), for the memory preflight.
  static double footprint_fields(const GridDesc& fine, bool singular);
  // Bytes of the device's interpolation scratch that full multigrid on the local grid `fine`
  // needs (the finest interpolation's, mg::cubic_chunks), 0 for a decomposed grid (its pass
  // is a V-cycle, no interpolation).
  static double interpolation_scratch_bytes(const GridDesc& fine, bool decomposed);

 private:
  struct Level {
    HelmholtzOperator<T> op;
    std::array<int, 3> ratio{1, 1, 1};  // to the next coarser level
    std::unique_ptr<Array<T>> u, f, r, tmp, ones;
    // The coarsest level's solver: direct where it suits, else conjugate gradients.
    std::unique_ptr<DirectCoarseSolver<T>> direct;
    std::unique_ptr<Pcg<T>> cg;
  };
  // A hierarchy of its own (the agglomerated coarse levels on rank 0).
  Multigrid(const HelmholtzOperator<T>& fine, const MultigridSettings& settings,
            const std::vector<double>& weights, bool smooth_finest, bool singular);
  void build(const HelmholtzOperator<T>& fine, std::unique_ptr<Agglomeration<T>> agglomeration);
  void build_ones();  // a field of ones per level (singular problems' mean removal)
  const GridDesc& grid(int l) const { return levels_[l].op.grid(); }
  // The faces level l is swept with: a visit's own (a cycle's coarser levels are visited
  // with Homogeneous ones; full multigrid visits each level with the problem's).
  BoundaryMode mode(int l, BoundaryMode m) const {
    (void)l;
    return m;
  }
  // Returns whether the iterate's Exchange ghosts hold the neighbours' values after it (a deep
  // smoothing short of its margins: the residual and interpolation that follow skip their
  // exchange). `fill_source` (a visit's first smoothing): where the level smooths deep, f's
  // margins are filled first, for this smoothing and the post-smoothing.
  bool smooth(int l, T** cur, T** other, const T* f, int sweeps, bool reverse, BoundaryMode m,
              bool fill_source = false);
  // The ghosts of level l + 1's correction e filled for its prolongation to level l (timed as
  // a transfer); returns whether level l's post-smoothing may take e into its passes
  // (smooth_prolonged), where a level that smooths deep needs e's margins deep enough for its
  // own margins' children, filled too. The same answer on every rank. `exchanged`: e's
  // Exchange ghosts hold the neighbours' values.
  bool fill_correction(int l, T* e, bool exchanged, const T* cur, const T* other, const T* f);
  // The post-smoothing of level l with the coarse correction e (filled by fill_correction)
  // prolonged into *cur in the same passes (HelmholtzOperator::prolong_add_and_smooth), timed as
  // smoothing; false, nothing done, where the level has no such pass (then prolong_add and
  // smooth()). *exchanged as smooth() returns it.
  bool smooth_prolonged(int l, const T* e, T** cur, T** other, const T* f, BoundaryMode m,
                        bool* exchanged, bool* margins_sent);
  void level_residual(int l, T* x, const T* f, T* r, BoundaryMode m);
  // The residual of x on level l restricted into level l + 1's f, its u zeroed (timed).
  void restrict_residual(int l, T* x, const T* f, BoundaryMode m, bool exchanged);
  // restrict_residual's restriction in parts, level l + 1's f exchanged on the side lane
  // between them, where that level smooths through deep halos; false, nothing done, elsewhere.
  bool restrict_sending(int l, T* x, const T* f, BoundaryMode m, bool exchanged);
  // Level l's deep exchange of x (a field with margins) on the side lane, after the work
  // queued so far; timed and counted as one alongside (prefill_margins, restrict_sending).
  void exchange_alongside(int l, T* x);
  // visit() and correct_and_smooth() return smooth()'s answer for x at their end.
  bool visit(int l, T* x, const T* f, MultigridCycle type, BoundaryMode m);
  // visit(), replayed where the backend can (Backend::replay; settings.replay, a hierarchy
  // on this rank's memory alone, a direct coarsest solve), untimed inside then.
  bool visit_replayed(int l, T* x, const T* f, MultigridCycle type, BoundaryMode m);
  // Whether visit_replayed(l, x, f, type, m) may record.
  bool replayable(int l, BoundaryMode m) const;
  // The small levels' V-visit that every cycle makes (a serial hierarchy's first level below
  // kUnitTimedCells; a decomposed one's gathered levels) recorded now without running, where
  // it ran once (Backend::prerecord): begin_cycle has it done while the device runs the finest
  // level's first pass and the host would only wait for its norm, so that no cycle pays the
  // recording. False while that visit has not run yet (ask again at the next cycle).
  bool prerecord_small_visit();
  bool prerecord_visit(int l, T* x, const T* f);
  bool correct_and_smooth(int l, T* x, const T* f, MultigridCycle type, BoundaryMode m, T* cur,
                          T* other, bool exchanged);
  MultigridCycle cycle_type() const;
  void coarse_solve(int l, T* x, const T* f, BoundaryMode m = BoundaryMode::Homogeneous);
  void level_remove_mean(int l, T* x);
  // The last distributed level l: its residual restricted, gathered, corrected by the
  // gathered hierarchy (a `type` cycle; FMG: its full-multigrid pass) and the correction
  // prolongated onto x. Where x's margins were exchanged alongside (prefill_margins) and
  // corrects_margins(l), the margins too, from the gathered correction: true, and then they
  // hold what the neighbours' blocks hold, marked filled for the post-smoothing.
  bool agglomerated_correction(int l, T* x, MultigridCycle type);
  // Whether level l is the last distributed one, its gathered correction whole on this rank
  // and its post-smoothing a deep pass whose margins that correction can reach (slab blocks,
  // margins a whole number of coarse planes).
  bool corrects_margins(int l) const;
  // Fills the Exchange ghosts of x on level l (timed).
  void exchange(int l, T* x);
  // Level l's exchange in split form (sweeps overlapping it), timed: the host's time in the
  // calls, while the device computes the sweep's core.
  SplitExchange<T> timed_split(int l, SplitExchange<T> inner);
  int last_distributed() const { return int(levels_.size()) - 2; }
  // Deep smoothing on the distributed levels whose fields carry margins (Agglomeration::deep).
  void attach_deep_smoothing();
  // Whether level l's post-smoothing may add the coarse correction inside its passes (then it
  // reads the iterate's margins as the pre-smoothing left them).
  bool prolongs_in_pass(int l) const;
  // Level l's margins of x exchanged on the side lane now, for x's next deep pass, while the
  // main lane goes on (the residual's restriction, the coarser levels): that pass waits for it
  // instead of exchanging. Nothing where x's margins are filled already.
  void prefill_margins(int l, T* x);
  // x = 0 on level l, its margins too where it has them: they then hold what an exchange
  // would bring (the neighbours' zeros), and x's next deep pass exchanges nothing.
  void zero_with_margins(int l, T* x);
  // Forgets level l's filled margins (x is about to change otherwise than by a deep pass),
  // after the side lane's exchange, if any.
  void forget_filled_margins(int l);
  // execution.overlap: the levels' sweeps split around their exchanges where that pays.
  void attach_split_exchanges(const HelmholtzOperator<T>& fine);

  MultigridSettings settings_;
  bool singular_ = false;
  bool smooth_finest_ = true;  // false: a gathered fine level that the ranks smoothed
  bool nested_ = false;        // the gathered hierarchy: its finest level is a coarse one
  std::vector<Level> levels_;  // [0]: the finest (fields are the caller's)
  std::unique_ptr<Agglomeration<T>> agg_;
  std::function<void(T*)> fine_exchange_;  // the finest level's own exchange (decomposed)
  // Agglomerated runs: the gathered hierarchy (on the solving ranks) and host staging (this
  // rank's block sized where a host path first uses it).
  std::unique_ptr<Multigrid<T>> coarse_;
  std::vector<T> stage_local_, stage_global_;
  std::unique_ptr<Array<T>> agg_rhs_, agg_corr_;
  std::unique_ptr<BlockGather<T>> device_gather_;  // the gather without the host, where it can
  std::vector<double> weights_;  // smoothing weights, one per sweep (Chebyshev) or constant
  // The small coarse levels' (is_small_level, MultigridSettings::coarse_sweeps).
  std::vector<double> small_weights_;
  std::vector<bool> small_;  // per level
  Timing timing_;
  bool timed_ = true;   // false inside a subtree timed as one unit (kUnitTimedCells)
  bool split_ = false;  // decomposed: the levels' sweeps overlap their exchanges
  // Per distributed level with deep smoothing: the field whose margins hold the neighbours'
  // values for its next deep pass (prefill_margins, zero_with_margins), and whether an exchange
  // on the side lane is still to be joined (before any other exchange of the level: the
  // exchanger's receive buffers alternate by exchange, deep_halo.hpp).
  struct FilledMargins {
    const T* x = nullptr;
    bool side = false;
    bool zeroed = false;        // by zero_with_margins
    const T* source = nullptr;  // the level's right side, exchanged in its restriction
  };
  std::vector<FilledMargins> filled_;
  // Level l's iterate after its visit, where its post-smoothing was one deep pass: its margins
  // hold the neighbours' values `planes` deep (the margin depth less the pass's sweeps), for
  // the finer level's correction (fill_correction). Set by correct_and_smooth, cleared by
  // visit.
  struct PostMargins {
    const T* x = nullptr;
    int planes = 0;
  };
  std::vector<PostMargins> post_margins_;
  // The fields of a cycle begun (begin_cycle); its iterate is in levels_[0].tmp, with its
  // Exchange ghosts filled where `exchanged` (a deep pass).
  struct Pending {
    T* u = nullptr;
    const T* f = nullptr;
    bool exchanged = false;
  } pending_;
  // The finest right side whose margins begin_cycle filled: a solve's cycles share it, so
  // its exchange runs once a solve, not once a cycle.
  const T* f_margins_filled_ = nullptr;
  int coarse_iterations_ = 0;
  // visit_replayed's recordings, by the visit's arguments.
  std::map<std::tuple<int, T*, const T*, MultigridCycle, BoundaryMode>, std::unique_ptr<Recording>>
      replayed_;
  long long replays_ = 0;
  long long recorded_ahead_ = 0;
  bool small_visit_prerecorded_ = false;  // prerecord_small_visit done (or nothing to record)
  bool begin_declined_ = false;           // a deep begin_cycle found no measuring pass
  // Inside cycle_begun: the finest post-smoothing exchanges its output's margins in parts.
  bool overlap_finest_post_ = false;
  // The phases' device time, added to timing_ as the device passes them (timing() and the
  // reports settle the rest).
  mutable multigrid_detail::PhaseClock<T> clock_;
};

// The grid of the next coarser level and the ratio per axis; ratio {1,1,1} when no axis can
// be halved.
GridDesc coarsen(const GridDesc& g, std::array<int, 3>* ratio);

}  // namespace heatsolve
