// The first half of a bitwise-restart test: the deck stopped after `first` steps or
// iterations, with a checkpoint there (the second half runs the whole deck from it).
#pragma once

#include <cstdint>

#include "io/config.hpp"

namespace heatsolve::test_support {

inline Config stopped_after(Config cfg, std::int64_t first) {
  cfg.checkpoint_every = first;
  if (cfg.problem == ProblemType::Poisson) {
    cfg.max_iterations = first;
  } else {
    cfg.steps = first;
    cfg.end_time = cfg.dt * double(first);
  }
  return cfg;
}

}  // namespace heatsolve::test_support
