// Mixed precision (execution.precision: mixed: double fields, the multigrid correction
// equation in float) and full multigrid (solver.multigrid.cycle: fmg), through decks: mixed
// reaches the double solve's solution and residual in its cycle count (constant and variable
// coefficients, singular problems, implicit steps); one FMG pass lands at the discretisation
// error of a manufactured solution (its algebraic error 0.12-0.13x the discretisation error);
// float mg-cg stops at its floor. The Cuda* tests compare
// the GPU with the CPU and skip themselves without a device.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "io/deck.hpp"
#include "kernels/backend.hpp"
#include "solvers/solver.hpp"

namespace heatsolve {
namespace {

Config deck(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return parse_deck(text, "<test>", overrides);
}

std::string poisson_deck(const std::string& cells, const std::string& boundary,
                         const std::string& source, const std::string& solver,
                         const std::string& backend = "cpu",
                         const std::string& precision = "double", const std::string& extra = "") {
  return fmt::format(
      "name: mgprec\n"
      "problem: {{type: poisson, dimensions: 3}}\n"
      "grid: {{cells: {}}}\n"
      "initial: {{type: uniform, value: 0.0}}\n"
      "source: {}\n"
      "boundary: {}\n"
      "solver: {}\n"
      "execution: {{backend: {}, precision: {}}}\n"
      "output: {{formats: []}}\n{}",
      cells, source, boundary, solver, backend, precision, extra);
}

std::string cube(int n) {
  return fmt::format("[{0}, {0}, {0}]", n);
}

const char* kGaussian = "{type: gaussian, amplitude: 50.0, width: 0.1, center: [0.4, 0.55, 0.6]}";
const char* kWalls = "{all: {type: dirichlet, value: 0.0}}";
// Dirichlet values, a Neumann flux, a periodic pair: every kind of face rule.
const char* kMixedFaces =
    "{all: {type: dirichlet, value: 0.5}, x+: {type: neumann, flux: -1.0}, "
    "y-: {type: periodic}, y+: {type: periodic}}";

bool cuda() {
  return cuda_device_available();
}
#define SKIP_WITHOUT_GPU()                                   \
  do {                                                       \
    if (!cuda()) GTEST_SKIP() << "no CUDA device available"; \
  } while (0)

// max |a - b| / max |b|.
double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0, m = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    d = std::max(d, std::abs(a[i] - b[i]));
    m = std::max(m, std::abs(b[i]));
  }
  return m > 0 ? d / m : d;
}

int cycles(const RunResult& r) {
  return r.multigrid.at("cycles");
}

struct Solve {
  RunResult r;
  std::vector<double> u;
};
Solve solve(const Config& cfg) {
  Solve s;
  s.r = run_serial<double>(cfg, &s.u);
  return s;
}

// ---- Mixed precision -----------------------------------------------------------------------

// The double solve and the mixed one of the same deck: the same solution to 1e-9, the
// tolerance reached, cycle counts within `extra_cycles` (one, but see VariableCoefficients).
void expect_mixed_matches_double(const std::string& label, const std::string& text,
                                 double tolerance, int extra_cycles = 1) {
  const Solve d = solve(deck(text));
  const Config cfg_m = deck(text, {"execution.precision=mixed"});
  ASSERT_TRUE(cfg_m.mixed_precision);
  const Solve m = solve(cfg_m);
  ASSERT_TRUE(d.r.converged) << label << " double: " << d.r.final_residual;
  ASSERT_TRUE(m.r.converged) << label << " mixed: " << m.r.final_residual;
  EXPECT_LE(m.r.final_residual, tolerance) << label;
  EXPECT_EQ(m.r.precision, Precision::Double);
  EXPECT_EQ(m.r.multigrid.at("mixed_precision"), true) << label;
  EXPECT_EQ(m.r.multigrid.at("hierarchy_precision"), "float") << label;
  const double diff = relative_difference(m.u, d.u);
  EXPECT_LE(diff, 1e-9) << label;
  EXPECT_LE(std::abs(cycles(m.r) - cycles(d.r)), extra_cycles) << label;
  std::printf(
      "[ measured ] %-32s double %2d cycles (factor %.4f), mixed %2d (factor %.4f), residual "
      "%.2e, max rel. diff %.1e\n",
      label.c_str(), cycles(d.r), double(d.r.multigrid.at("mean_convergence_factor")), cycles(m.r),
      double(m.r.multigrid.at("mean_convergence_factor")), m.r.final_residual, diff);
}

