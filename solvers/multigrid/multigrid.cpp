#include "solvers/multigrid/multigrid.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "core/stopwatch.hpp"
#include "kernels/multigrid/interpolation.hpp"
#include "solvers/multigrid/phase_timer.hpp"

namespace heatsolve {

using multigrid_detail::Clock;
using multigrid_detail::kUnitTimedCells;
using multigrid_detail::kUntimedMaxCells;
using multigrid_detail::PhaseTimer;
using multigrid_detail::ScopedFlag;
using multigrid_detail::WorkWhileWaiting;

namespace {

int extent(const GridDesc& g, int a) {
  return a == 0 ? g.nx : a == 1 ? g.ny : g.nz;
}
double spacing(const GridDesc& g, int a) {
  return a == 0 ? g.hx : a == 1 ? g.hy : g.hz;
}

// Smoothing weights: the reciprocal roots of the Chebyshev polynomial of degree m on [a, b]
// for the eigenvalues of D^-1 A, b = 2 bounding them and a = 1/3 (3D) or 1/2 (2D) the lower
// end of the oscillatory modes the coarse grid cannot represent. Degree 1 is weighted Jacobi
// with omega = 2 / (a + b) (6/7 in 3D, 4/5 in 2D).
std::vector<double> smoothing_weights(const MultigridSettings& settings, int dims) {
  const double b = 2.0, a = dims == 3 ? 1.0 / 3.0 : 0.5;
  const int m = std::max(settings.pre_sweeps, settings.post_sweeps);
  std::vector<double> w(std::max(1, m));
  for (int k = 0; k < int(w.size()); ++k) {
    double lambda = 0.5 * (a + b);
    if (settings.smoother == MultigridSmoother::Chebyshev)
      lambda += 0.5 * (b - a) * std::cos(M_PI * (2.0 * k + 1.0) / (2.0 * double(w.size())));
    w[k] = 1.0 / lambda;
  }
  return w;
}

// A side's sweeps on a small coarse level (is_small_level): at least coarse_sweeps where the
// cycle smooths on that side, none where it does not (a one-sided cycle stays one-sided).
int small_level_sweeps(const MultigridSettings& s, int sweeps) {
  return sweeps > 0 ? std::max(sweeps, s.coarse_sweeps) : 0;
}

MultigridSettings small_level_settings(MultigridSettings s) {
  s.pre_sweeps = small_level_sweeps(s, s.pre_sweeps);
  s.post_sweeps = small_level_sweeps(s, s.post_sweeps);
  return s;
}
}  // namespace

// kSmallLevelCells, kSmallLevelMaxCells, on a level's whole grid.
bool is_small_level(const GridDesc& g) {
  int shortest = std::min(g.nx, g.ny);
  if (g.dims == 3) shortest = std::min(shortest, g.nz);
  double cube = 1;
  for (int a = 0; a < g.dims; ++a) cube *= shortest;
  return cube <= double(kSmallLevelCells) &&
         double(g.interior_size()) <= double(kSmallLevelMaxCells);
}

GridDesc coarsen(const GridDesc& g, std::array<int, 3>* ratio) {
  *ratio = {1, 1, 1};
  double h_min = spacing(g, 0);
  for (int a = 1; a < g.dims; ++a) h_min = std::min(h_min, spacing(g, a));
  GridDesc c = g;
  for (int a = 0; a < g.dims; ++a) {
    const int n = extent(g, a);
    // Halve the axes whose cells are among the finest (semi-coarsening), while even and at
    // least 4 cells long.
    if (n % 2 != 0 || n < 4 || spacing(g, a) > 1.5 * h_min) continue;
    (*ratio)[a] = 2;
  }
  c.nx = g.nx / (*ratio)[0];
  c.ny = g.ny / (*ratio)[1];
  c.nz = g.dims == 3 ? g.nz / (*ratio)[2] : 1;
  c.hx = g.hx * (*ratio)[0];
  c.hy = g.hy * (*ratio)[1];
  c.hz = g.dims == 3 ? g.hz * (*ratio)[2] : g.hz;
  return c;
}

template <typename T>
double Multigrid<T>::interpolation_scratch_bytes(const GridDesc& fine, bool decomposed) {
  std::array<int, 3> ratio{1, 1, 1};
  const GridDesc coarse = coarsen(fine, &ratio);
  if (decomposed || ratio == std::array<int, 3>{1, 1, 1}) return 0;
  return double(mg::cubic_chunks(coarse, fine.nx, ratio[1] - 1, ratio[2] - 1).doubles) *
         sizeof(double);
}

template <typename T>
double Multigrid<T>::footprint_fields(const GridDesc& fine, bool singular) {
  const double n0 = double(fine.padded_size());
  double fields = 2;  // the finest level's residual and scratch
  GridDesc g = fine;
  for (;;) {
    std::array<int, 3> ratio{};
    const GridDesc c = coarsen(g, &ratio);
    if (ratio == std::array<int, 3>{1, 1, 1}) break;
    fields += 4 * double(c.padded_size()) / n0;  // u, f, r, scratch
    g = c;
  }
  fields += 3 * double(g.padded_size()) / n0;  // the coarsest level's CG vectors
  if (singular) fields *= 1.5;                 // a field of ones per level (rough)
  return fields;
}

template <typename T>
Multigrid<T>::Multigrid(const HelmholtzOperator<T>& fine, const MultigridSettings& settings,
                        std::unique_ptr<Agglomeration<T>> agglomeration)
    : settings_(settings),
      singular_(fine.singular()),
      weights_(smoothing_weights(settings, fine.grid().dims)),
      small_weights_(smoothing_weights(small_level_settings(settings), fine.grid().dims)),
      clock_(fine.backend()) {
  build(fine, std::move(agglomeration));
}

template <typename T>
Multigrid<T>::Multigrid(const HelmholtzOperator<T>& fine, const MultigridSettings& settings,
                        const std::vector<double>& weights, bool smooth_finest, bool singular)
    : settings_(settings),
      singular_(singular),
      smooth_finest_(smooth_finest),
      nested_(true),
      weights_(weights),
      small_weights_(smoothing_weights(small_level_settings(settings), fine.grid().dims)),
      clock_(fine.backend()) {
  build(fine, nullptr);
}

template <typename T>
void Multigrid<T>::build(const HelmholtzOperator<T>& fine,
                         std::unique_ptr<Agglomeration<T>> agglomeration) {
  agg_ = std::move(agglomeration);
  Backend<T>& backend = fine.backend();
  // The fields a distributed level smooths carry the margins of its deep smoothing.
  const auto margins = [this](std::size_t l) {
    Margins m;
    if (agg_ && l < agg_->deep.size() && agg_->deep[l])
      stream_margins(agg_->deep[l]->geometry(), &m);
    return m;
  };
  const auto make_level = [&](HelmholtzOperator<T> op, bool owned) {
    Level lv{std::move(op)};
    const std::size_t n = lv.op.grid().padded_size();
    const Margins m = margins(levels_.size());
    if (owned) {
      lv.u = allocate_with_margins(backend, n, m);
      lv.f = allocate_with_margins(backend, n, m);
    }
    lv.r = backend.allocate(n);
    lv.tmp = allocate_with_margins(backend, n, m);
    return lv;
  };
  if (!agg_) {
    levels_.push_back(make_level(fine, false));
    for (;;) {
      std::array<int, 3> ratio{};
      const GridDesc c = coarsen(levels_.back().op.grid(), &ratio);
      if (ratio == std::array<int, 3>{1, 1, 1}) break;
      levels_.back().ratio = ratio;
      levels_.push_back(make_level(levels_.back().op.coarsened(FieldSpace<T>(backend, c)), true));
    }
  } else {
    // Decomposed: the finest level's exchanges are timed too. Split exchanges (overlap) are
    // attached below, once the transport is known.
    const auto levels_start = Clock::now();
    fine_exchange_ = fine.exchange_hook();
    levels_.push_back(
        make_level((fine_exchange_ ? fine.with_exchange([this](T* x) { exchange(0, x); }) : fine)
                       .with_split_exchange({}),
                   false));
    // The distributed coarse levels: this rank's block of each, with the level's exchanger
    // and sums over ranks; variable coefficients get their ghost ring of resistances from the
    // neighbours (collective).
    for (std::size_t i = 0; i < agg_->levels.size(); ++i) {
      DistributedLevel<T>& dl = agg_->levels[i];
      const int l = int(i) + 1;
      levels_.back().ratio = dl.ratio;
      const FieldSpace<T> space(backend, dl.domain.local, agg_->global_sum);
      HelmholtzOperator<T> op = levels_.back().op.coarsened(
          space, [this, l](T* x) { exchange(l, x); }, dl.exchange_double);
      dl.exchange_double = nullptr;  // set-up only
      levels_.push_back(make_level(std::move(op), true));
    }
    // This rank's block of the gathered level (restricted into, and the correction's block
    // with one ghost layer); the last distributed level itself when its blocks do not halve.
    const GridDesc& gc = agg_->global_coarse;
    const std::array<int, 3> ratio = agg_->ratio;
    levels_.back().ratio = ratio;
    GridDesc local = gc;
    local.nx = agg_->block.count[0];
    local.ny = agg_->block.count[1];
    local.nz = gc.dims == 3 ? agg_->block.count[2] : 1;
    levels_.push_back(make_level(levels_.back().op.coarsened(FieldSpace<T>(backend, local)), true));
    // Variable coefficients: the blocks' coarse resistances and mass gathered into the global
    // level's (collective).
    const HelmholtzOperator<T>& last = levels_.back().op;
    auto global_level = std::make_shared<ConductanceLevel>();
    std::vector<T> global_mass;
    if (fine.is_variable()) {
      const ConductanceLevel& mine = last.conductance();
      global_level->g = gc;
      const auto gather = [&](const std::vector<double>& local, std::vector<double>& global) {
        global.resize(agg_->root ? gc.padded_size() : 0);
        agg_->gather_double(local, global);
      };
      if (!mine.k.empty()) {  // gathered at the finest level itself
        gather(mine.k, global_level->k);
      } else {
        for (int b = 0; b < 2 * gc.dims; ++b) gather(mine.half[b], global_level->half[b]);
      }
      const std::vector<T> mass = last.host_mass();
      if (!mass.empty()) {
        global_mass.resize(agg_->root ? gc.padded_size() : 0);
        agg_->gather(mass, global_mass);
      }
    }
    timing_.setup_levels = seconds_since(levels_start);
    // Each distributed level's grid is tuned (CUDA "auto": the ranks agree on the timings) and
    // its exchange set up (buffers, IPC mappings) here, not inside the first cycle.
    {
      PhaseTimer<T> t(clock_, &timing_.setup_tuning);
      for (std::size_t l = 1; l + 1 < levels_.size() && !fine.is_variable(); ++l) {
        // The mean block decides (a serial grid of that size would be untimed), the same
        // number on every rank, so that every rank takes part in the same tunings. A level
        // that smooths through deep halos and is not the last distributed one runs no single
        // sweep (fused passes, the fused residual restriction), as a serial hierarchy's fused
        // levels do: nothing to time.
        const bool deep = settings_.fused && l < agg_->deep.size() && agg_->deep[l] &&
                          int(l) < last_distributed();
        const Domain& d = agg_->levels[l - 1].domain;
        if (deep || double(d.global.interior_size()) / d.size <= kUntimedMaxCells)
          backend.prepare_untimed(grid(int(l)));
        else
          backend.prepare(grid(int(l)));
      }
    }
    timing_.exchange.assign(levels_.size(), 0.0);  // the set-up's exchanges, reset below
    timing_.exchanges.assign(levels_.size(), 0);
    attach_deep_smoothing();
    {
      PhaseTimer<T> t(clock_, &timing_.setup_halos);
      // A level that smooths through deep halos has its ghosts filled by its passes: its
      // one-cell exchanger sets up at its first use, if any (e.g. a visit without
      // post-smoothing); the first coarse level's tells whether halos go device to device.
      for (std::size_t l = 1; l + 1 < levels_.size(); ++l)
        if (l == 1 || !levels_[l].op.deep_smoothing())
          agg_->levels[l - 1].exchanger->exchange(backend, levels_[l].tmp->data());
      for (std::size_t l = 0; l + 1 < levels_.size(); ++l)
        levels_[l].op.fill_margins(levels_[l].tmp->data());
    }
    attach_split_exchanges(fine);
    if (agg_->root) {
      const auto gathered_start = Clock::now();
      Backend<T>& be = agg_->backend ? *agg_->backend : backend;
      BoundaryFaces fixed = agg_->global_zero_faces;  // the variable kernels' rules
      for (FaceBC& f : fixed)
        if (f.type != BoundaryType::Periodic) f = FaceBC{BoundaryType::Fixed, 0.0};
      if (fine.is_variable()) wrap_periodic(*global_level, fixed);
      const HelmholtzOperator<T> global =
          fine.is_variable()
              ? fine.with_level(FieldSpace<T>(be, gc), global_level,
                                exterior_resistances(agg_->global_zero_faces), global_mass, fixed)
              : HelmholtzOperator<T>(FieldSpace<T>(be, gc), agg_->global_zero_faces, fine.sigma(),
                                     fine.alpha(), {}, fine.conductivity());
      // Gathered at a distributed level itself (blocks that do not halve evenly): the ranks
      // have smoothed it; the solving ranks correct from its coarser levels only, as the
      // serial cycle does.
      coarse_ = std::unique_ptr<Multigrid<T>>(new Multigrid<T>(
          global, settings_, weights_, ratio != std::array<int, 3>{1, 1, 1}, singular_));
      agg_corr_ = backend.allocate(gc.padded_size());
      timing_.setup_gathered = seconds_since(gathered_start);
      if (agg_->make_device_gather) {
        const auto t0 = Clock::now();
        device_gather_ = agg_->make_device_gather(backend);
        if (device_gather_) timing_.setup_gather = seconds_since(t0);
      }
      agg_rhs_ = backend.allocate(gc.padded_size());
      if (!device_gather_) stage_global_.resize(gc.padded_size());
    }
  }
  if (singular_) build_ones();
  // Each level's grid is tuned (CUDA "auto") here, not inside the first cycle (decomposed:
  // above), small ones untimed (kUntimedMaxCells; a finest level prepared by the run keeps its
  // choice). Variable coefficients have one kernel: nothing to tune; fused smoothing runs
  // temporal passes and the fused residual restriction, neither tuned (a single sweep that
  // remains, e.g. with periodic faces on a level above 128^3, tunes its grid when it first
  // runs).
  if (!agg_ && !fine.is_variable())
    for (std::size_t l = 0; l < levels_.size(); ++l) {
      if (double(grid(int(l)).interior_size()) <= kUntimedMaxCells)
        backend.prepare_untimed(grid(int(l)));
      else if (l > 0 && !settings_.fused)
        backend.prepare(grid(int(l)));
    }
  // The coarsest level's solver (the vector is complete: it may keep a reference to the
  // level's operator). The direct one probes the operator with sweeps: after the tuning
  // above, so that they take the untimed choice (a timed one could be collective, and the
  // gathered levels may live on rank 0 alone).
  if (!agg_) {
    Level& last = levels_.back();
    if (DirectCoarseSolver<T>::suits(last.op)) {
      try {
        last.direct = std::make_unique<DirectCoarseSolver<T>>(last.op, singular_);
      } catch (const SingularCoarseLevel&) {  // no inverse to rounding: CG, which copes or not
      }
    }
    if (!last.direct) last.cg = std::make_unique<Pcg<T>>(last.op, nullptr, CgBeta::FletcherReeves);
  }
  // The small coarse levels, by the whole level's grid (every rank and a serial run of the
  // same grid agree); a hierarchy's finest level is the deck's unless it is itself a coarse
  // level (the gathered hierarchy).
  small_.assign(levels_.size(), false);
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    GridDesc whole = grid(int(l));
    if (agg_ && l > 0)
      whole = l <= agg_->levels.size() ? agg_->levels[l - 1].domain.global : agg_->global_coarse;
    small_[l] = settings_.coarse_sweeps > 0 && (l > 0 || nested_) && is_small_level(whole);
  }
  timing_.per_level.assign(levels_.size(), 0.0);
  timing_.exchange.assign(levels_.size(), 0.0);
  timing_.exchanges.assign(levels_.size(), 0);
  timing_.deep_passes.assign(levels_.size(), 0);
  timing_.prefilled.assign(levels_.size(), 0);
  timing_.zeroed.assign(levels_.size(), 0);
  timing_.kept.assign(levels_.size(), 0);
  post_margins_.assign(levels_.size(), {});
}

