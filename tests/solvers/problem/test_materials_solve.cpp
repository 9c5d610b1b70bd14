// Materials by region and convective / heat-flux faces through whole runs (issue #30): the
// layered wall against its series-resistance solution, heat conservation with flux faces,
// an inclusion against a fine reference, multigrid convergence across a 1:1000 jump, and
// bitwise restarts of variable-coefficient runs.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "io/checkpoint.hpp"
#include "io/deck.hpp"
#include "io/field_writer.hpp"
#include "solvers/solver.hpp"
#include "tests/restart_part.hpp"
#include "tests/temp_dir.hpp"

namespace heatsolve {
namespace {

namespace fs = std::filesystem;
using test_support::TempDir;

Config deck(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return parse_deck(text, "<test>", overrides);
}

// A wall along x of four layers (k = 45 / 0.04 / 400 / 45 on [0, .1, .2, .3, .4]), 400 K on
// x-, convective (h = 25 W/m^2K, 293.15 K) on x+, insulated sides. With the interfaces on cell
// faces the discrete solution at the cell centres is the exact one: T(x) = 400 - q R(x), R
// the series resistance from the face, q = (400 - 293.15) / (R(0.4) + 1/h).
const char* kWall =
    "name: wall\n"
    "problem: {type: poisson, dimensions: 3}\n"
    "grid: {cells: [40, 4, 4], length: [0.4, 0.04, 0.04]}\n"
    "material: {conductivity: 45.0}\n"
    "materials:\n"
    "  - {region: {box: {lower: [0.1, 0.0, 0.0], upper: [0.2, 0.04, 0.04]}}, conductivity: 0.04}\n"
    "  - {region: {box: {lower: [0.2, 0.0, 0.0], upper: [0.3, 0.04, 0.04]}}, conductivity: 400}\n"
    "boundary:\n"
    "  all: {type: neumann, flux: 0.0}\n"
    "  x-: {type: dirichlet, value: 400.0}\n"
    "  x+: {type: convective, h: 25.0, ambient: 293.15}\n"
    "solver: {method: mg-cg, tolerance: 1.0e-13}\n"
    "execution: {backend: cpu, precision: double}\n"
    "output: {formats: []}\n";

double wall_exact(double x) {
  const double edges[] = {0, 0.1, 0.2, 0.3, 0.4}, k[] = {45, 0.04, 400, 45};
  const auto resistance = [&](double to) {
    double r = 0;
    for (int i = 0; i < 4; ++i) r += std::max(0.0, std::min(edges[i + 1], to) - edges[i]) / k[i];
    return r;
  };
  const double q = (400 - 293.15) / (resistance(0.4) + 1 / 25.0);
  return 400 - q * resistance(x);
}

TEST(Materials, LayeredWallWithAConvectiveFaceIsExact) {
  for (const char* method : {"mg-cg", "multigrid"}) {
    const Config cfg = deck(kWall, {fmt::format("solver.method={}", method)});
    std::vector<double> u;
    const RunResult r = run_serial<double>(cfg, &u);
    ASSERT_TRUE(r.converged) << method;
    double worst = 0;
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 40; ++i)
          worst = std::max(worst, std::abs(u[(k * 4 + j) * 40 + i] - wall_exact((i + 0.5) * 0.01)));
    std::printf("[ measured ] layered wall, %s: %lld cycles, max error %.2e K\n", method,
                static_cast<long long>(r.steps), worst);
    EXPECT_LT(worst, 1e-8) << method;
    EXPECT_LE(r.steps, 15) << method;
  }
}

// One material: the constant-coefficient path with the convective face as a Robin rule, the
// heat-flux face as a Neumann one. Linear in each case, so exact.
TEST(Materials, UniformWallWithConvectiveAndHeatFluxFaces) {
  Config cfg = deck(kWall, {"materials=[]", "solver.method=multigrid", "solver.tolerance=1e-11"});
  std::vector<double> u;
  ASSERT_TRUE(run_serial<double>(cfg, &u).converged);
  const double q = (400 - 293.15) / (0.4 / 45 + 1 / 25.0);
  for (int i = 0; i < 40; ++i) EXPECT_NEAR(u[i], 400 - q * (i + 0.5) * 0.01 / 45, 1e-8);
  // 1000 W/m^2 into x-, 293.15 K through h = 25 on x+: T = T_amb + q/h + q (0.4 - x)/k.
  cfg = deck(kWall, {"materials=[]", "boundary.x-={type: heat_flux, value: 1000.0}",
                     "solver.tolerance=1e-11"});
  ASSERT_TRUE(run_serial<double>(cfg, &u).converged);
  for (int i = 0; i < 40; ++i)
    EXPECT_NEAR(u[i], 293.15 + 1000.0 / 25 + 1000.0 * (0.4 - (i + 0.5) * 0.01) / 45, 1e-8);
}

// Heat through a heat-flux face into an insulated box of two materials: the heat content
// sum(rho cp T dV) rises by exactly q A t (explicit steps: to rounding).
double heat_content(const Config& cfg, const std::vector<double>& u) {
  const GridDesc g = cfg.grid();
  double h = 0;
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const double x = (i + 0.5) * g.hx;
        const double rho_cp = x < 0.5 ? 7850.0 * 490.0 : 2700.0 * 900.0;  // steel | aluminium
        h += rho_cp * u[(std::size_t(k) * g.ny + j) * g.nx + i];
      }
  return h * g.hx * g.hy * g.hz;
}

