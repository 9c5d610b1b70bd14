// The deck's event steps: field output (output.every, output.interval), checkpoints
// (output.checkpoint_every), diagnostics rows (output.diagnostics) and in-situ calls
// (output.catalyst). One rule for all of them: an event at step s is due
// when s is a multiple of its period; steps_to_next(s) counts the steps from s to the next
// due step, so a fused block that ends there lands on it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "io/catalyst_adaptor.hpp"
#include "io/config.hpp"

namespace heatsolve {

class EventSchedule {
 public:
  EventSchedule(const Config& cfg, const CatalystAdaptor* catalyst)
      : output_(cfg.output_every),
        interval_(cfg.output_interval_steps),
        checkpoint_(cfg.checkpoint_every),
        diagnostics_(cfg.diagnostics),
        catalyst_(catalyst) {}

  // output.every or output.interval (the deck made its dt land on each interval: a step
  // count).
  bool output_due(std::int64_t s) const { return due(output_, s) || due(interval_, s); }
  bool diagnostics_due(std::int64_t s) const {
    return diagnostics_.enabled() && diagnostics_.due(s);
  }
  bool checkpoint_due(std::int64_t s) const { return due(checkpoint_, s); }
  // Steps from s (done) to the next step at which any event is due (>= 1).
  std::int64_t steps_to_next(std::int64_t s) const {
    std::int64_t k = std::numeric_limits<std::int64_t>::max();
    k = std::min(k, to_next(output_, s));
    k = std::min(k, to_next(interval_, s));
    k = std::min(k, to_next(checkpoint_, s));
    k = std::min(k, to_next(diagnostics_.every, s));
    k = std::min(k, to_next(diagnostics_.interval_steps, s));
    if (catalyst_) k = std::min(k, catalyst_->schedule().steps_to_next(s));
    return std::max<std::int64_t>(k, 1);
  }

 private:
  static bool due(std::int64_t every, std::int64_t s) { return every > 0 && s % every == 0; }
  static std::int64_t to_next(std::int64_t every, std::int64_t s) {
    return every > 0 ? every - s % every : std::numeric_limits<std::int64_t>::max();
  }
  std::int64_t output_, interval_, checkpoint_;
  DiagnosticsOutput diagnostics_;
  const CatalystAdaptor* catalyst_;
};

}  // namespace heatsolve