template <typename T>
void Multigrid<T>::build_ones() {
  for (Level& lv : levels_) {
    if (lv.ones) continue;
    const std::vector<T> host(lv.op.grid().padded_size(), T(1));
    lv.ones = lv.op.backend().allocate(host.size());
    lv.ones->copy_from_host(host.data());
  }
}

template <typename T>
int Multigrid<T>::levels() const {
  if (!agg_) return int(levels_.size());
  int gathered = 1;  // ranks that do not solve the gathered levels know only the first
  if (coarse_) gathered = coarse_->levels() - (coarse_->smooth_finest_ ? 0 : 1);
  return last_distributed() + 1 + gathered;
}

template <typename T>
std::string Multigrid<T>::describe() const {
  std::string s;
  const auto add = [&s](const GridDesc& g) {
    if (!s.empty()) s += " -> ";
    s += g.dims == 3 ? fmt::format("{}x{}x{}", g.nx, g.ny, g.nz) : fmt::format("{}x{}", g.nx, g.ny);
  };
  // A decomposed hierarchy: this rank's blocks of the distributed levels, then the gathered
  // levels (the gathered one's block is not a level of its own).
  const std::size_t local = agg_ ? levels_.size() - 1 : levels_.size();
  for (std::size_t l = 0; l < local; ++l) add(levels_[l].op.grid());
  if (agg_) {
    s += agg_->redundant ? " | gathered, every rank: " : " | gathered, rank 0: ";
    if (coarse_)
      s += coarse_->describe();
    else
      add(agg_->global_coarse);
  }
  return s;
}