// Measured (2 cores): 64^3 Gaussian, 1e-10: multigrid double 12 / mixed 12 cycles, mg-cg 8 / 8.
TEST(MixedPrecision, MatchesDoubleToDoubleAccuracy) {
  for (const char* method : {"multigrid", "mg-cg"}) {
    const std::string solver =
        fmt::format("{{method: {}, tolerance: 1.0e-10, max_iterations: 60}}", method);
    expect_mixed_matches_double(fmt::format("{} walls 64^3", method),
                                poisson_deck(cube(64), kWalls, kGaussian, solver), 1e-10);
    expect_mixed_matches_double(fmt::format("{} mixed faces 32^3", method),
                                poisson_deck(cube(32), kMixedFaces, kGaussian, solver), 1e-10);
  }
  // F-cycles and a tolerance of 1e-12: far below float's rounding of the correction equation.
  expect_mixed_matches_double(
      "f-cycles 1e-12 32^3",
      poisson_deck(cube(32), kWalls, kGaussian,
                   "{method: multigrid, tolerance: 1.0e-12, max_iterations: 60, multigrid: "
                   "{cycle: f}}"),
      1e-12);
}

// A problem in physical units: a source of 1e6 W/m^3 in centimetre cells, 300 K walls. The
// residual handed to float is scaled to unit RMS, so its size does not matter. (Double's own
// rounding floor of this deck is ~5e-10: 1e-8.)
TEST(MixedPrecision, PhysicalUnitsAreScaled) {
  const std::string text = fmt::format(
      "name: units\n"
      "problem: {{type: poisson, dimensions: 3}}\n"
      "grid: {{cells: [32, 32, 32], length: [0.01, 0.01, 0.01]}}\n"
      "material: {{conductivity: 150.0}}\n"
      "initial: {{type: uniform, value: 300.0}}\n"
      "source: {{type: gaussian, amplitude: 1.0e6, width: 0.001, center: [0.005, 0.005, "
      "0.005]}}\n"
      "boundary: {{all: {{type: dirichlet, value: 300.0}}}}\n"
      "solver: {{method: multigrid, tolerance: 1.0e-8, max_iterations: 60}}\n"
      "execution: {{backend: cpu, precision: double}}\n"
      "output: {{formats: []}}\n");
  expect_mixed_matches_double("physical units", text, 1e-8);
}

// Singular problems: the float hierarchy removes the correction's mean, the double solve the
// solution's.
TEST(MixedPrecision, SingularProblemHasZeroMeanSolution) {
  for (const char* method : {"multigrid", "mg-cg"}) {
    const std::string text =
        poisson_deck(cube(24), "{all: {type: neumann, flux: 0.0}}", kGaussian,
                     fmt::format("{{method: {}, tolerance: 1.0e-10, max_iterations: 60, "
                                 "singular: compatible-mean}}",
                                 method));
    expect_mixed_matches_double(fmt::format("{} insulated box", method), text, 1e-10);
    const Solve m = solve(deck(text, {"execution.precision=mixed"}));
    double mean = 0;
    for (double v : m.u) mean += v;
    EXPECT_LT(std::abs(mean / double(m.u.size())), 1e-10) << method;
  }
}

// Variable coefficients (a 1:1000 sphere): the float operator converted from the double one
// (face couplings, coarsened from the same double resistances).
TEST(MixedPrecision, VariableCoefficients) {
  const std::string text =
      "name: sphere\n"
      "problem: {type: poisson, dimensions: 3}\n"
      "grid: {cells: [32, 32, 32]}\n"
      "material: {conductivity: 1.0}\n"
      "materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], radius: 0.3}}, conductivity: "
      "1000.0}]\n"
      "source: {type: uniform, value: 1.0}\n"
      "boundary: {all: {type: dirichlet, value: 0.0}, z+: {type: convective, h: 5.0, ambient: "
      "0.2}}\n"
      "solver: {method: mg-cg, tolerance: 1.0e-10}\n"
      "execution: {backend: cpu, precision: double}\n"
      "output: {formats: []}\n";
  // Float's rounding of conductances 1000x apart weakens the float V-cycle as a preconditioner
  // below ~1e-4 (factors 0.5-0.8 where double's are 0.1-0.2). Measured mg-cg iterations,
  // double / mixed: 14/18 at 24^3, 15/17 at 32^3, 12/12 at 40^3, 17/20 at 48^3 (a CG coarsest
  // solve: 17, 16, 12, 20).
  expect_mixed_matches_double("mg-cg sphere 1:1000", text, 1e-10, 3);
}

