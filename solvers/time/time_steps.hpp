// The time steps of a heat run, resolved once the restart point is known.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "io/checkpoint.hpp"

namespace heatsolve {

struct TimeSteps {
  double dt = 0;           // the step in use
  std::int64_t first = 0;  // the step the run starts from (0, or the checkpoint's)
  std::int64_t last = 0;   // the step it ends at
  double start_time = 0;   // simulated time at `first`
  double end_time = 0;     // time.end
  bool rescaled = false;   // restarted with another dt: the remaining time re-split

  // Simulated time after step s: s dt as in an uninterrupted run, time.end exactly at the
  // last step.
  double time_at(std::int64_t s) const {
    if (s == last) return end_time;
    return rescaled ? start_time + double(s - first) * dt : double(s) * dt;
  }
};

// A restart with another dt (time.end changed, dt: auto): the remaining time is split into
// steps of at most the deck's dt. With the same dt, times are s * dt as in an uninterrupted
// run.
inline TimeSteps resolve_time_steps(const Config& cfg, const CheckpointState* restored) {
  TimeSteps t;
  t.dt = cfg.dt;
  t.last = cfg.steps;
  t.end_time = cfg.end_time;
  if (!restored) return t;
  t.first = restored->step;
  t.start_time = restored->time;
  t.rescaled = t.first > 0 && restored->dt != cfg.dt;
  if (!t.rescaled) return t;
  const double remaining = cfg.end_time - t.start_time;
  const auto n = static_cast<std::int64_t>(std::max(0.0, std::ceil(remaining / cfg.dt - 1e-9)));
  if (n > 0) t.dt = remaining / double(n);
  t.last = t.first + n;
  return t;
}

}  // namespace heatsolve