template <typename T>
std::string Multigrid<T>::coarse_solver() const {
  if (agg_) return coarse_ ? coarse_->coarse_solver() : std::string();
  return levels_.back().direct ? "direct" : "cg";
}

template <typename T>
bool Multigrid<T>::smooth(int l, T** cur, T** other, const T* f, int sweeps, bool reverse,
                          BoundaryMode m, bool fill_source) {
  const HelmholtzOperator<T>& op = levels_[l].op;
  const bool small = small_[l];
  if (small) sweeps = small_level_sweeps(settings_, sweeps);
  const int post =
      small ? small_level_sweeps(settings_, settings_.post_sweeps) : settings_.post_sweeps;
  const auto deep_with = [&](int n) {
    return n > 0 && settings_.fused && op.smooths_deep(*cur, *other, f, n);
  };
  const bool deep = deep_with(sweeps);
  // f's margins serve the visit's post-smoothing too, even without pre-smoothing sweeps.
  const bool fill = fill_source && f && deep_with(std::max(sweeps, post));
  if (sweeps <= 0 && !fill) return false;
  {
    PhaseTimer<T> t(clock_, &timing_.smooth, &timing_.per_level[l], timed_);
    if (fill) op.fill_margins(f);
    if (deep) ++timing_.deep_passes[l];
    if (sweeps > 0)
      op.smooth(cur, other, f, small ? small_weights_ : weights_, sweeps, reverse, mode(l, m),
                settings_.fused);
  }
  return deep && op.deep_fills_ghosts(sweeps);
}