// Implicit steps: Crank-Nicolson at 100x the explicit limit, each step solved in mixed
// precision to 1e-10: the same temperatures as double.
TEST(MixedPrecision, ImplicitStepsMatchDouble) {
  for (const char* method : {"multigrid", "mg-cg"}) {
    const std::string text = fmt::format(
        "name: cn\n"
        "problem: {{type: heat, dimensions: 3}}\n"
        "grid: {{cells: [24, 24, 24]}}\n"
        "time: {{dt: 0.005, steps: 4, scheme: crank-nicolson}}\n"
        "initial: {{type: gaussian, amplitude: 1.0, width: 0.15, center: [0.5, 0.5, 0.5]}}\n"
        "source: {{type: uniform, value: 2.0}}\n"
        "boundary: {{all: {{type: dirichlet, value: 0.1}}, x-: {{type: neumann, flux: 0.5}}}}\n"
        "solver: {{method: {}, tolerance: 1.0e-11}}\n"
        "execution: {{backend: cpu, precision: double}}\n"
        "output: {{formats: []}}\n",
        method);
    const Solve d = solve(deck(text));
    const Solve m = solve(deck(text, {"execution.precision=mixed"}));
    const double diff = relative_difference(m.u, d.u);
    EXPECT_LE(diff, 1e-9) << method;
    EXPECT_LE(std::abs(cycles(m.r) - cycles(d.r)), 4) << method;  // within one per step
    std::printf("[ measured ] implicit %-9s double %d cycles, mixed %d, max rel. diff %.1e\n",
                method, cycles(d.r), cycles(m.r), diff);
  }
}

// ---- Float mg-cg at its rounding floor -----------------------------------------------------

// A float mg-cg solve asked for 1e-10 stops where the true residual stops falling (as float
// multigrid does), says so, and does not run to max_iterations. Measured (64^3): multigrid
// stops after 7 cycles, mg-cg after 6 iterations, both at ~2e-5.
TEST(FloatFloor, MgCgStopsAtTheFloorAndSaysSo) {
  for (const char* method : {"multigrid", "mg-cg"}) {
    const Config cfg = deck(
        poisson_deck(cube(64), kWalls, kGaussian,
                     fmt::format("{{method: {}, tolerance: 1.0e-10, max_iterations: 200}}", method),
                     "cpu", "float"));
    std::vector<float> u;
    const RunResult r = run_serial<float>(cfg, &u);
    EXPECT_FALSE(r.converged) << method;
    EXPECT_LE(r.steps, 15) << method;
    EXPECT_LT(r.final_residual, 1e-3) << method;
    EXPECT_NE(r.stop_reason.find("float rounding floor"), std::string::npos)
        << method << ": " << r.stop_reason;
    std::printf("[ measured ] float %-9s stops after %lld iterations at %.2e: %s\n", method,
                static_cast<long long>(r.steps), r.final_residual, r.stop_reason.c_str());
  }
}

// ---- Full multigrid --------------------------------------------------------------------------

// -lap u = 3 pi^2 prod sin(pi x_d) with u = c on the walls: u = c + prod sin(pi x_d).
// RMS error over the cells against u.
double manufactured_error(const std::vector<double>& u, int n, double c) {
  const double h = 1.0 / n;
  double sum = 0;
  std::size_t idx = 0;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i, ++idx) {
        const double exact = c + std::sin(M_PI * (i + 0.5) * h) * std::sin(M_PI * (j + 0.5) * h) *
                                     std::sin(M_PI * (k + 0.5) * h);
        sum += (u[idx] - exact) * (u[idx] - exact);
      }
  return std::sqrt(sum / double(idx));
}

std::string manufactured_deck(int n, double wall, const std::string& solver,
                              const std::string& backend, const std::string& precision) {
  return poisson_deck(cube(n), fmt::format("{{all: {{type: dirichlet, value: {}}}}}", wall),
                      "{type: sine, amplitude: 29.608813203268074}", solver, backend, precision);
}

