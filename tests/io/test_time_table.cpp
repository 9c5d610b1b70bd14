// Time-varying inputs (core/time_table.hpp): TimeTable's semantics (knots reproduced exactly,
// linear between, held outside).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/time_table.hpp"

namespace heatsolve {
namespace {

// ---- TimeTable ------------------------------------------------------------------------------

TEST(TimeTable, ConstantIsTheSameAtEveryTime) {
  const TimeTable c(2.5);
  for (double t : {0.0, 1e-300, 1.0, 1e300, -1.0}) EXPECT_EQ(c.at(t), 2.5);
  EXPECT_TRUE(c.constant());
  ASSERT_EQ(c.knots().size(), 1u);
  EXPECT_EQ(c.knots()[0].t, 0.0);
  EXPECT_EQ(c.knots()[0].v, 2.5);
  EXPECT_EQ(TimeTable().at(3.0), 0.0);
  EXPECT_TRUE(TimeTable().constant());
}

TEST(TimeTable, LinearRampIsReproducedAtItsKnotsAndHeldAfterTheLast) {
  // A ramp from 300 K at t = 0.1 to 400 K at t = 1.1, then down to 350 at t = 2.
  const TimeTable ramp({{0.1, 300.0}, {1.1, 400.0}, {2.0, 350.0}});
  EXPECT_FALSE(ramp.constant());
  // Exactly the knot values at the knot times.
  for (const auto& k : ramp.knots()) EXPECT_EQ(ramp.at(k.t), k.v) << k.t;
  // Held before the first knot and after the last one.
  EXPECT_EQ(ramp.at(0.0), 300.0);
  EXPECT_EQ(ramp.at(-5.0), 300.0);
  EXPECT_EQ(ramp.at(2.0 + 1e-12), 350.0);
  EXPECT_EQ(ramp.at(1e6), 350.0);
  // Linear in between (to rounding).
  EXPECT_NEAR(ramp.at(0.6), 350.0, 1e-12);
  EXPECT_NEAR(ramp.at(0.35), 325.0, 1e-12);
  EXPECT_NEAR(ramp.at(1.55), 375.0, 1e-12);
  // A ramp sampled at many times never leaves its segment's range.
  for (int i = 0; i <= 1000; ++i) {
    const double t = 0.1 + i * 1e-3;
    EXPECT_GE(ramp.at(t), 300.0);
    EXPECT_LE(ramp.at(t), 400.0);
  }
  // Just before a knot the value approaches it from the previous segment.
  EXPECT_NEAR(ramp.at(std::nextafter(1.1, 0.0)), 400.0, 1e-9);
}

TEST(TimeTable, AllEqualValuesAreConstant) {
  const TimeTable flat({{0.0, 1.0}, {1.0, 1.0}, {5.0, 1.0}});
  EXPECT_TRUE(flat.constant());
  EXPECT_EQ(flat.at(3.3), 1.0);
}

TEST(TimeTable, RefusesBadKnots) {
  using K = std::vector<TimeTable::Knot>;
  EXPECT_THROW(TimeTable(K{}), std::invalid_argument);
  EXPECT_THROW(TimeTable(K{{0, 1}, {0, 2}}), std::invalid_argument);
  EXPECT_THROW(TimeTable(K{{1, 1}, {0.5, 2}}), std::invalid_argument);
  EXPECT_THROW(TimeTable(K{{-1, 1}}), std::invalid_argument);
  EXPECT_THROW(TimeTable(K{{0, std::numeric_limits<double>::infinity()}}), std::invalid_argument);
  EXPECT_THROW(TimeTable(K{{std::nan(""), 1}}), std::invalid_argument);
}

}  // namespace
}  // namespace heatsolve