template <typename T>
bool Multigrid<T>::prolongs_in_pass(int l) const {
  const int sweeps = settings_.post_sweeps;
  return (l > 0 || smooth_finest_) && settings_.fused && !small_[l] && sweeps > 0 &&
         settings_.prolongation == Prolongation::Linear &&
         levels_[l].op.backend().prolongs_in_sweeps(grid(l).dims, sweeps);
}

template <typename T>
bool Multigrid<T>::fill_correction(int l, T* e, bool exchanged, const T* cur, const T* other,
                                   const T* f) {
  const HelmholtzOperator<T>& op = levels_[l].op;
  const HelmholtzOperator<T>& cop = levels_[l + 1].op;
  const int sweeps = settings_.post_sweeps;
  const bool in_pass = prolongs_in_pass(l);
  PhaseTimer<T> t(clock_, &timing_.transfer, nullptr, timed_);
  if (in_pass && op.smooths_deep(cur, other, f, sweeps)) {
    // The fine margins' planes are children of the coarse planes past the block: M fine planes
    // reach M / 2 + 1 coarse ones (a child's z neighbour included).
    const GridDesc& g = grid(l);
    const GridDesc& gc = grid(l + 1);
    const Margins& mf = op.deep_smoothing().margins;
    const Margins& mc = cop.deep_smoothing().margins;
    const auto reach = [&](std::size_t fine, std::size_t coarse) {
      return fine == 0 || margin_planes(coarse, gc) >= margin_planes(fine, g) / 2 + 1;
    };
    // The coarse level's own post-smoothing pass may have left enough of its margins valid.
    const int need = std::max(margin_planes(mf.before, g), margin_planes(mf.after, g)) / 2 + 1;
    const PostMargins& kept =
        std::size_t(l + 1) < post_margins_.size() ? post_margins_[l + 1] : PostMargins{};
    const bool valid = kept.x == e && kept.planes >= need;
    if (g.dims == 3 && cop.deep_smoothing() && reach(mf.before, mc.before) &&
        reach(mf.after, mc.after) && cop.fill_margins_for_interpolation(e, valid)) {
      if (valid) ++timing_.kept[l + 1];
      return true;
    }
    cop.fill_for_interpolation(e, exchanged);
    return false;
  }
  cop.fill_for_interpolation(e, exchanged);
  return in_pass;
}