struct FmgErrors {
  double converged = 0, one_pass = 0;
  double algebraic = 0;  // RMS of (one pass - converged solve)
  int cycles_v = 0, cycles_fmg = 0;
};

// The error of a converged solve (V-cycles to 1e-12) and of one FMG pass (max_iterations: 1),
// both against the manufactured solution; and the cycles to 1e-10 with and without FMG.
FmgErrors fmg_errors(int n, double wall, const std::string& backend, const std::string& precision) {
  FmgErrors e;
  const Solve conv = solve(deck(manufactured_deck(
      n, wall, "{method: multigrid, tolerance: 1.0e-12, max_iterations: 60}", backend, "double")));
  EXPECT_TRUE(conv.r.converged);
  e.converged = manufactured_error(conv.u, n, wall);
  const Solve one = solve(deck(
      manufactured_deck(n, wall, "{method: multigrid, max_iterations: 1, multigrid: {cycle: fmg}}",
                        backend, precision)));
  EXPECT_EQ(one.r.steps, 1);
  e.one_pass = manufactured_error(one.u, n, wall);
  double sum = 0;
  for (std::size_t i = 0; i < one.u.size(); ++i)
    sum += (one.u[i] - conv.u[i]) * (one.u[i] - conv.u[i]);
  e.algebraic = std::sqrt(sum / double(one.u.size()));
  const Solve v = solve(deck(manufactured_deck(
      n, wall, "{method: multigrid, tolerance: 1.0e-10, max_iterations: 60}", backend, precision)));
  const Solve f = solve(deck(manufactured_deck(
      n, wall,
      "{method: multigrid, tolerance: 1.0e-10, max_iterations: 60, multigrid: {cycle: fmg}}",
      backend, precision)));
  EXPECT_TRUE(v.r.converged);
  EXPECT_TRUE(f.r.converged);
  e.cycles_v = cycles(v.r);
  e.cycles_fmg = cycles(f.r);
  std::printf(
      "[ measured ] FMG %s %s %d^3 walls %.1f: converged error %.3e, one pass %.3e (%.3fx), its "
      "algebraic error %.3e (%.3fx); cycles to 1e-10: V %d, FMG + V %d\n",
      backend.c_str(), precision.c_str(), n, wall, e.converged, e.one_pass,
      e.one_pass / e.converged, e.algebraic, e.algebraic / e.converged, e.cycles_v, e.cycles_fmg);
  return e;
}

void expect_fmg_lands_at_the_discretisation_error(const std::string& backend,
                                                  const std::string& precision) {
  for (int n : {64, 128}) {
    for (double wall : {0.0, 0.5}) {
      const FmgErrors e = fmg_errors(n, wall, backend, precision);
      EXPECT_LE(e.one_pass, 1.5 * e.converged) << n << "^3 wall " << wall;
      // The pass's own (algebraic) error is below the discretisation error, so that the
      // bound above does not rest on the two cancelling (measured: 0.12-0.13x).
      EXPECT_LE(e.algebraic, 0.6 * e.converged) << n << "^3 wall " << wall;
      EXPECT_LT(e.cycles_fmg, e.cycles_v) << n << "^3 wall " << wall;
    }
  }
}

TEST(FullMultigrid, OnePassLandsAtTheDiscretisationError) {
  expect_fmg_lands_at_the_discretisation_error("cpu", "double");
}

TEST(FullMultigrid, MixedPrecisionPassLandsAtTheDiscretisationError) {
  expect_fmg_lands_at_the_discretisation_error("cpu", "mixed");
}

