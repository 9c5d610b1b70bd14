#include "app/progress.hpp"

#include <fmt/format.h>

#include <string>

namespace heatsolve {

namespace {
std::string format_duration(double s) {
  if (s < 0) return "?";
  const long t = static_cast<long>(s + 0.5);
  return fmt::format("{:02}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60);
}
}  // namespace

ProgressPrinter::ProgressPrinter(bool heat, std::FILE* out, bool is_tty)
    : heat_(heat), tty_(is_tty), out_(out) {}

void ProgressPrinter::operator()(const ProgressInfo& p) {
  const std::string what =
      heat_
          ? fmt::format("step {}/{}  t={:.6g}  |du/dt|={:.3e}", p.step, p.total, p.time, p.residual)
          : fmt::format("iteration {}/{}  residual={:.3e}", p.step, p.total, p.residual);
  const std::string line =
      fmt::format("{}  {:.3g} Mpoints/s  elapsed {}  ETA {}", what, p.points_per_second * 1e-6,
                  format_duration(p.elapsed_seconds), format_duration(p.eta_seconds));
  if (tty_) {
    fmt::print(out_, "\r\033[K{}", line);
    std::fflush(out_);
    live_line_ = true;
    return;
  }
  // Batch: a line every 30 s or every 10 % of the run, whichever comes first.
  const int decile = p.total > 0 ? int(10 * p.step / p.total) : 0;
  if (p.elapsed_seconds - last_log_elapsed_ >= 30.0 || decile > last_decile_ || p.step == p.total) {
    fmt::print(out_, "[heatsolve] {}\n", line);
    std::fflush(out_);
    last_log_elapsed_ = p.elapsed_seconds;
    last_decile_ = decile;
  }
}

void ProgressPrinter::finish() {
  if (live_line_) fmt::print(out_, "\n");
  live_line_ = false;
}

}  // namespace heatsolve