template <typename T>
bool Multigrid<T>::smooth_prolonged(int l, const T* e, T** cur, T** other, const T* f,
                                    BoundaryMode m, bool* exchanged, bool* margins_sent) {
  const HelmholtzOperator<T>& op = levels_[l].op;
  const int sweeps = settings_.post_sweeps;
  PhaseTimer<T> t(clock_, &timing_.smooth, &timing_.per_level[l], timed_);
  const bool deep = op.smooths_deep(*cur, *other, f, sweeps);
  // A begun cycle's finest post-smoothing: the next cycle's first pass needs the iterate's
  // margins, exchanged alongside the rest of this pass once its send planes are stored.
  std::function<void(T*)> sent;
  if (l == 0 && agg_ && overlap_finest_post_)
    sent = [this, margins_sent](T* out) {
      prefill_margins(0, out);
      *margins_sent = filled_[0].x == out;
    };
  if (!op.prolong_add_and_smooth(e, grid(l + 1), levels_[l].ratio, settings_.prolongation, cur,
                                 other, f, weights_, sweeps, true, mode(l, m), sent))
    return false;
  if (*margins_sent) {
    levels_[l].op.backend().join_side();  // the next pass waits for it; nothing else in flight
    filled_[0].side = false;
  }
  if (deep) ++timing_.deep_passes[l];
  *exchanged = deep && op.deep_fills_ghosts(sweeps);
  return true;
}