// FMG then V-cycles reaches the same solution as V-cycles alone: mixed faces (Neumann flux,
// periodic pair, Dirichlet values), a singular box, mg-cg.
TEST(FullMultigrid, ConvergesToTheSameSolution) {
  struct Case {
    const char* label;
    const char* boundary;
    const char* method;
  };
  for (const Case& c :
       {Case{"mixed faces", kMixedFaces, "multigrid"},
        Case{"mixed faces mg-cg", kMixedFaces, "mg-cg"},
        Case{"insulated box", "{all: {type: neumann, flux: 0.0}}", "multigrid"},
        Case{"insulated box mg-cg", "{all: {type: neumann, flux: 0.0}}", "mg-cg"}}) {
    const std::string v = poisson_deck(
        "[32, 24, 16]", c.boundary, kGaussian,
        fmt::format("{{method: {}, tolerance: 1.0e-10, max_iterations: 60, singular: {}}}",
                    c.method, c.boundary == kMixedFaces ? "refuse" : "compatible-mean"));
    const Solve sv = solve(deck(v));
    const Solve sf = solve(deck(v, {"solver.multigrid.cycle=fmg"}));
    ASSERT_TRUE(sf.r.converged) << c.label << ": " << sf.r.final_residual;
    EXPECT_LE(relative_difference(sf.u, sv.u), 1e-8) << c.label;
    EXPECT_LE(cycles(sf.r), cycles(sv.r)) << c.label;
    std::printf("[ measured ] %-20s V %d, FMG + V %d\n", c.label, cycles(sv.r), cycles(sf.r));
  }
}

// Implicit steps with cycle: fmg (a pass on the correction of the previous step's field).
TEST(FullMultigrid, ImplicitSteps) {
  const std::string text =
      "name: cn\n"
      "problem: {type: heat, dimensions: 3}\n"
      "grid: {cells: [32, 32, 32]}\n"
      "time: {dt: 0.002, steps: 4, scheme: crank-nicolson}\n"
      "initial: {type: gaussian, amplitude: 1.0, width: 0.15, center: [0.5, 0.5, 0.5]}\n"
      "boundary: {all: {type: dirichlet, value: 0.1}}\n"
      "solver: {method: multigrid, tolerance: 1.0e-10}\n"
      "execution: {backend: cpu, precision: double}\n"
      "output: {formats: []}\n";
  const Solve v = solve(deck(text));
  for (const char* precision : {"double", "mixed"}) {
    const Solve f = solve(deck(
        text, {"solver.multigrid.cycle=fmg", std::string("execution.precision=") + precision}));
    EXPECT_LE(relative_difference(f.u, v.u), 1e-8) << precision;
    EXPECT_LE(cycles(f.r), cycles(v.r)) << precision;
    std::printf("[ measured ] implicit CN 32^3: V %d cycles, FMG (%s) %d\n", cycles(v.r), precision,
                cycles(f.r));
  }
}

// ---- The GPU against the CPU ---------------------------------------------------------------

// Mixed precision on the GPU: the CPU's solution to 1e-9 and its cycle counts (within one).
TEST(CudaMixedPrecision, MatchesCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* method : {"multigrid", "mg-cg"}) {
    const std::string solver =
        fmt::format("{{method: {}, tolerance: 1.0e-10, max_iterations: 60}}", method);
    const Solve cpu =
        solve(deck(poisson_deck(cube(64), kMixedFaces, kGaussian, solver, "cpu", "mixed")));
    const Solve gpu =
        solve(deck(poisson_deck(cube(64), kMixedFaces, kGaussian, solver, "cuda", "mixed")));
    ASSERT_TRUE(gpu.r.converged) << method << ": " << gpu.r.final_residual;
    EXPECT_EQ(gpu.r.backend, "cuda");
    EXPECT_LE(relative_difference(gpu.u, cpu.u), 1e-9) << method;
    EXPECT_LE(std::abs(cycles(gpu.r) - cycles(cpu.r)), 1) << method;
    const Solve gpu_d =
        solve(deck(poisson_deck(cube(64), kMixedFaces, kGaussian, solver, "cuda", "double")));
    EXPECT_LE(std::abs(cycles(gpu.r) - cycles(gpu_d.r)), 1) << method;
    std::printf("[ measured ] GPU mixed %-9s %d cycles (CPU %d, GPU double %d)\n", method,
                cycles(gpu.r), cycles(cpu.r), cycles(gpu_d.r));
  }
}

TEST(CudaFullMultigrid, OnePassLandsAtTheDiscretisationError) {
  SKIP_WITHOUT_GPU();
  expect_fmg_lands_at_the_discretisation_error("cuda", "double");
  expect_fmg_lands_at_the_discretisation_error("cuda", "mixed");
}

