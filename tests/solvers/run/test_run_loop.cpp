// The solver core (docs/architecture.md): the registry maps every deck method to one class;
// the run loop's schedule (outputs, residual history, blow-up checks) is the deck's alone;
// the operator's forms and PCG solve what they claim.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "solvers/multigrid/multigrid.hpp"
#include "solvers/operator/helmholtz.hpp"
#include "solvers/registry.hpp"
#include "solvers/run/event_schedule.hpp"
#include "solvers/run/run_loop.hpp"
#include "solvers/solver.hpp"
#include "solvers/steady/jacobi.hpp"
#include "solvers/steady/pcg.hpp"
#include "tests/solver_test_util.hpp"

namespace heatsolve {
namespace {

using testing::heat_config;
using testing::poisson_config;

// Records the steps and times a writer is handed.
class StepRecorder final : public FieldWriter {
 public:
  void write(std::int64_t step, double time, const float* data, const Block& b) override {
    record(step, time, data, b.size());
  }
  void write(std::int64_t step, double time, const double* data, const Block& b) override {
    record(step, time, data, b.size());
  }
  void finalize() override {}
  std::vector<std::string> files() const override { return {}; }
  std::vector<std::int64_t> steps;
  std::vector<double> times;
  bool all_finite = true;

 private:
  template <typename T>
  void record(std::int64_t step, double time, const T* data, std::size_t n) {
    steps.push_back(step);
    times.push_back(time);
    for (std::size_t i = 0; i < n; ++i) all_finite = all_finite && std::isfinite(double(data[i]));
  }
};

RunResult run_with(const Config& cfg, std::vector<FieldWriter*> writers, bool progress) {
  RunContext ctx;
  ctx.domain = serial_domain(cfg.grid(), cfg.boundary);
  ctx.backend_options = backend_options_for(cfg);
  int reports = 0;
  if (progress) ctx.on_progress = [&reports](const ProgressInfo&) { ++reports; };
  return run_simulation(cfg, ctx, std::move(writers));
}

TEST(SolverRegistry, EveryDeckMethodHasExactlyOneSolver) {
  std::set<std::string> names;
  for (ProblemType p : {ProblemType::Heat, ProblemType::Poisson})
    for (TimeScheme s :
         {TimeScheme::Explicit, TimeScheme::ImplicitEuler, TimeScheme::CrankNicolson})
      for (SolverMethod m : {SolverMethod::Jacobi, SolverMethod::Anderson, SolverMethod::Multigrid,
                             SolverMethod::MultigridCG}) {
        Config c;
        c.problem = p;
        c.scheme = s;
        c.method = m;
        int matches = 0;
        for (const SolverEntry& e : solver_registry()) matches += e.matches(c) ? 1 : 0;
        EXPECT_EQ(matches, 1) << to_string(p) << " " << to_string(s) << " " << to_string(m);
        names.insert(find_solver(c).name);
      }
  EXPECT_EQ(names, (std::set<std::string>{"explicit heat", "implicit heat", "jacobi", "anderson",
                                          "multigrid", "mg-cg"}));
}

TEST(EventSchedule, LandsOnEveryEvent) {
  Config c;
  c.output_every = 10;
  c.checkpoint_every = 4;
  const EventSchedule s(c, nullptr);
  EXPECT_EQ(s.steps_to_next(0), 4);
  EXPECT_EQ(s.steps_to_next(4), 4);
  EXPECT_EQ(s.steps_to_next(8), 2);  // output at 10 before the checkpoint at 12
  EXPECT_EQ(s.steps_to_next(10), 2);
  EXPECT_TRUE(s.output_due(20));
  EXPECT_FALSE(s.output_due(21));
  EXPECT_TRUE(s.checkpoint_due(12));
  c.output_every = c.checkpoint_every = 0;
  EXPECT_GT(EventSchedule(c, nullptr).steps_to_next(7), std::int64_t(1) << 60);
}

// A heat run's residual history and output steps follow the deck alone: the same rows with a
// progress display as without (the wall clock picks only health checks and printing).
TEST(RunLoop, HeatHistoryIsTheDecksOutputSteps) {
  Config cfg = heat_config(2, 32, 0.02);
  cfg.output_every = 25;
  cfg.checkpoint_every = 0;
  ASSERT_GT(cfg.steps, 100);
  StepRecorder quiet_w, live_w;
  const RunResult quiet = run_with(cfg, {&quiet_w}, false);
  const RunResult live = run_with(cfg, {&live_w}, true);
  std::vector<std::int64_t> expected_steps{0};
  for (std::int64_t s = 25; s < cfg.steps; s += 25) expected_steps.push_back(s);
  expected_steps.push_back(cfg.steps);
  EXPECT_EQ(quiet_w.steps, expected_steps);
  EXPECT_EQ(live_w.steps, expected_steps);
  EXPECT_EQ(quiet.residual_history, live.residual_history);
  ASSERT_EQ(quiet.residual_history.size(), expected_steps.size() - 1);
  for (std::size_t i = 0; i < quiet.residual_history.size(); ++i)
    EXPECT_EQ(quiet.residual_history[i].first, expected_steps[i + 1]);
  EXPECT_DOUBLE_EQ(quiet_w.times.back(), cfg.end_time);
}

// A deck that overflows from its first step stops at its first output step, having written
// only finite steps, with the blow-up error (exit code 1 in the CLI).
TEST(RunLoop, BlowUpStopsAtTheFirstOutputStep) {
  Config cfg = heat_config(2, 16, 0.0);
  cfg.steps = 200000;
  cfg.dt = 1e-5;
  cfg.end_time = cfg.dt * double(cfg.steps);
  cfg.initial = Shape{ShapeType::Uniform, 1e300};
  cfg.source = Shape{ShapeType::Uniform, 1e308};
  for (auto& f : cfg.boundary) f = FaceBC{BoundaryType::Neumann, 0.0};
  cfg.output_every = 10;
  StepRecorder w;
  try {
    run_with(cfg, {&w}, false);
    FAIL() << "no blow-up reported";
  } catch (const BlowUpError& e) {
    EXPECT_NE(std::string(e.what()).find("blew up at step 10"), std::string::npos) << e.what();
  }
  EXPECT_EQ(w.steps, std::vector<std::int64_t>{0});
  EXPECT_TRUE(w.all_finite);
}

// Poisson: the final field is written once, at the converged iteration, with the output steps
// before it.
TEST(RunLoop, SteadyOutputsEndAtTheConvergedIteration) {
  Config cfg = poisson_config(2, 16);
  cfg.method = SolverMethod::Multigrid;
  cfg.source = Shape{ShapeType::Uniform, 1.0};
  cfg.output_every = 2;
  StepRecorder w;
  const RunResult r = run_with(cfg, {&w}, false);
  ASSERT_TRUE(r.converged);
  ASSERT_GE(r.steps, 4);
  std::vector<std::int64_t> expected;
  for (std::int64_t s = 0; s < r.steps; s += 2) expected.push_back(s);
  expected.push_back(r.steps);
  EXPECT_EQ(w.steps, expected);
  EXPECT_EQ(r.residual_history.size(), std::size_t(r.steps));  // every cycle is checked
}

GridDesc square(int n) {
  GridDesc g;
  g.dims = 2;
  g.nx = g.ny = n;
  g.hx = g.hy = 1.0 / n;
  return g;
}

std::vector<double> random_interior(const GridDesc& g, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(g.padded_size(), 0.0);
  for (int j = 0; j < g.ny; ++j)
    for (int i = 0; i < g.nx; ++i) v[g.index(i, j, 0)] = d(rng);
  return v;
}

// The operator's forms agree with each other: r = f - A x from the residual sweep equals f
// minus the application, and the explicit step is u + dt (f - A u).
TEST(HelmholtzOperator, FormsAgree) {
  const GridDesc g = square(12);
  CpuBackend<double> backend;
  BoundaryFaces faces{};
  for (FaceBC& f : faces) f = FaceBC{BoundaryType::Dirichlet, 0.5};
  faces[1] = FaceBC{BoundaryType::Neumann, -1.0};
  const HelmholtzOperator<double> op(FieldSpace<double>(backend, g), faces, 3.0, 0.7);
  std::vector<double> x = random_interior(g, 1), f = random_interior(g, 2);
  std::vector<double> r(g.padded_size()), y(g.padded_size()), step(g.padded_size());
  op.residual(x.data(), f.data(), r.data(), BoundaryMode::Deck);
  op.apply(x.data(), y.data(), BoundaryMode::Deck);
  const double dt = 1e-4;
  const HelmholtzOperator<double> heat(FieldSpace<double>(backend, g), faces, 0.0, 0.7);
  std::vector<double> ah(g.padded_size());
  heat.apply(x.data(), ah.data(), BoundaryMode::Deck);
  heat.sweep(x.data(), step.data(), f.data(), heat.explicit_step(dt), BoundaryMode::Deck);
  for (int j = 0; j < g.ny; ++j)
    for (int i = 0; i < g.nx; ++i) {
      const auto k = g.index(i, j, 0);
      EXPECT_NEAR(r[k], f[k] - y[k], 1e-10 * (1 + std::abs(y[k])));
      EXPECT_NEAR(step[k], x[k] + dt * (f[k] - ah[k]), 1e-12);
    }
  // Homogeneous faces: A is linear (A(2x) = 2 A x) only with zero face values.
  std::vector<double> x2(x), y2(g.padded_size()), y1(g.padded_size());
  for (double& v : x2) v *= 2;
  op.apply(x.data(), y1.data(), BoundaryMode::Homogeneous);
  op.apply(x2.data(), y2.data(), BoundaryMode::Homogeneous);
  for (int j = 0; j < g.ny; ++j)
    for (int i = 0; i < g.nx; ++i)
      EXPECT_NEAR(y2[g.index(i, j, 0)], 2 * y1[g.index(i, j, 0)], 1e-9);
}

// PCG without a preconditioner solves A x = b (SPD: Dirichlet faces) to rounding in at most
// n iterations; with the V-cycle in a handful.
TEST(Pcg, SolvesWithAndWithoutPreconditioner) {
  const GridDesc g = square(16);
  CpuBackend<double> backend;
  BoundaryFaces faces{};
  for (FaceBC& f : faces) f = FaceBC{BoundaryType::Dirichlet, 0.0};
  const HelmholtzOperator<double> op(FieldSpace<double>(backend, g), faces, 0.0);
  const std::vector<double> b = random_interior(g, 3);
  const double b_norm = std::sqrt(op.space().dot(b.data(), b.data()));
  const auto solve = [&](Preconditioner<double>* m, CgBeta beta, int* iterations) {
    std::vector<double> x(g.padded_size(), 0.0);
    Pcg<double> cg(op, m, beta);
    double rn = cg.start(x.data(), b.data(), BoundaryMode::Homogeneous);
    int it = 0;
    while (rn > 1e-10 * b_norm && it < 1000) rn = cg.iterate(x.data()), ++it;
    *iterations = it;
    std::vector<double> r(g.padded_size());
    op.residual(x.data(), b.data(), r.data(), BoundaryMode::Homogeneous);
    return std::sqrt(op.space().dot(r.data(), r.data())) / b_norm;
  };
  int plain = 0, vcycle = 0;
  EXPECT_LT(solve(nullptr, CgBeta::FletcherReeves, &plain), 1e-9);
  MultigridSettings settings;
  Multigrid<double> mg(op, settings);
  EXPECT_LT(solve(&mg, CgBeta::PolakRibiere, &vcycle), 1e-9);
  EXPECT_LE(plain, g.nx * g.ny);
  EXPECT_LE(vcycle, 10);
  EXPECT_LT(vcycle * 4, plain);
}

}  // namespace
}  // namespace heatsolve

