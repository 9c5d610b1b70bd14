// The output directory's run lock (io/run_lock.*): acquired and described, refused to another
// process (a forked child) with the holder's host and pid, released on destruction, taken
// over from a holder that died, and honoured by `heatsolve run` (run_command) in-process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "app/exit_codes.hpp"
#include "app/run_command.hpp"
#include "io/run_lock.hpp"
#include "tests/file_bytes.hpp"
#include "tests/temp_dir.hpp"

namespace fs = std::filesystem;

namespace heatsolve {
namespace {

using test_support::TempDir;

std::string lock_text(const TempDir& dir) {
  return test_support::file_bytes(dir.path() / RunLock::kFileName);
}

// Runs `fn` in a forked child and returns its exit status (the child leaves with _exit: no
// GoogleTest or static destructors run there). -1 when it did not exit normally.
int in_child(const std::function<int()>& fn) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 100;
    try {
      rc = fn();
    } catch (...) {
      rc = 101;
    }
    ::_exit(rc);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(RunLock, AcquireWritesTheHolderAndReleaseEmptiesTheFile) {
  TempDir dir;
  {
    RunLock lock(dir.path().string());
    EXPECT_EQ(lock.path(), (dir.path() / ".heatsolve.lock").string());
    EXPECT_FALSE(lock.stale_holder().has_value());
    const auto holder = parse_lock_holder(lock_text(dir));
    ASSERT_TRUE(holder.has_value()) << lock_text(dir);
    EXPECT_EQ(holder->pid, long(::getpid()));
    EXPECT_EQ(holder->host, this_host_name());
    EXPECT_EQ(holder->started.size(), 25u) << holder->started;  // 2025-03-01T14:02:11+01:00
    EXPECT_EQ(holder->started[10], 'T') << holder->started;
    EXPECT_EQ(holder->started[22], ':') << holder->started;
  }
  EXPECT_TRUE(fs::exists(dir.path() / ".heatsolve.lock")) << "the lock file is never deleted";
  EXPECT_EQ(lock_text(dir), "") << "a clean release empties the file";
}

TEST(RunLock, AnotherProcessIsRefusedWithTheHolder) {
  TempDir dir;
  const std::string d = dir.path().string();
  const long parent = long(::getpid());
  RunLock lock(d);
  // 0: refused, naming this process; 1: acquired; 2: refused without the holder or message.
  const int rc = in_child([&] {
    try {
      RunLock second(d);
      return 1;
    } catch (const RunLockHeld& e) {
      const std::string what = e.what();
      const bool named = e.holder && e.holder->pid == parent &&
                         e.holder->host == this_host_name() &&
                         what.find("pid " + std::to_string(parent)) != std::string::npos &&
                         what.find("host " + this_host_name()) != std::string::npos &&
                         what.find("in use by another run") != std::string::npos &&
                         what.find(d) != std::string::npos;
      return named ? 0 : 2;
    }
  });
  EXPECT_EQ(rc, 0);
  // flock(2) locks belong to open file descriptions: a second RunLock in this very process
  // is refused too.
  EXPECT_THROW(RunLock again(d), RunLockHeld);
  // The refused attempts leave the holder's information alone.
  const auto holder = parse_lock_holder(lock_text(dir));
  ASSERT_TRUE(holder.has_value());
  EXPECT_EQ(holder->pid, parent);
}

TEST(RunLock, ReleasedOnDestruction) {
  TempDir dir;
  const std::string d = dir.path().string();
  { RunLock lock(d); }
  // 0: acquired, not stale (the lock was released cleanly).
  EXPECT_EQ(in_child([&] {
              RunLock lock(d);
              return lock.stale_holder() ? 2 : 0;
            }),
            0);
  // The child released it too (destructor before _exit).
  RunLock lock(d);
  EXPECT_FALSE(lock.stale_holder().has_value());
}

TEST(RunLock, StaleLockOfADeadProcessIsTakenOver) {
  TempDir dir;
  const std::string d = dir.path().string();
  const pid_t child = ::fork();
  if (child == 0) {
    new RunLock(d);  // never destroyed: the process dies holding it
    ::raise(SIGKILL);
    ::_exit(1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  const auto left = parse_lock_holder(lock_text(dir));
  ASSERT_TRUE(left.has_value()) << "the killed holder's information stays in the file";
  EXPECT_EQ(left->pid, long(child));
  RunLock lock(d);  // the kernel dropped the dead process's flock
  ASSERT_TRUE(lock.stale_holder().has_value());
  EXPECT_EQ(lock.stale_holder()->pid, long(child));
  EXPECT_EQ(parse_lock_holder(lock_text(dir))->pid, long(::getpid()));
}

TEST(RunLock, HolderTextRoundTrip) {
  const LockHolder h{"node17.cluster", 41234, "2025-03-01T14:02:11+01:00"};
  const auto back = parse_lock_holder(format_lock_holder(h));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->host, h.host);
  EXPECT_EQ(back->pid, h.pid);
  EXPECT_EQ(back->started, h.started);
  EXPECT_EQ(h.describe(), "host node17.cluster, pid 41234, started 2025-03-01T14:02:11+01:00");
  EXPECT_FALSE(parse_lock_holder("").has_value());
  EXPECT_FALSE(parse_lock_holder("host=a\npid=x\n").has_value());
  EXPECT_FALSE(parse_lock_holder("\x01\x02garbage").has_value());
}

TEST(RunLock, RunCommandRefusesAHeldDirectoryBeforeWriting) {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  const fs::path deck = dir.path() / "deck.yaml";
  std::ofstream(deck) << "name: t\nproblem: {type: heat, dimensions: 2}\n"
                         "grid: {cells: [8, 8]}\ntime: {steps: 2}\nexecution: {backend: cpu}\n";
  RunOptions opts;
  opts.deck = deck.string();
  opts.overrides = {"output.directory=" + out.string(), "output.formats=[]"};
  opts.quiet = true;
  fs::create_directories(out);
  {
    RunLock held(out.string());
    for (const bool overwrite : {false, true}) {
      opts.overwrite = overwrite;
      ::testing::internal::CaptureStderr();
      EXPECT_EQ(run_command(opts), exit_code::kInputError);
      const std::string err = ::testing::internal::GetCapturedStderr();
      EXPECT_NE(err.find("error: output directory '" + out.string() + "' is in use by another run"),
                std::string::npos)
          << err;
      EXPECT_NE(err.find("pid " + std::to_string(::getpid())), std::string::npos) << err;
    }
    EXPECT_FALSE(fs::exists(out / "summary.json"));
  }
  opts.overwrite = false;
  EXPECT_EQ(run_command(opts), exit_code::kSuccess);
  EXPECT_TRUE(fs::exists(out / "summary.json"));
  EXPECT_EQ(std::ifstream(out / ".heatsolve.lock").peek(), std::char_traits<char>::eof());
}

}  // namespace
}  // namespace heatsolve
