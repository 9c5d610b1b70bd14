#include "io/run_identity.hpp"

#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>

namespace heatsolve {

namespace {

RunIdentity& identity() {
  static RunIdentity id;
  return id;
}

std::vector<std::int64_t>& manifest() {
  static std::vector<std::int64_t> steps;
  return steps;
}

}  // namespace

void set_run_identity(const RunIdentity& id) {
  identity() = id;
}

const RunIdentity& run_identity() {
  return identity();
}

std::string new_lineage_id() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += std::size_t(n);
  }
  if (got < sizeof bytes) {  // no getrandom: time and pid are unique enough for a lineage
    const auto now = std::chrono::system_clock::now().time_since_epoch().count();
    const std::uint64_t a = std::uint64_t(now),
                        b = std::uint64_t(::getpid()) * 0x9e3779b97f4a7c15ULL;
    std::memcpy(bytes, &a, 8);
    std::memcpy(bytes + 8, &b, 8);
  }
  std::string hex;
  for (unsigned char c : bytes) hex += fmt::format("{:02x}", c);
  return hex;
}

void record_series_step(std::int64_t step) {
  auto& steps = manifest();
  const auto it = std::lower_bound(steps.begin(), steps.end(), step);
  if (it == steps.end() || *it != step) steps.insert(it, step);
}

std::vector<std::int64_t> series_steps_through(std::int64_t step) {
  const auto& steps = manifest();
  return {steps.begin(), std::upper_bound(steps.begin(), steps.end(), step)};
}

void clear_series_steps() {
  manifest().clear();
}

void fault_point(const char* point, std::int64_t step) {
  static const char* spec = std::getenv("HEATSOLVE_TEST_FAULT");
  if (spec == nullptr || *spec == '\0') return;
  const std::string text(spec);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    start = end + 1;
    const std::size_t at = item.find('@'), colon = item.find(':');
    if (at == std::string::npos || colon == std::string::npos || colon < at) continue;
    if (item.substr(0, at) != point) continue;
    if (std::atoll(item.c_str() + at + 1) != step) continue;
    const std::string sig = item.substr(colon + 1);
    const int signo = sig == "KILL"   ? SIGKILL
                      : sig == "TERM" ? SIGTERM
                      : sig == "USR1" ? SIGUSR1
                      : sig == "INT"  ? SIGINT
                      : sig == "ABRT" ? SIGABRT
                      : sig == "SEGV" ? SIGSEGV
                                      : 0;
    if (signo != 0) ::raise(signo);
  }
}

}  // namespace heatsolve
