// run_in_child: a probe that crashes (as HDF5 1.10 can on a damaged file) ends the child, not
// the test process, and each ending is told apart.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <stdexcept>

#include "io/crash_isolation.hpp"

namespace heatsolve {
namespace {

TEST(CrashIsolation, TellsFinishedThrownAndCrashedApart) {
  EXPECT_EQ(run_in_child([] {}).end, ChildEnd::Finished);
  EXPECT_EQ(run_in_child([] { throw std::runtime_error("unreadable"); }).end, ChildEnd::Threw);
  const ChildResult aborted = run_in_child([] { std::abort(); });
  EXPECT_EQ(aborted.end, ChildEnd::Crashed);
  EXPECT_EQ(aborted.signal, SIGABRT);
  const ChildResult segv = run_in_child([] { std::raise(SIGSEGV); });
  EXPECT_EQ(segv.end, ChildEnd::Crashed);
  EXPECT_EQ(segv.signal, SIGSEGV);
}

TEST(CrashIsolation, TheChildChangesNothingOfTheCaller) {
  int value = 1;
  EXPECT_EQ(run_in_child([&] { value = 2; }).end, ChildEnd::Finished);
  EXPECT_EQ(value, 1);  // the child's own copy
}

}  // namespace
}  // namespace heatsolve
