// Progress output: a live status line on a terminal, periodic log lines in batch jobs.
#pragma once

#include <chrono>
#include <cstdio>

#include "solvers/solver.hpp"

namespace heatsolve {

class ProgressPrinter {
 public:
  // `heat`: steps and simulated time; else iterations and residual.
  ProgressPrinter(bool heat, std::FILE* out, bool is_tty);
  void operator()(const ProgressInfo& p);
  void finish();  // ends the live line on a TTY

 private:
  bool heat_, tty_;
  std::FILE* out_;
  double last_log_elapsed_ = 0;
  int last_decile_ = 0;
  bool live_line_ = false;
};

}  // namespace heatsolve