template <typename T>
void Multigrid<T>::level_residual(int l, T* x, const T* f, T* r, BoundaryMode m) {
  PhaseTimer<T> t(clock_, &timing_.smooth, &timing_.per_level[l], timed_);
  levels_[l].op.residual(x, f, r, mode(l, m));
}

template <typename T>
void Multigrid<T>::level_remove_mean(int l, T* x) {
  const FieldSpace<T>& s = levels_[l].op.space();
  const double sum = s.sum(x), cells = s.cells();
  const T* in[] = {x, levels_[l].ones->data()};
  const double c[] = {1.0, -sum / cells};
  s.backend().combine(x, in, c, 2, s.grid());
}

template <typename T>
void Multigrid<T>::remove_mean(T* x) {
  if (singular_) level_remove_mean(0, x);
}

template <typename T>
MultigridCycle Multigrid<T>::cycle_type() const {
  // FMG's cycles after its first pass (MultigridIteration) are V-cycles.
  return settings_.cycle == MultigridCycle::F ? MultigridCycle::F : MultigridCycle::V;
}

template <typename T>
void Multigrid<T>::cycle(T* u, const T* f) {
  pending_ = {};
  forget_filled_margins(0);
  visit(0, u, f, cycle_type(), BoundaryMode::Deck);
  if (singular_) level_remove_mean(0, u);
  clock_.settle(false);
}

template <typename T>
bool Multigrid<T>::begin_cycle(T* u, const T* f, double* residual_norm) {
  pending_ = {};
  const HelmholtzOperator<T>& op = levels_[0].op;
  // A decomposed finest level: through deep halos only.
  if ((agg_ && !op.deep_smoothing()) || levels_.size() < 2 || !smooth_finest_ || !settings_.fused ||
      begin_declined_)
    return false;
  T* cur = u;
  T* other = levels_[0].tmp->data();
  bool begun = false;
  const bool deep = op.smooths_deep(cur, other, f, settings_.pre_sweeps);
  {
    PhaseTimer<T> t(clock_, &timing_.smooth, &timing_.per_level[0], timed_);
    if (deep && f && f != f_margins_filled_ && op.fill_margins(f))  // for the post-smoothing too
      f_margins_filled_ = f;
    // The small levels' visit recorded while the host waits for this pass's norm.
    const WorkWhileWaiting<T> prerecording(op.backend(), [this] {
      if (!small_visit_prerecorded_) small_visit_prerecorded_ = prerecord_small_visit();
    });
    begun = op.smooth_measuring_residual(&cur, &other, f, weights_, settings_.pre_sweeps,
                                         BoundaryMode::Deck, residual_norm);
  }
  clock_.settle(false);
  if (!begun) {
    // The backend has no such pass for this level (every rank answers alike): not again, since
    // a deep attempt costs its exchanges.
    begin_declined_ = deep;
    return false;
  }
  if (deep) ++timing_.deep_passes[0];
  pending_ = {u, f, deep && op.deep_fills_ghosts(settings_.pre_sweeps)};
  return true;
}

template <typename T>
void Multigrid<T>::cycle_begun(T* u, const T* f) {
  if (!begun(u, f)) throw std::logic_error("Multigrid: no cycle begun on these fields");
  const bool exchanged = pending_.exchanged;
  pending_ = {};
  // The begun pass left the iterate in the scratch and u as it was. The next begin_cycle
  // finds u's margins exchanged in the post-smoothing.
  const ScopedFlag overlap(overlap_finest_post_, !singular_);
  correct_and_smooth(0, u, f, cycle_type(), BoundaryMode::Deck, levels_[0].tmp->data(), u,
                     exchanged);
  if (singular_) level_remove_mean(0, u);
  clock_.settle(false);
}

template <typename T>
void Multigrid<T>::precondition(const T* r, T* e) {
  correction(r, e, MultigridCycle::V);
}

template <typename T>
void Multigrid<T>::correction(const T* r, T* e, MultigridCycle type) {
  pending_ = {};
  forget_filled_margins(0);
  zero_with_margins(0, e);
  visit(0, e, r, type, BoundaryMode::Homogeneous);
  if (singular_) level_remove_mean(0, e);
  clock_.settle(false);
}

