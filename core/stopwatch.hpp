// Wall-clock intervals on the monotonic clock, in seconds (timings in summaries, set-up
// breakdowns, progress and health checks).
#pragma once

#include <chrono>

namespace heatsolve {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace heatsolve
