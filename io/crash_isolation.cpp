#include "io/crash_isolation.hpp"

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

namespace heatsolve {

ChildResult run_in_child(const std::function<void()>& probe) {
  std::fflush(nullptr);  // nothing buffered twice
  const pid_t pid = fork();
  if (pid < 0) {
    try {
      probe();
    } catch (...) {
      return {ChildEnd::Threw};
    }
    return {ChildEnd::Finished};
  }
  if (pid == 0) {
    // Quietly: the library's own complaints and the parent's crash handlers (MPI's print a
    // backtrace) are not the caller's report.
    for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO), dup2(null, STDOUT_FILENO);
    int code = 0;
    try {
      probe();
    } catch (...) {
      code = 3;
    }
    _exit(code);  // no atexit handlers, no flushing of the parent's buffers
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return {ChildEnd::Threw};
  if (WIFSIGNALED(status)) return {ChildEnd::Crashed, WTERMSIG(status)};
  return {WEXITSTATUS(status) == 0 ? ChildEnd::Finished : ChildEnd::Threw};
}

}  // namespace heatsolve
