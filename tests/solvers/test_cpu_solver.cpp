// CPU backend against analytic solutions: the reference every other backend is tested with.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "solvers/solver.hpp"
#include "tests/solver_test_util.hpp"

namespace heatsolve {
namespace {

using testing::heat_config;
using testing::poisson_config;

// Max error against A exp(-alpha pi^2 sum(1/L^2) t) prod sin(pi x_i / L_i), relative to A.
double sine_decay_error(int dims, int n, double t_end) {
  Config cfg = heat_config(dims, n, t_end);
  cfg.initial.type = ShapeType::Sine;
  cfg.initial.amplitude = 2.0;
  std::vector<double> u;
  run_serial<double>(cfg, &u);
  const double decay = std::exp(-cfg.diffusivity * M_PI * M_PI * dims * t_end);
  const int nz = dims == 3 ? n : 1;
  const double h = 1.0 / n;
  double err = 0;
  std::size_t idx = 0;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i, ++idx) {
        double exact =
            2.0 * decay * std::sin(M_PI * (i + 0.5) * h) * std::sin(M_PI * (j + 0.5) * h);
        if (dims == 3) exact *= std::sin(M_PI * (k + 0.5) * h);
        err = std::max(err, std::abs(u[idx] - exact));
      }
  return err / 2.0;
}

TEST(CpuSolver, SineDecaySecondOrder2D) {
  const double e1 = sine_decay_error(2, 16, 0.05);
  const double e2 = sine_decay_error(2, 32, 0.05);
  const double e3 = sine_decay_error(2, 64, 0.05);
  EXPECT_LT(e3, 2e-3);
  EXPECT_NEAR(e1 / e2, 4.0, 0.4) << e1 << " " << e2;
  EXPECT_NEAR(e2 / e3, 4.0, 0.4) << e2 << " " << e3;
}

TEST(CpuSolver, SineDecaySecondOrder3D) {
  const double e1 = sine_decay_error(3, 12, 0.02);
  const double e2 = sine_decay_error(3, 24, 0.02);
  const double e3 = sine_decay_error(3, 48, 0.02);
  EXPECT_LT(e3, 2e-3);
  EXPECT_NEAR(e1 / e2, 4.0, 0.4) << e1 << " " << e2;
  EXPECT_NEAR(e2 / e3, 4.0, 0.4) << e2 << " " << e3;
}

TEST(CpuSolver, InsulatedBoxConservesHeat) {
  for (int dims : {2, 3}) {
    Config cfg = heat_config(dims, 20, 0.05, 0.9);
    for (auto& f : cfg.boundary) f = FaceBC{BoundaryType::Neumann, 0.0};
    cfg.initial.type = ShapeType::Gaussian;
    cfg.initial.amplitude = 3.0;
    cfg.initial.width = 0.1;
    cfg.initial.center = {0.3, 0.6, 0.4};
    Config start = cfg;
    start.steps = 0;
    const RunResult r0 = run_serial<double>(start, nullptr);
    const RunResult r1 = run_serial<double>(cfg, nullptr);
    ASSERT_GT(r0.total_heat, 0.01);
    EXPECT_NEAR(r1.total_heat / r0.total_heat, 1.0, 1e-12) << "dims " << dims;
  }
}

TEST(CpuSolver, PeriodicBoxConservesHeatAndSmooths) {
  Config cfg = heat_config(3, 16, 0.02, 0.9);
  for (auto& f : cfg.boundary) f = FaceBC{BoundaryType::Periodic, 0.0};
  cfg.initial.type = ShapeType::Box;
  cfg.initial.value = 1.0;
  cfg.initial.lower = {0.0, 0.0, 0.0};
  cfg.initial.upper = {0.3, 0.5, 0.7};
  Config start = cfg;
  start.steps = 0;
  std::vector<double> u0, u1;
  const RunResult r0 = run_serial<double>(start, &u0);
  const RunResult r1 = run_serial<double>(cfg, &u1);
  EXPECT_NEAR(r1.total_heat / r0.total_heat, 1.0, 1e-12);
  EXPECT_LT(*std::max_element(u1.begin(), u1.end()), 1.0);
  EXPECT_GT(*std::min_element(u1.begin(), u1.end()), 0.0);  // heat crossed the periodic faces
}

TEST(CpuSolver, NeumannFluxChangesHeatAtPrescribedRate) {
  // du/dn = g on x- only (outward derivative), insulated elsewhere: d/dt total = alpha*g*area.
  Config cfg = heat_config(2, 24, 0.01, 0.9);
  for (auto& f : cfg.boundary) f = FaceBC{BoundaryType::Neumann, 0.0};
  cfg.boundary[0].value = 2.0;
  cfg.initial.type = ShapeType::Uniform;
  cfg.initial.value = 1.0;
  const RunResult r = run_serial<double>(cfg, nullptr);
  EXPECT_NEAR(r.total_heat, 1.0 + 2.0 * 1.0 * cfg.end_time, 1e-12);
}

TEST(CpuSolver, PoissonManufacturedSolution) {
  // -lap u = 3 pi^2 sin(pi x) sin(pi y) sin(pi z) has u = sin sin sin with u = 0 on the faces.
  const int n = 16;
  Config cfg = poisson_config(3, n);
  cfg.tolerance = 1e-9;
  cfg.source.type = ShapeType::Sine;
  cfg.source.amplitude = 3 * M_PI * M_PI;
  std::vector<double> u;
  const RunResult r = run_serial<double>(cfg, &u);
  ASSERT_TRUE(r.converged) << r.final_residual;
  EXPECT_LE(r.final_residual, cfg.tolerance);
  const double h = 1.0 / n;
  double err = 0;
  std::size_t idx = 0;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i, ++idx) {
        const double exact = std::sin(M_PI * (i + 0.5) * h) * std::sin(M_PI * (j + 0.5) * h) *
                             std::sin(M_PI * (k + 0.5) * h);
        err = std::max(err, std::abs(u[idx] - exact));
      }
  // Discretisation error of the 7-point Laplacian: about pi^2 h^2 / 4 here.
  EXPECT_LT(err, 0.012);
  EXPECT_GT(err, 1e-4);  // a zero error would mean we compared with ourselves
}