// One visit of level l: pre-smoothing, the coarse-grid correction, post-smoothing. The
// post-smoother runs the weights in reverse order (the pre-smoother's adjoint); restriction
// is not the transpose of linear prolongation, so the cycle is not quite symmetric and mg-cg
// uses flexible CG. An F-cycle corrects with an F-visit then a V-visit of the next level.
// `m`: the finest level's faces (coarser levels solve for corrections: zero faces).
template <typename T>
bool Multigrid<T>::visit(int l, T* x, const T* f, MultigridCycle type, BoundaryMode m) {
  if (std::size_t(l) < post_margins_.size()) post_margins_[l] = {};
  if (timed_ && l > 0 && grid(l).interior_size() < kUnitTimedCells) {
    // The subtree from here down as one unit: its seconds go to this level and the coarse
    // solve's.
    PhaseTimer<T> t(clock_, &timing_.coarse, &timing_.per_level[l]);
    const ScopedFlag untimed(timed_, false);
    return visit_replayed(l, x, f, type, m);
  }
  if (!agg_ && l == int(levels_.size()) - 1) {
    coarse_solve(l, x, f, m);
    return false;
  }
  T* cur = x;
  T* other = levels_[l].tmp->data();
  // Deep smoothing reads f in its margins: filled before the pre-smoothing, for both.
  const bool exchanged =
      (l > 0 || smooth_finest_) && smooth(l, &cur, &other, f, settings_.pre_sweeps, false, m, true);
  return correct_and_smooth(l, x, f, type, m, cur, other, exchanged);
}

// The residual of x restricted into the next level's f (stored in lv.r only where the sweep
// cannot be fused; into the gathered level's block at the last distributed level, or copied
// there where its blocks do not halve), and the next level's correction zeroed, in one timed
// phase. `exchanged`: x's Exchange ghosts hold the neighbours' values.
template <typename T>
void Multigrid<T>::restrict_residual(int l, T* x, const T* f, BoundaryMode m, bool exchanged) {
  Level& lv = levels_[l];
  Level& lc = levels_[l + 1];
  PhaseTimer<T> t(clock_, &timing_.smooth, &timing_.per_level[l], timed_);
  if (lv.ratio == std::array<int, 3>{1, 1, 1}) {
    lv.op.residual(x, f, lv.r->data(), mode(l, m));
    lv.op.backend().restrict_average(lv.r->data(), grid(l), lc.f->data(), grid(l + 1), lv.ratio);
  } else if (!restrict_sending(l, x, f, m, exchanged)) {
    lv.op.residual_restrict(x, f, lc.f->data(), grid(l + 1), lv.ratio, lv.r->data(), mode(l, m),
                            settings_.fused, exchanged);
  }
  if (!agg_ || l < last_distributed()) zero_with_margins(l + 1, lc.u->data());
}

template <typename T>
bool Multigrid<T>::restrict_sending(int l, T* x, const T* f, BoundaryMode m, bool exchanged) {
  // The next level's right side, when its smoothing is deep, is exchanged on the side lane
  // while the rest of it is restricted: its planes that the neighbours need are stored first.
  const int c = l + 1;
  if (!agg_ || c > last_distributed() || !exchanged || !settings_.fused ||
      std::size_t(c) >= agg_->deep.size() || !agg_->deep[std::size_t(c)])
    return false;
  Level& lc = levels_[c];
  const HelmholtzOperator<T>& cop = lc.op;
  const DeepSmoothing<T>& deep = cop.deep_smoothing();
  const int sweeps = std::max(settings_.pre_sweeps, settings_.post_sweeps);
  if (!deep || !cop.smooths_deep(lc.u->data(), lc.tmp->data(), lc.f->data(),
                                 small_[c] ? small_level_sweeps(settings_, sweeps) : sweeps))
    return false;
  const GridDesc& gc = grid(c);
  const int depth = deep.depth;
  const int lo = deep.margins.before ? depth : 0;
  const int hi = deep.margins.after ? gc.nz - depth : gc.nz;
  T* fc = lc.f->data();
  return levels_[l].op.residual_restrict_in_parts(
      x, f, fc, gc, levels_[l].ratio, mode(l, m), lo, hi, [&] {
        forget_filled_margins(c);
        exchange_alongside(c, fc);  // after the planes the neighbours need
        filled_[std::size_t(c)].source = fc;
      });
}