// The GPU's local coarse levels replayed as CUDA graphs (solver.multigrid.replay, the
// default) give the bits of the same levels launched kernel by kernel, in the same cycles:
// V-, F- and full multigrid, mg-cg, a singular problem, mixed precision, implicit steps.
// A V-cycle solve whose cycles begin with the finest level's measuring pass records its small
// levels' visit while the host waits for that pass's norm (recorded_ahead 1), not in a cycle's
// launches. The CPU records nothing (0 replays).
TEST(CudaReplay, ReplayedCoarseLevelsGiveTheSameBits) {
  SKIP_WITHOUT_GPU();
  const std::string implicit =
      "name: replay\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [64, 64, 64]}\n"
      "initial: {type: sine, amplitude: 1.0}\n"
      "boundary: {all: {type: dirichlet, value: 0.0}}\n"
      "time: {scheme: crank-nicolson, dt: 0.005, end: 0.025}\n"
      "solver: {method: multigrid, tolerance: 1.0e-10}\n"
      "execution: {backend: cuda}\noutput: {formats: []}\n";
  const char* kInsulated = "{all: {type: neumann, flux: 0.0}}";
  struct Case {
    std::string label, text;
  };
  const auto steady = [&](const char* method, const char* cycle, const char* faces,
                          const char* precision) {
    return poisson_deck(
        cube(64), faces, kGaussian,
        fmt::format("{{method: {}, tolerance: 1.0e-10, max_iterations: 60, singular: {}, "
                    "multigrid: {{cycle: {}}}}}",
                    method, faces == kInsulated ? "compatible-mean" : "refuse", cycle),
        "cuda", precision);
  };
  const std::vector<Case> cases = {
      {"multigrid v", steady("multigrid", "v", kWalls, "double")},
      {"multigrid f", steady("multigrid", "f", kMixedFaces, "double")},
      {"multigrid fmg", steady("multigrid", "fmg", kWalls, "double")},
      {"mg-cg", steady("mg-cg", "v", kWalls, "double")},
      {"singular", steady("multigrid", "v", kInsulated, "double")},
      {"mixed", steady("multigrid", "v", kWalls, "mixed")},
      {"crank-nicolson", implicit},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    const Solve on = solve(deck(c.text));
    const Solve off = solve(deck(c.text, {"solver.multigrid.replay=false"}));
    ASSERT_GT(on.r.multigrid.at("replays").get<long long>(), 0);
    EXPECT_EQ(off.r.multigrid.at("replays").get<long long>(), 0);
    EXPECT_EQ(off.r.multigrid.at("recorded_ahead").get<long long>(), 0);
    EXPECT_EQ(cycles(on.r), cycles(off.r));
    ASSERT_EQ(on.u.size(), off.u.size());
    EXPECT_EQ(std::memcmp(on.u.data(), off.u.data(), on.u.size() * sizeof(double)), 0);
  }
  const Solve cpu =
      solve(deck(steady("multigrid", "v", kWalls, "double"), {"execution.backend=cpu"}));
  EXPECT_EQ(cpu.r.multigrid.at("replays").get<long long>(), 0);
  EXPECT_EQ(cpu.r.multigrid.at("recorded_ahead").get<long long>(), 0);
  // A grid whose cycles begin with the finest level's measuring pass (256^3: larger than the
  // small levels' naive sweeps) records while the host waits for that pass's norm.
  const Solve ahead =
      solve(deck(steady("multigrid", "v", kWalls, "double"), {"grid.cells=[256, 256, 256]"}));
  EXPECT_GT(ahead.r.multigrid.at("replays").get<long long>(), 0);
  EXPECT_EQ(ahead.r.multigrid.at("recorded_ahead").get<long long>(), 1);
}

// Float mg-cg on the GPU stops at its floor as on the CPU.
TEST(CudaFloatFloor, MgCgStopsAtTheFloor) {
  SKIP_WITHOUT_GPU();
  const Config cfg = deck(poisson_deck(cube(128), kWalls, kGaussian,
                                       "{method: mg-cg, tolerance: 1.0e-10, max_iterations: 200}",
                                       "cuda", "float"));
  std::vector<float> u;
  const RunResult r = run_serial<float>(cfg, &u);
  EXPECT_FALSE(r.converged);
  EXPECT_LE(r.steps, 15);
  EXPECT_NE(r.stop_reason.find("float rounding floor"), std::string::npos) << r.stop_reason;
}

}  // namespace
}  // namespace heatsolve