const char* kBox =
    "name: box\n"
    "problem: {type: heat, dimensions: 3}\n"
    "grid: {cells: [16, 8, 8], length: [1.0, 0.5, 0.5]}\n"
    "material: {conductivity: 45.0, density: 7850.0, specific_heat: 490.0}\n"
    "materials:\n"
    "  - {region: {box: {lower: [0.5, 0.0, 0.0], upper: [1.0, 0.5, 0.5]}}, conductivity: 237, "
    "density: 2700, specific_heat: 900}\n"
    "time: {steps: 200, dt: auto}\n"
    "initial: {type: uniform, value: 300.0}\n"
    "boundary:\n"
    "  all: {type: neumann, flux: 0.0}\n"
    "  x-: {type: heat_flux, value: 5000.0}\n"
    "  y+: {type: heat_flux, value: -1500.0}\n"
    "execution: {backend: cpu, precision: double}\n"
    "output: {formats: []}\n";

TEST(Materials, HeatFluxFacesConserveHeat) {
  for (const char* scheme : {"explicit", "implicit-euler"}) {
    Config cfg = deck(kBox, {fmt::format("time.scheme={}", scheme)});
    if (std::string(scheme) != "explicit") {
      cfg = deck(kBox, {fmt::format("time.scheme={}", scheme), "time.dt=50.0", "time.steps=20",
                        "solver.method=mg-cg", "solver.tolerance=1.0e-12"});
    }
    std::vector<double> u;
    run_serial<double>(cfg, &u);
    const std::vector<double> u0(u.size(), 300.0);
    const double gained = heat_content(cfg, u) - heat_content(cfg, u0);
    const double inflow = (5000.0 * 0.5 * 0.5 - 1500.0 * 1.0 * 0.5) * cfg.end_time;
    std::printf("[ measured ] %s: heat gained %.12e J, inflow %.12e J (relative %.1e)\n", scheme,
                gained, inflow, std::abs(gained - inflow) / inflow);
    EXPECT_NEAR(gained, inflow, (scheme == std::string("explicit") ? 1e-10 : 1e-8) * inflow)
        << scheme;
  }
}

// A conducting sphere (k = 1000) in a medium (k = 1) with a uniform source and cold walls:
// the solution on 16^3 and 32^3 against 64^3 averaged down to them; the error falls with
// the grid, and multigrid needs the same cycles on every grid across the 1:1000 jump.
std::vector<double> average_down(const std::vector<double>& fine, int nf, int nc) {
  const int r = nf / nc;
  std::vector<double> c(std::size_t(nc) * nc * nc, 0.0);
  for (int k = 0; k < nf; ++k)
    for (int j = 0; j < nf; ++j)
      for (int i = 0; i < nf; ++i)
        c[(std::size_t(k / r) * nc + j / r) * nc + i / r] +=
            fine[(std::size_t(k) * nf + j) * nf + i] / (r * r * r);
  return c;
}

TEST(Materials, InclusionConvergesToTheFineSolution) {
  const auto solve = [](int n, RunResult* r) {
    const Config cfg = deck(
        "name: sphere\n"
        "problem: {type: poisson, dimensions: 3}\n"
        "grid: {cells: [" +
        std::to_string(n) + ", " + std::to_string(n) + ", " + std::to_string(n) +
        "]}\n"
        "material: {conductivity: 1.0}\n"
        "materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], radius: 0.3}}, conductivity: "
        "1000.0}]\n"
        "source: {type: uniform, value: 1.0}\n"
        "boundary: {all: {type: dirichlet, value: 0.0}}\n"
        "solver: {method: mg-cg, tolerance: 1.0e-10}\n"
        "execution: {backend: cpu, precision: double}\n"
        "output: {formats: []}\n");
    std::vector<double> u;
    *r = run_serial<double>(cfg, &u);
    return u;
  };
  RunResult r16, r32, r64;
  const std::vector<double> u16 = solve(16, &r16), u32 = solve(32, &r32), u64 = solve(64, &r64);
  const auto error = [](const std::vector<double>& a, const std::vector<double>& b) {
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::abs(a[i] - b[i]));
      scale = std::max(scale, std::abs(b[i]));
    }
    return worst / scale;
  };
  const double e16 = error(u16, average_down(u64, 64, 16));
  const double e32 = error(u32, average_down(u64, 64, 32));
  std::printf("[ measured ] sphere 1:1000: error 16^3 %.3e, 32^3 %.3e; mg-cg %lld / %lld / %lld\n",
              e16, e32, static_cast<long long>(r16.steps), static_cast<long long>(r32.steps),
              static_cast<long long>(r64.steps));
  EXPECT_LT(e32, 0.7 * e16);
  EXPECT_LT(e32, 0.03);  // first order: the sphere's surface is a staircase of cells
  for (const RunResult* r : {&r16, &r32, &r64}) {
    EXPECT_TRUE(r->converged);
    EXPECT_LE(r->steps, 20);
  }
}

