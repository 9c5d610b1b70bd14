// The multigrid's per-phase timing (solvers/multigrid/phase_timer.hpp): phases are stamp pairs
// in the backend's work order, added to their slots once settled; the hierarchy's reported
// seconds account for its cycles' time without counting any of it twice.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "solvers/multigrid/multigrid.hpp"

namespace heatsolve {
namespace {

using multigrid_detail::PhaseClock;
using multigrid_detail::PhaseTimer;

TEST(PhaseTimer, AddsItsPhaseToBothSlotsOnceSettled) {
  CpuBackend<double> backend;
  PhaseClock<double> clock(backend);
  double a = 0, b = 0, untouched = 0;
  {
    PhaseTimer<double> t(clock, &a, &b);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  {
    PhaseTimer<double> t(clock, &untouched, nullptr, false);  // inside a unit timed as a whole
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  clock.settle(false);  // a synchronous backend has passed every stamp
  EXPECT_GE(a, 0.02);
  EXPECT_LT(a, 1.0);
  EXPECT_EQ(a, b);
  EXPECT_EQ(untouched, 0.0);
  clock.settle(true);  // nothing left: no phase is added twice
  EXPECT_EQ(a, b);
  EXPECT_GE(a, 0.02);
  EXPECT_LT(a, 1.0);
}

// A 64^3 hierarchy: the finest level timed phase by phase, 32^3 and below as one unit. The
// smoothing, transfer and coarse seconds are disjoint parts of the cycles' time: together
// most of it and never more; the unit's seconds are the coarse solve's and its level's.
TEST(PhaseTimer, HierarchySecondsAccountForTheCycles) {
  GridDesc g;
  g.dims = 3;
  g.nx = g.ny = g.nz = 64;
  g.hx = g.hy = g.hz = 1.0 / 64;
  BoundaryFaces faces{};
  for (FaceBC& f : faces) f = FaceBC{BoundaryType::Dirichlet, 0.0};
  CpuBackend<double> backend;
  const HelmholtzOperator<double> op(FieldSpace<double>(backend, g), faces, 0.0);
  Multigrid<double> mg(op, MultigridSettings{});
  std::vector<double> u(g.padded_size(), 0.0), f(g.padded_size(), 0.0);
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) f[g.index(i, j, k)] = 1.0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 0; c < 4; ++c) mg.cycle(u.data(), f.data());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& t = mg.timing();
  const double parts = t.smooth + t.transfer + t.coarse;
  ASSERT_GE(t.per_level.size(), 2u);
  EXPECT_GT(t.per_level[0], 0.0);
  EXPECT_GT(t.per_level[1], 0.0);
  EXPECT_EQ(t.per_level[1], t.coarse);  // the unit from 32^3 down, its coarse solve untimed
  for (std::size_t l = 2; l < t.per_level.size(); ++l) EXPECT_EQ(t.per_level[l], 0.0) << l;
  EXPECT_NEAR(t.smooth, t.per_level[0], 1e-12);  // only the finest level smooths timed
  EXPECT_GT(t.transfer, 0.0);
  EXPECT_LE(parts, wall);
  EXPECT_GE(parts, 0.5 * wall);
}

}  // namespace
}  // namespace heatsolve
