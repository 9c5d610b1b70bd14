// A decomposed hierarchy's own parts (solvers/multigrid/multigrid.hpp): its distributed
// levels' deep smoothing and split exchanges, their timed exchanges, the gathered level's
// correction and the report of where each level ran.
#include <fmt/format.h>

#include <chrono>
#include <numeric>

#include "core/stopwatch.hpp"
#include "solvers/multigrid/multigrid.hpp"
#include "solvers/multigrid/phase_timer.hpp"
#include "solvers/parallel/margins.hpp"

namespace heatsolve {

using multigrid_detail::Clock;
using multigrid_detail::kUntimedMaxCells;
using multigrid_detail::PhaseTimer;

// Distributed levels whose blocks carry margins (Agglomeration::deep) smooth through deep
// halos: a pass of up to margin_depth() sweeps after one exchange, where each sweep took one.
// Levels too small for the backend to fuse gain too: their sweeps run one after another on
// the extended grid without exchanges between them.
template <typename T>
void Multigrid<T>::attach_deep_smoothing() {
  Backend<T>& backend = levels_[0].op.backend();
  filled_.assign(levels_.size(), {});
  for (int l = 0; l <= last_distributed(); ++l) {
    if (std::size_t(l) >= agg_->deep.size() || !agg_->deep[std::size_t(l)] ||
        levels_[std::size_t(l)].op.is_variable())
      continue;
    DeepHaloExchanger<T>* ex = agg_->deep[std::size_t(l)].get();
    DeepSmoothing<T> deep;
    deep.extended = ex->geometry().extended;
    deep.depth = ex->geometry().depth;
    stream_margins(ex->geometry(), &deep.margins);
    const std::ptrdiff_t before = std::ptrdiff_t(deep.margins.before);
    deep.fill = [this, l, ex, before, &backend](T* x) {
      FilledMargins& filled = filled_[std::size_t(l)];
      if (filled.side) backend.join_side();
      filled.side = false;
      if (filled.source == x) {  // restrict_residual did it
        filled.source = nullptr;
        return;
      }
      if (filled.x == x) {  // prefill_margins or zero_with_margins did it
        filled.x = nullptr;
        if (!filled.zeroed) return;
        ++timing_.zeroed[l];
        filled.zeroed = false;
        return;
      }
      const auto t0 = Clock::now();
      ex->exchange(backend, x - before);
      timing_.exchange[l] += seconds_since(t0);
      ++timing_.exchanges[l];
    };
    levels_[l].op = levels_[l].op.with_deep_smoothing(std::move(deep));
    // Sweeps that the backend does not fuse run on the extended grid: small blocks untimed,
    // judged by the mean block as the level's own grid is (otherwise tuned by timing inside
    // the first cycle).
    if (l > 0) {
      const Domain& d = agg_->levels[std::size_t(l) - 1].domain;
      if (double(d.global.interior_size()) / d.size <= kUntimedMaxCells)
        backend.prepare_untimed(ex->geometry().extended);
    }
  }
}

template <typename T>
void Multigrid<T>::prefill_margins(int l, T* x) {
  if (std::size_t(l) >= filled_.size() || filled_[std::size_t(l)].x == x) return;
  forget_filled_margins(l);
  const DeepSmoothing<T>& deep = levels_[l].op.deep_smoothing();
  DeepHaloExchanger<T>* ex =
      std::size_t(l) < agg_->deep.size() ? agg_->deep[std::size_t(l)].get() : nullptr;
  if (!deep || !ex || !margins_of(x).covers(deep.margins)) return;
  exchange_alongside(l, x);  // after the pass that computed x
  filled_[std::size_t(l)].x = x;
}

template <typename T>
void Multigrid<T>::exchange_alongside(int l, T* x) {
  Backend<T>& backend = levels_[l].op.backend();
  const auto t0 = Clock::now();
  backend.fork_side();
  agg_->deep[std::size_t(l)]->exchange(
      backend, x - std::ptrdiff_t(levels_[l].op.deep_smoothing().margins.before), Lane::Side);
  timing_.exchange[l] += seconds_since(t0);
  ++timing_.exchanges[l];
  ++timing_.prefilled[l];
  filled_[std::size_t(l)].side = true;
}

template <typename T>
void Multigrid<T>::zero_with_margins(int l, T* x) {
  const DeepSmoothing<T>& deep = levels_[l].op.deep_smoothing();
  if (std::size_t(l) >= filled_.size() || !deep || !margins_of(x).covers(deep.margins)) {
    levels_[l].op.space().zero(x);
    return;
  }
  // The extended grid's interior: the block and the margins' cells that an exchange fills.
  levels_[l].op.backend().combine(x - std::ptrdiff_t(deep.margins.before), nullptr, nullptr, 0,
                                  deep.extended);
  FilledMargins& filled = filled_[std::size_t(l)];
  filled.x = x;  // a side exchange still in flight is joined at the level's next exchange
  filled.zeroed = true;
}

template <typename T>
void Multigrid<T>::forget_filled_margins(int l) {
  if (std::size_t(l) >= filled_.size()) return;
  FilledMargins& filled = filled_[std::size_t(l)];
  if (filled.side) levels_[l].op.backend().join_side();
  filled = {};
}

// execution.overlap on a decomposed hierarchy: a sweep split into core and shell around its
// halo exchange pays only where the exchange is slow, i.e. through host memory (staged, or the
// CPU backend's host transport). Device to device (CUDA IPC, CUDA-aware MPI) a level's
// exchange takes tens of microseconds, less than the split costs: the core and shell slabs
// sweep slower than the whole block, and a split residual cannot be restricted or measured in
// the sweep's pass (docs/performance.md, "Multigrid across GPUs"). The finest level's
// transport is the first coarse level's (the same neighbours and halo mode).
template <typename T>
void Multigrid<T>::attach_split_exchanges(const HelmholtzOperator<T>& fine) {
  if (!agg_->overlap) return;
  split_ = agg_->levels.empty() || !agg_->levels[0].exchanger->device_to_device();
  if (!split_) return;
  Backend<T>& backend = fine.backend();
  if (fine.split_exchange())
    levels_[0].op = levels_[0].op.with_split_exchange(timed_split(0, fine.split_exchange()));
  for (std::size_t i = 0; i < agg_->levels.size(); ++i) {
    HaloExchanger<T>* ex = agg_->levels[i].exchanger.get();
    SplitExchange<T> split;
    split.begin = [ex, &backend](T* x) { ex->begin(backend, x); };
    split.send = [ex, &backend] { ex->send(backend); };
    split.finish = [ex, &backend](T* x) { ex->finish(backend, x); };
    Level& lv = levels_[i + 1];
    lv.op = lv.op.with_split_exchange(timed_split(int(i) + 1, std::move(split)));
  }
}

template <typename T>
nlohmann::json Multigrid<T>::decomposition_report() const {
  if (!agg_) return nullptr;
  clock_.settle(true);
  const auto name = [](const GridDesc& g) {
    return g.dims == 3 ? fmt::format("{}x{}x{}", g.nx, g.ny, g.nz)
                       : fmt::format("{}x{}", g.nx, g.ny);
  };
  // The distributed levels' exchangers (the finest level's one-cell exchanger is the run's).
  ExchangeSetupCost setup;
  for (const DistributedLevel<T>& dl : agg_->levels) setup += dl.exchanger->setup_cost();
  for (const auto& deep : agg_->deep)
    if (deep) setup += deep->setup_cost();
  nlohmann::json levels = nlohmann::json::array();
  for (int l = 0; l <= last_distributed(); ++l) {
    nlohmann::json j{{"level", l},
                     {"placement", "distributed"},
                     {"block", name(grid(l))},
                     {"seconds", timing_.per_level[l]},
                     {"exchange_seconds", timing_.exchange[l]},
                     {"exchanges", timing_.exchanges[l]},
                     {"deep_smoothing_depth", levels_[l].op.deep_smoothing().depth},
                     {"deep_passes", timing_.deep_passes[l]},
                     {"margins_exchanged_alongside", timing_.prefilled[l]},
                     {"margins_zeroed", timing_.zeroed[l]},
                     {"margins_kept", timing_.kept[l]}};
    if (l > 0) j["grid"] = name(agg_->levels[std::size_t(l) - 1].domain.global);
    levels.push_back(j);
  }
  if (coarse_) {
    const Timing& c = coarse_->timing();
    for (int l = 0; l < coarse_->levels(); ++l)
      levels.push_back({{"level", last_distributed() + (coarse_->smooth_finest_ ? 1 : 0) + l},
                        {"placement", agg_->redundant ? "every rank" : "rank 0"},
                        {"grid", name(coarse_->grid(l))},
                        {"seconds", c.per_level[l]}});
  }
  return {
      {"distributed_levels", last_distributed() + 1},
      {"gathered_level", name(agg_->global_coarse)},
      {"gathered_on", agg_->redundant ? "every rank" : "rank 0"},
      {"gather", device_gather_ ? "device" : "host"},
      {"agglomerate_below", agg_->agglomerate_below},
      {"agglomeration_seconds", timing_.agglomeration},
      {"overlap", split_},
      {"setup_tuning_seconds", timing_.setup_tuning},
      {"setup_halo_seconds", timing_.setup_halos},
      {"setup_breakdown",
       {{"levels", timing_.setup_levels},
        {"gathered_hierarchy", timing_.setup_gathered},
        {"buffers", setup.buffers},
        {"ipc_mappings", setup.ipc_mappings},
        {"ipc_events", setup.ipc_events},
        {"device_gather", timing_.setup_gather}}},
      {"staging_pinned_bytes", setup.pinned_bytes},
      // Gathered levels replayed as one launch are timed as one (the coarse solve's seconds).
      {"gathered_replayed", coarse_ && coarse_->replays() > 0},
      {"exchange_seconds", std::accumulate(timing_.exchange.begin(), timing_.exchange.end(), 0.0)},
      {"levels", levels}};
}

template <typename T>
bool Multigrid<T>::corrects_margins(int l) const {
  if (!agg_ || l != last_distributed() || !agg_->redundant || !agg_->root || small_[l] ||
      !settings_.fused || (l == 0 && !smooth_finest_))
    return false;
  const DeepSmoothing<T>& deep = levels_[l].op.deep_smoothing();
  if (!deep) return false;
  // Margins along the stream axis alone (stream_margins): the block's other axes are the
  // gathered grid's, and a margin of whole coarse planes keeps each child's parity.
  const GridDesc& g = grid(l);
  const GridDesc& gc = grid(l + 1);
  const GridDesc& gg = agg_->global_coarse;
  const int axis = g.dims - 1;
  const int r = levels_[l].ratio[std::size_t(axis)];
  const int before = margin_planes(deep.margins.before, g);
  const int after = margin_planes(deep.margins.after, g);
  const std::array<int, 3>& o = agg_->block.offset;
  const int n = axis == 2 ? gc.nz : gc.ny, global = axis == 2 ? gg.nz : gg.ny;
  return gc.nx == gg.nx && (g.dims == 2 || gc.ny == gg.ny) && o[0] == 0 &&
         (g.dims == 2 || o[1] == 0) && before % r == 0 && after % r == 0 &&
         o[std::size_t(axis)] >= before / r && o[std::size_t(axis)] + n + after / r <= global;
}

// The last distributed level l, its residual restricted into lc.f on each rank's block: that
// gathered, and corrected by the gathered hierarchy: on every rank, which then takes its block of
// the correction with one ghost layer (device to device), or on rank 0, which scatters it; then
// prolongated on each rank.
template <typename T>
bool Multigrid<T>::agglomerated_correction(int l, T* x, MultigridCycle type) {
  Level& lv = levels_[l];
  Level& lc = levels_[l + 1];
  Backend<T>& backend = lv.op.backend();
  {
    PhaseTimer<T> t(clock_, &timing_.agglomeration, nullptr, timed_);
    if (device_gather_) {
      // Into a buffer of its own: the gather alternates between two copies, and the gathered
      // levels' visit, recorded for replay with the pointers it was given, would be recorded
      // (and instantiated, ~1 ms) once for each.
      const GridDesc& gc = agg_->global_coarse;
      backend.copy_values(agg_rhs_->data(), device_gather_->gather(backend, lc.f->data()),
                          gc.padded_size());
      device_gather_->release(backend);
    } else {
      stage_local_.resize(grid(l + 1).padded_size());  // at first use: only the host paths
      lc.f->copy_to_host(stage_local_.data());
      agg_->gather(stage_local_, stage_global_);
    }
  }
  if (agg_->root) {
    PhaseTimer<T> t(clock_, &timing_.coarse, nullptr, timed_);
    const HelmholtzOperator<T>& global = coarse_->fine_operator();
    if (!device_gather_) agg_rhs_->copy_from_host(stage_global_.data());
    const T* rhs = agg_rhs_->data();  // the gathered level's right side
    global.space().zero(agg_corr_->data());
    const BoundaryMode zero = BoundaryMode::Homogeneous;
    if (type == MultigridCycle::FMG) {  // a full-multigrid pass's start (Multigrid::fmg)
      coarse_->fmg(agg_corr_->data(), rhs, zero);
    } else if (!coarse_->smooth_finest_) {  // the level's residual itself: one unsmoothed visit
      coarse_->visit_replayed(0, agg_corr_->data(), rhs, type, zero);
    } else {  // the next coarser level: as visit() corrects from the next level
      if (type == MultigridCycle::F) coarse_->visit_replayed(0, agg_corr_->data(), rhs, type, zero);
      coarse_->visit_replayed(0, agg_corr_->data(), rhs, MultigridCycle::V, zero);
    }
    coarse_->clock_.settle(false);
    global.fill_for_interpolation(agg_corr_->data());
    if (!agg_->redundant) agg_corr_->copy_to_host(stage_global_.data());
  }
  if (std::size_t(l) < filled_.size() && filled_[std::size_t(l)].x == x &&
      !filled_[std::size_t(l)].zeroed && corrects_margins(l)) {
    // x's margins hold the neighbours' iterates (prefill_margins): the correction over the
    // extended grid, from the gathered correction's planes past the block, gives them what
    // the neighbours' own prolongation gives their blocks (the same arithmetic per cell).
    PhaseTimer<T> t(clock_, &timing_.transfer, nullptr, timed_);
    const DeepSmoothing<T>& deep = lv.op.deep_smoothing();
    const GridDesc& gg = agg_->global_coarse;
    const int axis = gg.dims - 1;
    const int r = lv.ratio[std::size_t(axis)];
    const int before = margin_planes(deep.margins.before, grid(l)) / r;
    GridDesc view = gg;
    (axis == 2 ? view.nz : view.ny) = (axis == 2 ? deep.extended.nz : deep.extended.ny) / r;
    const std::int64_t start = agg_->block.offset[std::size_t(axis)] - before;
    const T* coarse = agg_corr_->data() + start * (axis == 2 ? gg.stride_z() : gg.stride_y());
    FilledMargins& filled = filled_[std::size_t(l)];
    if (filled.side) backend.join_side();
    filled.side = false;
    backend.prolong_add(coarse, view, x - std::ptrdiff_t(deep.margins.before), deep.extended,
                        lv.ratio, settings_.prolongation);
    return true;
  }
  {
    PhaseTimer<T> t(clock_, &timing_.agglomeration, nullptr, timed_);
    if (agg_->redundant) {
      const GridDesc& gg = agg_->global_coarse;
      const GridDesc& lg = grid(l + 1);
      const bool d3 = gg.dims == 3;
      const std::array<int, 3>& o = agg_->block.offset;
      const std::array<int, 3> e{lg.nx + 2, lg.ny + 2, d3 ? lg.nz + 2 : 1};
      backend.copy_box(lc.u->data() + lg.index(-1, -1, d3 ? -1 : 0), lg.stride_y(), lg.stride_z(),
                       agg_corr_->data() + gg.index(o[0] - 1, o[1] - 1, d3 ? o[2] - 1 : 0),
                       gg.stride_y(), gg.stride_z(), e);
    } else {
      stage_local_.resize(grid(l + 1).padded_size());
      agg_->scatter(stage_global_, stage_local_);
      lc.u->copy_from_host(stage_local_.data());
    }
  }
  PhaseTimer<T> t(clock_, &timing_.transfer, nullptr, timed_);
  backend.prolong_add(lc.u->data(), grid(l + 1), x, grid(l), lv.ratio, settings_.prolongation);
  return false;
}

template <typename T>
SplitExchange<T> Multigrid<T>::timed_split(int l, SplitExchange<T> inner) {
  auto in = std::make_shared<SplitExchange<T>>(std::move(inner));
  SplitExchange<T> s;
  s.begin = [this, l, in](T* x) {
    const auto t0 = Clock::now();
    in->begin(x);
    timing_.exchange[l] += seconds_since(t0);
  };
  s.send = [this, l, in] {
    const auto t0 = Clock::now();
    in->send();
    timing_.exchange[l] += seconds_since(t0);
  };
  s.finish = [this, l, in](T* x) {
    const auto t0 = Clock::now();
    in->finish(x);
    timing_.exchange[l] += seconds_since(t0);
    ++timing_.exchanges[l];
  };
  return s;
}

// Fills the Exchange ghosts of x on level l. Timed on the host: the time includes waiting
// for the work queued before the packing (no device synchronisation of its own, which would
// idle the device once more per exchange).
template <typename T>
void Multigrid<T>::exchange(int l, T* x) {
  Backend<T>& backend = levels_[l].op.backend();
  const auto t0 = Clock::now();
  if (l == 0)
    fine_exchange_(x);
  else
    agg_->levels[std::size_t(l) - 1].exchanger->exchange(backend, x);
  timing_.exchange[l] += seconds_since(t0);
  ++timing_.exchanges[l];
}

// A decomposed hierarchy's members, defined here, for both precisions.
#define HEATSOLVE_DISTRIBUTED_MEMBERS(T)                                           \
  template void Multigrid<T>::attach_deep_smoothing();                             \
  template void Multigrid<T>::prefill_margins(int, T*);                            \
  template void Multigrid<T>::exchange_alongside(int, T*);                         \
  template void Multigrid<T>::zero_with_margins(int, T*);                          \
  template void Multigrid<T>::forget_filled_margins(int);                          \
  template void Multigrid<T>::attach_split_exchanges(const HelmholtzOperator<T>&); \
  template nlohmann::json Multigrid<T>::decomposition_report() const;              \
  template bool Multigrid<T>::agglomerated_correction(int, T*, MultigridCycle);    \
  template bool Multigrid<T>::corrects_margins(int) const;                         \
  template SplitExchange<T> Multigrid<T>::timed_split(int, SplitExchange<T>);      \
  template void Multigrid<T>::exchange(int, T*);
HEATSOLVE_DISTRIBUTED_MEMBERS(float)
HEATSOLVE_DISTRIBUTED_MEMBERS(double)
#undef HEATSOLVE_DISTRIBUTED_MEMBERS

}  // namespace heatsolve
