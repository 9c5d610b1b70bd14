// When output.catalyst's scripts run (CatalystSchedule): every multiple of a script's `every`
// (the initial state included) and the last step; fused step blocks end on those steps.
#include <gtest/gtest.h>

#include "io/catalyst_adaptor.hpp"

namespace heatsolve {
namespace {

TEST(CatalystSchedule, MultiplesAndTheLastStep) {
  const CatalystSchedule s({4, 5});
  EXPECT_TRUE(s.due(0, 0, false));
  EXPECT_TRUE(s.due(0, 8, false));
  EXPECT_FALSE(s.due(0, 10, false));
  EXPECT_TRUE(s.due(0, 10, true));  // the last step, whatever the cadence
  EXPECT_TRUE(s.due(1, 10, false));
  EXPECT_TRUE(s.any_due(5, false));
  EXPECT_FALSE(s.any_due(7, false));
  EXPECT_TRUE(s.any_due(7, true));
}

TEST(CatalystSchedule, StepsToTheNextCall) {
  const CatalystSchedule s({4, 6});
  EXPECT_EQ(s.steps_to_next(0), 4);
  EXPECT_EQ(s.steps_to_next(3), 1);
  EXPECT_EQ(s.steps_to_next(4), 2);  // 6 comes before 8
  EXPECT_EQ(s.steps_to_next(11), 1);
  EXPECT_GT(CatalystSchedule().steps_to_next(5), 1000000);  // no scripts: no limit
}

}  // namespace
}  // namespace heatsolve
