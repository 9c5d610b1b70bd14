#include "app/signals.hpp"

#include <signal.h>

#include <cstdio>

namespace heatsolve {

namespace {

volatile std::sig_atomic_t g_stop = 0;
constexpr int kSignals[] = {SIGTERM, SIGINT, SIGUSR1};
struct sigaction g_previous[3];
bool g_installed = false;
const std::chrono::steady_clock::time_point g_process_start = std::chrono::steady_clock::now();

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