// Jacobi with execution.time_block k runs the sweeps between residual checks in blocks of
// Backend::stencil_steps (emulated by single sweeps on the CPU): the same iterates, bit for
// bit, for a source and for the relative-update check of a Laplace problem (which compares
// the checked sweep with its predecessor), with checks, outputs and checkpoints that do not
// line up with the blocks.
TEST(CpuSolver, JacobiInFusedBlocksIsBitwiseSingleSweeps) {
  for (const bool with_source : {true, false}) {
    Config cfg = poisson_config(3, 12);
    cfg.tolerance = 1e-7;
    cfg.check_every = 7;
    if (with_source) {
      cfg.source.type = ShapeType::Sine;
      cfg.source.amplitude = 3 * M_PI * M_PI;
    } else {
      cfg.boundary[0] = FaceBC{BoundaryType::Dirichlet, 1.0};
      cfg.boundary[3] = FaceBC{BoundaryType::Neumann, 0.5};
    }
    std::vector<double> plain, fused;
    const RunResult a = run_serial<double>(cfg, &plain);
    cfg.time_block = 4;
    const RunResult b = run_serial<double>(cfg, &fused);
    ASSERT_TRUE(a.converged);
    EXPECT_EQ(a.steps, b.steps);
    EXPECT_EQ(a.steps % 7, 0);
    ASSERT_EQ(a.residual_history.size(), b.residual_history.size());
    for (std::size_t i = 0; i < a.residual_history.size(); ++i)
      EXPECT_EQ(a.residual_history[i], b.residual_history[i]);
    EXPECT_EQ(plain, fused);
  }
}

TEST(CpuSolver, LaplaceWithUniformBoundaryReachesConstant) {
  Config cfg = poisson_config(2, 24);
  for (auto& f : cfg.boundary) f = FaceBC{BoundaryType::Dirichlet, 1.5};
  cfg.tolerance = 1e-9;
  std::vector<double> u;
  const RunResult r = run_serial<double>(cfg, &u);
  ASSERT_TRUE(r.converged);
  for (double v : u) ASSERT_NEAR(v, 1.5, 1e-5);
}

