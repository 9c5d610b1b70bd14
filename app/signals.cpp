#include "app/signals.hpp"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace heatsolve {

namespace {

volatile std::sig_atomic_t g_stop = 0;
constexpr int kSignals[] = {SIGTERM, SIGINT, SIGUSR1};
struct sigaction g_previous[3];
bool g_installed = false;
// The kernel's creation time of this process (/proc/self/stat, field 22, in clock ticks
// since boot) on the steady clock. Static initialisation runs only after the dynamic loader
// has mapped every shared library (ParaView's VTK, HDF5, MPI: 0.4 s here, more on a loaded
// node), and a job script that ends in `exec heatsolve` has spent time in this process
// before that: the batch system counts both. Falls back to "now" where /proc is missing.
std::chrono::steady_clock::time_point kernel_process_start() {
  const auto now = std::chrono::steady_clock::now();
  // C stdio, not iostreams: this runs during static initialisation, and must not throw.
  char stat[4096] = {};
  std::FILE* file = std::fopen("/proc/self/stat", "r");
  if (file == nullptr) return now;
  const bool read = std::fgets(stat, sizeof stat, file) != nullptr;
  std::fclose(file);
  // Field 2 (the command name) may hold spaces and parentheses: count from its last ')'.
  const char* field = read ? std::strrchr(stat, ')') : nullptr;
  if (field == nullptr) return now;
  for (int i = 2; i < 22 && field != nullptr; ++i) field = std::strchr(field + 1, ' ');
  if (field == nullptr) return now;
  char* end = nullptr;
  const double ticks = std::strtod(field + 1, &end);
  const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  timespec boot{};
  if (end == field + 1 || ticks_per_second <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
    return now;
  const double age = double(boot.tv_sec) + 1e-9 * double(boot.tv_nsec) - ticks / ticks_per_second;
  if (!(age >= 0) || age > 86400.0 * 366) return now;  // not a plausible process age
  return now - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(age));
}

const std::chrono::steady_clock::time_point g_process_start = kernel_process_start();

extern "C" void on_stop_signal(int signo) {
  if (g_stop != 0 && signo != SIGUSR1) {
    // Second request: give up on the graceful stop (only async-signal-safe calls here).
    ::signal(signo, SIG_DFL);
    ::raise(signo);
    return;
  }
  g_stop = signo;
}

}  // namespace

void install_stop_handlers() {
  if (g_installed) return;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &g_previous[i]);
  g_installed = true;
}

void restore_stop_handlers() {
  if (!g_installed) return;
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
  g_installed = false;
}

const volatile std::sig_atomic_t* stop_flag() {
  return &g_stop;
}

void reset_stop_flag() {
  g_stop = 0;
}

std::chrono::steady_clock::time_point process_start_time() {
  return g_process_start;
}

const char* signal_name(int signo) {
  switch (signo) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
    default: {
      static char buf[32];
      std::snprintf(buf, sizeof buf, "signal %d", signo);
      return buf;
    }
  }
}

}  // namespace heatsolve