namespace heatsolve {
namespace {

// docs/architecture.md's example of a new steady solver: one class. It runs through the run
// loop (outputs, history, convergence) with nothing else changed.
template <typename T>
class DampedJacobi final : public Solver<T> {
 public:
  explicit DampedJacobi(Sweeper<T>& sw) : sw_(sw), op_(sw.space(), sw.domain().faces, 0.0) {}
  static Footprint footprint(const Config&, const GridDesc&, bool) { return {}; }
  bool transient() const override { return false; }
  std::int64_t total() const override { return sw_.config().max_iterations; }
  StepReport start(const CheckpointState* restored) override {
    it_ = restored ? restored->step : 0;
    norm0_ = initial_residual_norm(sw_, op_, sw_.source(), restored != nullptr);
    return {it_, double(it_), 0.0};
  }
  StepReport advance(std::int64_t, Monitor) override {
    sw_.sweep(sw_.u().data(), sw_.v().data(), sw_.source(), op_.weighted_jacobi(0.8));
    sw_.swap_uv();
    ++it_;
    StepReport r{it_, double(it_)};
    r.residual = residual_norm(sw_, op_, sw_.u().data(), sw_.source()) / norm0_;
    r.fresh = r.record = true;
    r.done = r.residual <= sw_.config().tolerance || it_ == sw_.config().max_iterations;
    return r;
  }

