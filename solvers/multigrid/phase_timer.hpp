// The multigrid cycle's timing, shared by its translation units (multigrid.cpp: the cycles;
// distributed.cpp: a decomposed hierarchy's set-up, exchanges and gathered correction).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <utility>

#include "kernels/backend.hpp"

namespace heatsolve::multigrid_detail {

using Clock = std::chrono::steady_clock;

// The phases of a hierarchy's work, timed on the backend without waiting for it: a phase is
// a pair of stamps in the backend's work order (Backend::stamp), added to its slots once the
// backend has passed the later one. A device thus never idles for the timing (a host
// synchronisation per phase did, several times a level and visit).
template <typename T>
class PhaseClock {
 public:
  explicit PhaseClock(Backend<T>& backend) : b_(backend) {}
  Backend<T>& backend() const { return b_; }
  void add(std::size_t from, std::size_t to, std::array<double*, 2> slots) {
    pending_.push_back({from, to, slots});
    // Stamps stay readable for Backend::kMaxStamps, which a gathered hierarchy's clock on the
    // same backend shares: settle well before.
    if (pending_.size() > Backend<T>::kMaxStamps / 8) settle(true);
  }
  // Adds the phases the backend has passed; `wait`: all of them, waiting for the backend.
  void settle(bool wait) {
    while (!pending_.empty() && (wait || b_.stamp_done(pending_.front().to))) {
      const Phase& p = pending_.front();
      const double s = b_.seconds_between(p.from, p.to);
      for (double* slot : p.slots)
        if (slot) *slot += s;
      pending_.pop_front();
    }
  }

 private:
  struct Phase {
    std::size_t from, to;
    std::array<double*, 2> slots;
  };
  Backend<T>& b_;
  std::deque<Phase> pending_;
};

// Times its scope as a phase of `clock` into one or two slots; inactive, nothing (inside a
// subtree timed as one unit).
template <typename T>
class PhaseTimer {
 public:
  PhaseTimer(PhaseClock<T>& clock, double* slot, double* also = nullptr, bool active = true)
      : clock_(clock), slots_{slot, also}, active_(active) {
    if (active_) from_ = clock_.backend().stamp();
  }
  ~PhaseTimer() {
    if (active_) clock_.add(from_, clock_.backend().stamp(), slots_);
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  PhaseClock<T>& clock_;
  std::array<double*, 2> slots_;
  std::size_t from_ = 0;
  bool active_;
};

// A flag set for a scope, then back to what it was (a subtree's visits untimed).
class ScopedFlag {
 public:
  ScopedFlag(bool& flag, bool value) : flag_(flag), saved_(flag) { flag_ = value; }
  ~ScopedFlag() { flag_ = saved_; }
  ScopedFlag(const ScopedFlag&) = delete;
  ScopedFlag& operator=(const ScopedFlag&) = delete;

 private:
  bool& flag_;
  bool saved_;
};

// Host work for the backend's next wait for a device result (Backend::while_waiting), forgotten
// at the end of the scope where that wait did not come (the pass declined, or threw before it).
template <typename T>
class WorkWhileWaiting {
 public:
  WorkWhileWaiting(Backend<T>& backend, std::function<void()> work) : b_(backend) {
    b_.while_waiting(std::move(work));
  }
  ~WorkWhileWaiting() { b_.while_waiting(nullptr); }
  WorkWhileWaiting(const WorkWhileWaiting&) = delete;
  WorkWhileWaiting& operator=(const WorkWhileWaiting&) = delete;

 private:
  Backend<T>& b_;
};

// Levels smaller than this are visited as one timed unit (a cycle's whole subtree below the
// first of them, one phase): their short, launch-bound kernels are timed together.
constexpr std::size_t kUnitTimedCells = 128 * 128 * 128;

// Levels of at most this many cells (a distributed level: per block, on average) sweep with
// the backend's variant for small grids, untimed (Backend::prepare_untimed): their sweeps are
// latency-bound, and timing every variant on each of them costs more than the choice can win.
constexpr double kUntimedMaxCells = double(128 * 128 * 128);

}  // namespace heatsolve::multigrid_detail
