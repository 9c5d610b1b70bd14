// The multigrid cycle's timing, shared by its translation units (multigrid.cpp: the cycles;
// distributed.cpp: a decomposed hierarchy's set-up, exchanges and gathered correction).
#pragma once

#include <chrono>
#include <cstddef>

#include "kernels/backend.hpp"

namespace heatsolve::multigrid_detail {

using Clock = std::chrono::steady_clock;

// Accumulates the time of a phase into `slot` (the backend is synchronised first, so that a
// device backend's queued work is charged to the phase that queued it); inactive, nothing
// (no synchronisation either: inside a subtree timed as one unit).
template <typename T>
class PhaseTimer {
 public:
  PhaseTimer(Backend<T>& b, double& slot, bool active = true)
      : b_(b), slot_(slot), t0_(Clock::now()), active_(active) {}
  ~PhaseTimer() {
    if (!active_) return;
    b_.synchronize();
    slot_ += std::chrono::duration<double>(Clock::now() - t0_).count();
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  Backend<T>& b_;
  double& slot_;
  Clock::time_point t0_;
  bool active_;
};

// Levels smaller than this are visited as one timed unit (a cycle's whole subtree below the
// first of them, one synchronisation): per-phase synchronisation would idle the device
// between their short, launch-bound kernels.
constexpr std::size_t kUnitTimedCells = 128 * 128 * 128;

// Levels of at most this many cells (all ranks) sweep with the backend's variant for small
// grids, untimed (Backend::prepare_untimed): their sweeps are latency-bound, and timing every
// variant on each of them costs more than the choice can win.
constexpr double kUntimedMaxCells = double(128 * 128 * 128);

}  // namespace heatsolve::multigrid_detail
