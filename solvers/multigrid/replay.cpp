// The small levels replayed as one launch (solvers/multigrid/multigrid.hpp, visit_replayed):
// a visit recorded at its second call, or ahead of it while the host waits for the device
// (prerecord_small_visit), then replayed.
#include "solvers/multigrid/multigrid.hpp"
#include "solvers/multigrid/phase_timer.hpp"

namespace heatsolve {

using multigrid_detail::kUnitTimedCells;
using multigrid_detail::ScopedFlag;

template <typename T>
bool Multigrid<T>::visit_replayed(int l, T* x, const T* f, MultigridCycle type, BoundaryMode m) {
  // Only the correction equation's visits (zero faces): the problem's faces may change with
  // time (Deck visits of full multigrid), and a recording keeps the values it was made with. A
  // coarsest solve by CG reads dot products on the host: nothing to record. The recordings
  // are few (a V-cycle's, an F-cycle's, full multigrid's levels); fields that change from
  // call to call are not recorded past a bound.
  constexpr std::size_t kMaxRecordings = 64;
  const auto key = std::make_tuple(l, x, f, type, m);
  if (!replayable(l, m) || (replayed_.size() >= kMaxRecordings && !replayed_.count(key)))
    return visit(l, x, f, type, m);
  const ScopedFlag untimed(timed_, false);  // no timing stamps inside a recording
  if (levels_[l].op.backend().replay(&replayed_[key], [&] { visit(l, x, f, type, m); })) ++replays_;
  return false;  // a hierarchy on one rank's memory has no Exchange ghosts to have filled
}

template <typename T>
bool Multigrid<T>::replayable(int l, BoundaryMode m) const {
  return settings_.replay && m == BoundaryMode::Homogeneous && !agg_ && levels_.back().direct &&
         levels_[l].op.backend().records();
}

template <typename T>
bool Multigrid<T>::prerecord_small_visit() {
  if (agg_) return !coarse_ || coarse_->prerecord_visit(0, agg_corr_->data(), agg_rhs_->data());
  for (int l = 1; l < int(levels_.size()); ++l)
    if (grid(l).interior_size() < kUnitTimedCells)
      return prerecord_visit(l, levels_[l].u->data(), levels_[l].f->data());
  return true;  // no such level
}

template <typename T>
bool Multigrid<T>::prerecord_visit(int l, T* x, const T* f) {
  const BoundaryMode m = BoundaryMode::Homogeneous;
  if (!replayable(l, m)) return true;  // never recorded
  const auto slot = replayed_.find(std::make_tuple(l, x, f, MultigridCycle::V, m));
  if (slot == replayed_.end()) return false;  // not run yet: its first call does lazy set-up
  const ScopedFlag untimed(timed_, false);
  if (levels_[l].op.backend().prerecord(&slot->second,
                                        [&] { visit(l, x, f, MultigridCycle::V, m); }))
    ++recorded_ahead_;
  return true;
}

template <typename T>
long long Multigrid<T>::replays() const {
  return replays_ + (coarse_ ? coarse_->replays() : 0);
}

template <typename T>
long long Multigrid<T>::recorded_ahead() const {
  return recorded_ahead_ + (coarse_ ? coarse_->recorded_ahead() : 0);
}

#define HS_INSTANTIATE(T)                                                                      \
  template bool Multigrid<T>::visit_replayed(int, T*, const T*, MultigridCycle, BoundaryMode); \
  template bool Multigrid<T>::replayable(int, BoundaryMode) const;                             \
  template bool Multigrid<T>::prerecord_small_visit();                                         \
  template bool Multigrid<T>::prerecord_visit(int, T*, const T*);                              \
  template long long Multigrid<T>::replays() const;                                            \
  template long long Multigrid<T>::recorded_ahead() const;
HS_INSTANTIATE(float)
HS_INSTANTIATE(double)
#undef HS_INSTANTIATE

}  // namespace heatsolve