 private:
  Sweeper<T>& sw_;
  HelmholtzOperator<T> op_;
  std::int64_t it_ = 0;
  double norm0_ = 1;
};

TEST(RunLoop, ANewSteadySolverIsOneClass) {
  Config cfg = poisson_config(2, 16);
  cfg.source = Shape{ShapeType::Uniform, 1.0};
  cfg.tolerance = 1e-9;
  cfg.output_every = 100;
  RunContext ctx;
  ctx.domain = serial_domain(cfg.grid(), cfg.boundary);
  Sweeper<double> sweeper(cfg, ctx);
  DampedJacobi<double> solver(sweeper);
  StepRecorder w;
  const RunResult r = RunLoop<double>(cfg, ctx, sweeper, solver, {&w}).run();
  std::vector<double> damped = sweeper.interior(), jacobi;
  ASSERT_GT(r.steps, 100);
  EXPECT_EQ(r.residual_history.size(), std::size_t(r.steps));
  EXPECT_EQ(w.steps.front(), 0);
  EXPECT_EQ(w.steps.back(), r.steps);
  cfg.tolerance = 1e-12;
  run_serial<double>(cfg, &jacobi);
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < jacobi.size(); ++i) {
    worst = std::max(worst, std::abs(damped[i] - jacobi[i]));
    scale = std::max(scale, std::abs(jacobi[i]));
  }
  EXPECT_LT(worst, 1e-6 * scale);
}

}  // namespace
}  // namespace heatsolve