// The last step handed to it, as raw bytes.
class LastField final : public FieldWriter {
 public:
  void write(std::int64_t, double, const float* d, const Block& b) override { keep(d, b); }
  void write(std::int64_t, double, const double* d, const Block& b) override { keep(d, b); }
  void finalize() override {}
  std::vector<std::string> files() const override { return {}; }
  std::vector<unsigned char> bytes;

 private:
  template <typename T>
  void keep(const T* d, const Block& b) {
    bytes.resize(b.size() * sizeof(T));
    std::memcpy(bytes.data(), d, bytes.size());
  }
};

RunResult run_from(const Config& cfg, const std::string& restart, LastField* w) {
  RunContext ctx;
  ctx.domain = serial_domain(cfg.grid(), cfg.boundary);
  ctx.backend_options = backend_options_for(cfg);
  ctx.restart_path = restart;
  return run_simulation(cfg, ctx, {w});
}

#ifdef HEATSOLVE_HAVE_HDF5
// Variable-coefficient runs restart bit for bit (explicit heat, multigrid).
TEST(Materials, RestartsAreBitwise) {
  for (const bool heat : {true, false}) {
    const TempDir dir;
    Config cfg = heat ? deck(kBox, {"time.steps=40"})
                      : deck(kWall, {"solver.method=multigrid", "solver.tolerance=1.0e-12"});
    cfg.output_directory = dir.str();
    LastField reference, resumed, partial;
    const RunResult ref = run_from(cfg, "", &reference);
    run_from(test_support::stopped_after(cfg, 3), "", &partial);
    const std::string ckpt = checkpoint_path(dir.str(), 3);
    ASSERT_TRUE(fs::exists(ckpt));
    const RunResult again = run_from(cfg, ckpt, &resumed);
    EXPECT_EQ(again.start_step, 3);
    EXPECT_EQ(again.steps, ref.steps);
    EXPECT_EQ(again.final_residual, ref.final_residual);
    EXPECT_TRUE(resumed.bytes == reference.bytes) << (heat ? "heat" : "poisson");
  }
}
#endif

}  // namespace
}  // namespace heatsolve

namespace heatsolve {
namespace {

// A physically scaled steady deck (issue #32): a 1 cm bar at 300 K on both ends, 512 cells,
// a source of 1e6 W/m^3 in a conductivity of 1: every method converges with the default
// tolerance (the test is relative to the initial residual, boundary data included), to
// T = 300 + q x (L - x) / (2 k) within the discretisation's error.
TEST(SteadyStopping, AScaledDeckConvergesWithTheDefaultTolerance) {
  for (const char* method : {"multigrid", "mg-cg"}) {
    const Config cfg = deck(fmt::format(
        "name: bar\n"
        "problem: {{type: poisson, dimensions: 2}}\n"
        "grid: {{cells: [512, 4], length: [0.01, 0.0001]}}\n"
        "material: {{conductivity: 1.0}}\n"
        "source: {{type: uniform, value: 1.0e6}}\n"
        "boundary: {{all: {{type: neumann, flux: 0.0}}, x-: {{type: dirichlet, value: 300.0}}, "
        "x+: {{type: dirichlet, value: 300.0}}}}\n"
        "solver: {{method: {}}}\n"
        "execution: {{backend: cpu, precision: double}}\n"
        "output: {{formats: []}}\n",
        method));
    std::vector<double> u, tight;
    const RunResult r = run_serial<double>(cfg, &u);
    EXPECT_TRUE(r.converged) << method << " " << r.final_residual;
    Config strict = cfg;
    strict.tolerance = 1e-13;
    run_serial<double>(strict, &tight);
    double worst = 0, solver = 0;
    for (int i = 0; i < 512; ++i) {
      const double x = (i + 0.5) * 0.01 / 512;
      worst = std::max(worst, std::abs(u[i] - (300 + 1e6 * x * (0.01 - x) / 2)));
      solver = std::max(solver, std::abs(u[i] - tight[i]));
    }
    // Of 12.5 K above the ends: the discretisation's error at the Dirichlet faces (h^2 q/8k =
    // 5e-5 K), the solver's far below it.
    EXPECT_LT(worst, 1e-4) << method;
    EXPECT_LT(solver, 0.5 * worst) << method;
    std::printf("[ measured ] scaled bar, %s: %lld iterations, error %.2e K, solver error %.2e K\n",
                method, static_cast<long long>(r.steps), worst, solver);
  }
}

}  // namespace
}  // namespace heatsolve