TEST(CpuSolver, FloatAndDoubleAgree) {
  Config cfg = heat_config(3, 16, 0.01);
  cfg.initial.type = ShapeType::Sine;
  cfg.initial.amplitude = 1.0;
  std::vector<double> ud;
  std::vector<float> uf;
  run_serial<double>(cfg, &ud);
  cfg.precision = Precision::Float;
  run_serial<float>(cfg, &uf);
  ASSERT_EQ(ud.size(), uf.size());
  for (std::size_t i = 0; i < ud.size(); ++i) ASSERT_NEAR(uf[i], ud[i], 1e-5);
}

}  // namespace
}  // namespace heatsolve

namespace heatsolve {
namespace {

TEST(CpuSolver, AndersonNeedsFiveTimesFewerIterationsThanJacobi) {
  const int n = 32;
  Config cfg = testing::poisson_config(3, n);
  cfg.tolerance = 1e-8;
  cfg.check_every = 5;
  cfg.source.type = ShapeType::Gaussian;  // not an eigenmode: Jacobi must work for it
  cfg.source.amplitude = 50.0;
  cfg.source.width = 0.15;
  cfg.source.center = {0.4, 0.5, 0.6};
  std::vector<double> u_jacobi, u_anderson;
  const RunResult jac = run_serial<double>(cfg, &u_jacobi);
  cfg.method = SolverMethod::Anderson;
  cfg.anderson_depth = 8;
  cfg.anderson_damping = 1.0;
  const RunResult and_r = run_serial<double>(cfg, &u_anderson);
  ASSERT_TRUE(jac.converged);
  ASSERT_TRUE(and_r.converged) << and_r.final_residual;
  RecordProperty("jacobi_iterations", int(jac.steps));
  RecordProperty("anderson_iterations", int(and_r.steps));
  EXPECT_LE(5 * and_r.steps, jac.steps) << "anderson " << and_r.steps << " jacobi " << jac.steps;
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < u_jacobi.size(); ++i) {
    diff = std::max(diff, std::abs(u_jacobi[i] - u_anderson[i]));
    scale = std::max(scale, std::abs(u_jacobi[i]));
  }
  EXPECT_LT(diff / scale, 1e-6);
}

// Alternating Anderson-Jacobi (anderson.every = p): one mixing per p sweeps converges on the
// deck plain Anderson converges on, to the same solution, in fewer sweeps than Jacobi.
TEST(CpuSolver, AndersonEveryPSweepsConvergesToTheSameSolution) {
  Config cfg = testing::poisson_config(3, 32);
  cfg.tolerance = 1e-8;
  cfg.check_every = 1;
  cfg.source.type = ShapeType::Gaussian;
  cfg.source.amplitude = 50.0;
  cfg.source.width = 0.15;
  cfg.source.center = {0.4, 0.5, 0.6};
  cfg.boundary[1] = FaceBC{BoundaryType::Neumann, 0.0};
  std::vector<double> u_jacobi, u_every;
  const RunResult jac = run_serial<double>(cfg, &u_jacobi);
  cfg.method = SolverMethod::Anderson;
  cfg.anderson_depth = 6;
  cfg.anderson_every = 8;
  const RunResult ev = run_serial<double>(cfg, &u_every);
  ASSERT_TRUE(jac.converged);
  ASSERT_TRUE(ev.converged) << ev.final_residual;
  const std::int64_t sweeps = ev.steps * cfg.anderson_every;
  EXPECT_LE(3 * sweeps, jac.steps) << "every-8 sweeps " << sweeps << " jacobi " << jac.steps;
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < u_jacobi.size(); ++i) {
    diff = std::max(diff, std::abs(u_jacobi[i] - u_every[i]));
    scale = std::max(scale, std::abs(u_jacobi[i]));
  }
  EXPECT_LT(diff / scale, 1e-6);
}

}  // namespace
}  // namespace heatsolve