// The rest of visit(l) after the pre-smoothing left the iterate in cur (other: the scratch;
// `exchanged`: cur's Exchange ghosts hold the neighbours' values): the coarse-grid correction,
// post-smoothing, the iterate back in x.
template <typename T>
bool Multigrid<T>::correct_and_smooth(int l, T* x, const T* f, MultigridCycle type, BoundaryMode m,
                                      T* cur, T* other, bool exchanged) {
  const bool smoothed = l > 0 || smooth_finest_;
  Level& lv = levels_[l];
  Backend<T>& backend = lv.op.backend();
  Level& lc = levels_[l + 1];
  // A post-smoothing that adds the correction in its passes reads cur's margins as they are
  // now, and so does the last distributed level's, whose correction reaches the margins too:
  // exchanged alongside the coarser levels. Queued after the restriction, which reads cur's
  // Exchange ghosts, so that the device does not wait for the exchange's host handshake to
  // restrict.
  const bool prefill = agg_ && exchanged &&
                       lv.op.smooths_deep(cur, other, f, settings_.post_sweeps) &&
                       (l < last_distributed() ? prolongs_in_pass(l) : corrects_margins(l));
  restrict_residual(l, cur, f, m, exchanged);
  if (prefill) prefill_margins(l, cur);
  bool prolonged_in_smoothing = false;
  bool margins_corrected = false;
  bool margins_sent = false;  // the post-smoothing's output margins exchanged in it
  exchanged = false;
  if (agg_ && l == last_distributed()) {
    margins_corrected = agglomerated_correction(l, cur, type);
  } else {
    const BoundaryMode coarse = BoundaryMode::Homogeneous;
    if (type == MultigridCycle::F) visit(l + 1, lc.u->data(), lc.f->data(), type, coarse);
    const bool coarse_exchanged =
        visit(l + 1, lc.u->data(), lc.f->data(), MultigridCycle::V, coarse);
    // The post-smoothing's passes add the correction as they read cur (one pass less).
    prolonged_in_smoothing =
        fill_correction(l, lc.u->data(), coarse_exchanged, cur, other, f) &&
        smooth_prolonged(l, lc.u->data(), &cur, &other, f, m, &exchanged, &margins_sent);
    if (!prolonged_in_smoothing) {
      PhaseTimer<T> t(clock_, &timing_.transfer, nullptr, timed_);
      backend.prolong_add(lc.u->data(), grid(l + 1), cur, grid(l), lv.ratio,
                          settings_.prolongation);
    }
  }
  // The correction changed cur: its ghosts are stale unless the post-smoothing refills them.
  if (!prolonged_in_smoothing) {
    if (!margins_corrected) forget_filled_margins(l);  // the correction changed cur outside a pass
    exchanged = smoothed && smooth(l, &cur, &other, f, settings_.post_sweeps, true, m);
  }
  // Nothing filled survives the post-smoothing but the margins its own parts sent.
  if (!margins_sent || cur != x) forget_filled_margins(l);
  // An odd number of sweeps in all leaves the iterate in the scratch buffer (the copy takes
  // the ghosts along, not the margins).
  if (cur != x) backend.copy_values(x, cur, grid(l).padded_size());
  if (std::size_t(l) < post_margins_.size() && exchanged && cur == x) {
    // A deep pass starts from filled margins; each sweep spoils one plane of them.
    const int sweeps =
        small_[l] ? small_level_sweeps(settings_, settings_.post_sweeps) : settings_.post_sweeps;
    post_margins_[l] = {x, lv.op.deep_smoothing().depth - sweeps};
  }
  return exchanged;
}

// The coarsest level: x += e with A e = f - A x (zero face values), solved directly or by
// conjugate gradients (e from 0) to a relative residual of settings.coarse_tolerance. Coarse
// levels start from x = 0, so e is their solution; a hierarchy of one level corrects the
// caller's x.
template <typename T>
void Multigrid<T>::coarse_solve(int l, T* x, const T* f, BoundaryMode m) {
  Level& lv = levels_[l];
  PhaseTimer<T> t(clock_, &timing_.coarse, nullptr, timed_);
  if (lv.direct) {  // the singular projection is inside the matrix
    level_residual(l, x, f, lv.r->data(), m);
    lv.direct->solve_add(lv.r->data(), x);
    coarse_iterations_ = 0;
    return;
  }
  {
    const FieldSpace<T>& s = lv.op.space();
    Pcg<T>& cg = *lv.cg;
    T* e = lv.tmp->data();
    level_residual(l, x, f, cg.residual(), m);
    if (singular_) level_remove_mean(l, cg.residual());
    s.zero(e);
    cg.start_from_residual();
    const double stop = cg.rz() * settings_.coarse_tolerance * settings_.coarse_tolerance;
    const int max_it = int(std::min<std::size_t>(s.grid().interior_size() * 2 + 10, 100000));
    int it = 0;
    for (; it < max_it && cg.rz() > stop && cg.rz() > 0; ++it) {
      bool breakdown = false;
      cg.iterate(e, true, &breakdown);
      if (breakdown) break;  // converged to rounding
    }
    if (singular_) level_remove_mean(l, e);
    s.axpby(x, 1.0, e, 1.0);
    coarse_iterations_ = it;
  }
}

template class Multigrid<float>;
template class Multigrid<double>;

}  // namespace heatsolve
