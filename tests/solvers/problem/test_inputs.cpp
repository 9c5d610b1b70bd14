// Issue #32's inputs through whole runs: face values and source strengths over time (tables),
// source lists, an initial field from a file, and singular Poisson problems solved for their
// compatible part by Jacobi and Anderson as by multigrid (docs/deck.md "Time-varying inputs",
// "Several sources", "Initial field from a file", "Singular problems").
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/deck.hpp"
#include "io/field_writer.hpp"
#include "io/writer_factory.hpp"
#include "solvers/solver.hpp"
#include "tests/restart_part.hpp"
#include "tests/temp_dir.hpp"

namespace heatsolve {
namespace {

namespace fs = std::filesystem;
using test_support::TempDir;

Config deck(const std::string& text) {
  return parse_deck(text, "<test>");
}

// `text` with every "@key@" replaced by its value.
std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& keys) {
  for (const auto& [key, value] : keys) {
    const std::string mark = "@" + key + "@";
    for (std::size_t p = text.find(mark); p != std::string::npos; p = text.find(mark, p))
      text.replace(p, mark.size(), value);
  }
  return text;
}

// Keeps every output step's field (as doubles; floats convert exactly) and its time.
class Capture final : public FieldWriter {
 public:
  struct Step {
    std::int64_t step;
    double time;
    std::vector<double> data;
  };
  void write(std::int64_t step, double time, const float* d, const Block& b) override {
    steps.push_back({step, time, std::vector<double>(d, d + b.size())});
  }
  void write(std::int64_t step, double time, const double* d, const Block& b) override {
    steps.push_back({step, time, std::vector<double>(d, d + b.size())});
  }
  void finalize() override {}
  std::vector<std::string> files() const override { return {}; }
  const Step& at(std::int64_t step) const {
    for (const Step& s : steps)
      if (s.step == step) return s;
    throw std::runtime_error("no output step " + std::to_string(step));
  }
  std::vector<Step> steps;
};

// A serial run of cfg in its precision, its outputs into `writers`.
RunResult run(const Config& cfg, std::vector<FieldWriter*> writers) {
  RunContext ctx;
  ctx.domain = serial_domain(cfg.grid(), cfg.boundary);
  ctx.backend_options = backend_options_for(cfg);
  return run_simulation(cfg, ctx, std::move(writers));
}

bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double v : a) m = std::max(m, std::abs(v));
  return m;
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

double mean(const std::vector<double>& a) {
  double s = 0;
  for (double v : a) s += v;
  return s / double(a.size());
}

// ---- Faces over time ----------------------------------------------------------------------------

// A 2D bar one cell thick along x (h = 1, alpha = 1; 8 cells along y, insulated, so that every
// cell is the same, and multigrid has a grid to work on) whose x- face is a dirichlet table (a
// ramp 0 -> 2 over [0, 1], down to -1 at t = 1.5, then held), every other face insulated: the
// face's effect on a cell is its whole update, with lambda = 2 dt alpha / h^2 = 1/4 (dt = 1/8):
//   explicit         u' = u + lambda (v(t_n) - u)
//   implicit Euler   u' (1 + lambda) = u + lambda v(t_{n+1})
//   Crank-Nicolson   u' (1 + lambda/2) = u (1 - lambda/2) + lambda/2 (v(t_n) + v(t_{n+1}))
// The knots fall on steps 0, 8 and 12. `materials`: the same cell as a region (the
// variable-coefficient path: the face is a Fixed exterior value through half a cell).
const char* kOneCell = R"(name: one-cell
problem: {type: heat, dimensions: 2}
grid: {cells: [1, 8], length: [1.0, 8.0]}
time: {steps: 16, dt: 0.125, scheme: @scheme@}
initial: {type: uniform, value: 0.5}
boundary:
  all: {type: neumann, flux: 0.0}
  x-: {type: dirichlet, value: {table: [[0, 0], [1.0, 2.0], [1.5, -1.0]]}}
solver: {tolerance: 1.0e-13}
output: {every: 1, formats: []}
@materials@
)";

void check_one_cell(const std::string& scheme, const std::string& materials) {
  SCOPED_TRACE(scheme + (materials.empty() ? "" : ", materials"));
  const Config cfg = deck(fill(kOneCell, {{"scheme", scheme}, {"materials", materials}}));
  ASSERT_TRUE(cfg.boundary_varies());
  const TimeTable& v = *cfg.boundary_tables[0];
  EXPECT_EQ(v.at(1.0), 2.0);
  EXPECT_EQ(v.at(1.5), -1.0);
  Capture out;
  run(cfg, {&out});
  ASSERT_EQ(out.steps.size(), 17u);
  const double lambda = 0.25;
  double u = 0.5, worst = 0;
  for (int n = 0; n < 16; ++n) {
    const double t0 = n * 0.125, t1 = (n + 1) * 0.125;
    if (scheme == "explicit")
      u = u + lambda * (v.at(t0) - u);
    else if (scheme == "implicit-euler")
      u = (u + lambda * v.at(t1)) / (1 + lambda);
    else
      u = ((1 - lambda / 2) * u + lambda / 2 * (v.at(t0) + v.at(t1))) / (1 + lambda / 2);
    const Capture::Step& s = out.at(n + 1);
    EXPECT_EQ(s.time, t1);
    for (double cell : s.data) worst = std::max(worst, std::abs(cell - u));
  }
  // Explicit: the kernel's roundings; implicit: the solver's tolerance.
  EXPECT_LE(worst, scheme == "explicit" ? 1e-15 : 1e-12);
  std::printf("[ measured ] %s%s: max |u - recurrence| %.1e\n", scheme.c_str(),
              materials.empty() ? "" : " (materials)", worst);
}

const char* kCellRegion =
    "materials: [{region: {box: {lower: [0.0, 0.0], upper: [1.0, 8.0]}}, conductivity: 1.0}]";

TEST(TimeVaryingFaces, DirichletRampReproducedEachStepExplicit) {
  check_one_cell("explicit", "");
  check_one_cell("explicit", kCellRegion);
}

TEST(TimeVaryingFaces, DirichletRampReproducedEachStepImplicit) {
  for (const char* scheme : {"implicit-euler", "crank-nicolson"}) {
    check_one_cell(scheme, "");
    check_one_cell(scheme, kCellRegion);
  }
}

// Past its last knot a table is held: the run from there on equals a run with the constant
// value started from the table run's field at the knot (an `initial: {type: file}` of its
// series), bit for bit; a dirichlet value, a neumann flux and a convective ambient (a table
// ignored would keep its t = 0 value and differ).
#ifdef HEATSOLVE_HAVE_HDF5
TEST(TimeVaryingFaces, HeldAfterTheLastKnotLikeAConstant) {
  const TempDir dir;
  const char* text = R"(name: ramp
problem: {type: heat, dimensions: 3}
grid: {cells: [10, 8, 6]}
time: {steps: @steps@, dt: 0.001}
initial: @initial@
source: {type: box, value: 3.0, lower: [0.2, 0.2, 0.2], upper: [0.6, 0.5, 0.7]}
boundary:
  all: {type: dirichlet, value: 0.0}
  x-: {type: dirichlet, value: @xm@}
  y+: {type: neumann, flux: @yp@}
  z+: {type: convective, h: 2.0, ambient: @zp@}
output: {directory: @dir@, every: 10, formats: [hdf5]}
)";
  const Config ramp = deck(fill(text, {{"steps", "30"},
                                       {"initial", "{type: uniform, value: 0.25}"},
                                       {"xm", "{table: [[0, 0], [0.01, 1.5]]}"},
                                       {"yp", "{table: [[0.002, 0.0], [0.005, -2.0]]}"},
                                       {"zp", "{table: [[0, 0.5], [0.004, 1.5]]}"},
                                       {"dir", dir.str() + "/ramp"}}));
  ASSERT_TRUE(ramp.boundary_varies());
  Capture whole;
  {
    auto writers = make_writers(ramp, output_grid(ramp));
    run(ramp, {&whole, writers[0].get()});
    writers[0]->finalize();
  }
  // Steps 10..30 with the held values, from step 10's field.
  const Config held =
      deck(fill(text, {{"steps", "20"},
                       {"initial", "{type: file, path: " + dir.str() +
                                       "/ramp/ramp.h5, dataset: /steps/00000010/temperature}"},
                       {"xm", "1.5"},
                       {"yp", "-2.0"},
                       {"zp", "1.5"},
                       {"dir", dir.str() + "/held"}}));
  Capture rest;
  run(held, {&rest});
  EXPECT_TRUE(bitwise_equal(rest.at(20).data, whole.at(30).data));
  EXPECT_FALSE(bitwise_equal(whole.at(10).data, whole.at(30).data));
}
#endif

// ---- Sources over time --------------------------------------------------------------------------

// An insulated box gains heat only from its source or its faces: total_heat (sum of u dV) at
// the end minus at the start is the injected energy. Explicit steps add dt P(t_n) per step (a
// left Riemann sum, to rounding); implicit Euler dt P(t_{n+1}); Crank-Nicolson dt (P(t_n) +
// P(t_{n+1}))/2, the exact integral of a piecewise-linear P whose knots fall on steps.
struct Pulse {
  std::string scheme;
  RunResult r;
  double dt = 0;
  std::int64_t steps = 0;
  double h0 = 0;  // heat at the start
};

Pulse run_pulse(const std::string& text, const std::string& scheme) {
  const Config cfg = deck(fill(text, {{"scheme", scheme}}));
  Pulse p;
  p.scheme = scheme;
  p.dt = cfg.dt;
  p.steps = cfg.steps;
  Capture out;
  p.r = run(cfg, {&out});
  double cell = 1;
  for (int d = 0; d < cfg.dimensions; ++d) cell *= cfg.length[d] / cfg.cells[d];
  for (double v : out.at(0).data) p.h0 += v * cell;
  return p;
}

// The energy a scheme injects over the run for a power P(t) (discrete sums as above).
double injected(const Pulse& p, const std::function<double(double)>& power) {
  double sum = 0;
  for (std::int64_t n = 0; n < p.steps; ++n) {
    const double t0 = double(n) * p.dt, t1 = double(n + 1) * p.dt;
    if (p.scheme == "explicit")
      sum += p.dt * power(t0);
    else if (p.scheme == "implicit-euler")
      sum += p.dt * power(t1);
    else
      sum += p.dt * 0.5 * (power(t0) + power(t1));
  }
  return sum;
}

// A Gaussian source whose amplitude is a table (its separable form rescaled each step).
TEST(TimeVaryingSources, InsulatedBoxGainsTheIntegralOfTheSourcePower) {
  const char* text = R"(name: pulse
problem: {type: heat, dimensions: 3}
grid: {cells: [8, 8, 8]}
time: {steps: 40, dt: 0.0025, scheme: @scheme@}
initial: {type: uniform, value: 0.25}
boundary: {all: {type: neumann, flux: 0.0}}
source: {type: gaussian, amplitude: {table: [[0, 0], [0.03, 8.0], [0.07, 2.0]]},
         center: [0.4, 0.5, 0.6], width: 0.2}
solver: {tolerance: 1.0e-12}
output: {formats: []}
)";
  const Config cfg = deck(fill(text, {{"scheme", "explicit"}}));
  ASSERT_TRUE(cfg.sources_vary());
  // sum of the unit Gaussian's cell values times dV.
  std::vector<double> unit;
  Shape g = cfg.source;
  g.amplitude = 1.0;
  fill_shape(unit, g, cfg, serial_domain(cfg.grid(), cfg.boundary));
  double mass = 0;
  for (double v : unit) mass += v / 512.0;
  const TimeTable& a = *cfg.source.amplitude_table;
  const auto power = [&](double t) { return a.at(t) * mass; };
  // The table's integral over [0, 0.1]: 0.03 * 4 + 0.04 * 5 + 0.03 * 2.
  const double exact = 0.38 * mass;
  for (const char* scheme : {"explicit", "implicit-euler", "crank-nicolson"}) {
    const Pulse p = run_pulse(text, scheme);
    const double gained = p.r.total_heat - p.h0;
    const double want = injected(p, power);
    EXPECT_NEAR(gained, want, (scheme == std::string("explicit") ? 1e-13 : 1e-10) * want) << scheme;
    std::printf("[ measured ] %s: gained %.15f, discrete sum %.15f, integral %.15f\n", scheme,
                gained, want, exact);
  }
  // The trapezoidal rule integrates the piecewise-linear table exactly; the Riemann sums do
  // not (they differ from it by about dt (P(end) - P(0)) / 2).
  const Pulse cn = run_pulse(text, "crank-nicolson");
  EXPECT_NEAR(cn.r.total_heat - cn.h0, exact, 1e-10 * exact);
  const Pulse ex = run_pulse(text, "explicit");
  EXPECT_GT(std::abs(ex.r.total_heat - ex.h0 - exact), 1e-4 * exact);
}

// The flux of a heat_flux face with a table: a uniform material (a Neumann ghost rule per step)
// and materials by region (the face's flux in the stored source, refilled per step).
TEST(TimeVaryingSources, HeatFluxTableInjectsItsIntegral) {
  const char* text = R"(name: flux
problem: {type: heat, dimensions: 2}
grid: {cells: [8, 8]}
time: {steps: 40, dt: auto, scheme: @scheme@}
initial: {type: uniform, value: 0.25}
boundary:
  all: {type: neumann, flux: 0.0}
  x-: {type: heat_flux, value: {table: [[0, 1.0], [0.01, 4.0], [0.02, -1.0]]}}
solver: {tolerance: 1.0e-12}
output: {formats: []}
@materials@
)";
  for (const std::string materials :
       {std::string(), std::string("materials: [{region: {box: {lower: [0.0, 0.0], upper: [0.5, "
                                   "1.0]}}, conductivity: 2.0}]")}) {
    for (const char* scheme : {"explicit", "crank-nicolson"}) {
      SCOPED_TRACE(std::string(scheme) + (materials.empty() ? "" : ", materials"));
      const std::string t = fill(text, {{"materials", materials}});
      const Config cfg = deck(fill(t, {{"scheme", scheme}}));
      ASSERT_TRUE(cfg.boundary_varies());
      const TimeTable& q = *cfg.boundary_tables[0];
      const auto power = [&](double time) { return q.at(time) * 1.0; };  // face area 1
      const Pulse p = run_pulse(t, scheme);
      const double gained = p.r.total_heat - p.h0;
      const double want = injected(p, power);
      EXPECT_NEAR(gained, want, (scheme == std::string("explicit") ? 1e-13 : 1e-10))
          << gained << " vs " << want;
    }
  }
}

// ---- Source lists -------------------------------------------------------------------------------

const char* kListDeck = R"(name: list
problem: {type: heat, dimensions: 3}
grid: {cells: [10, 9, 8]}
time: {steps: 25, dt: auto}
initial: {type: gaussian, amplitude: 1.0, center: [0.3, 0.5, 0.6], width: 0.2}
boundary: {all: {type: dirichlet, value: 0.0}, x+: {type: neumann, flux: 0.5}}
source: @source@
execution: {precision: @precision@}
output: {formats: []}
)";

std::vector<double> final_field(const std::string& source, const std::string& precision) {
  const Config cfg = deck(fill(kListDeck, {{"source", source}, {"precision", precision}}));
  Capture out;
  run(cfg, {&out});
  return out.steps.back().data;
}

TEST(SourceLists, TwoUniformSourcesEqualTheirSum) {
  for (const char* precision : {"double", "float"}) {
    SCOPED_TRACE(precision);
    const std::vector<double> sum = final_field("{type: uniform, value: 4.0}", precision);
    const std::vector<double> list =
        final_field("[{type: uniform, value: 1.25}, {type: uniform, value: 2.75}]", precision);
    EXPECT_TRUE(bitwise_equal(list, sum));
  }
  // With tables (their values summed by the run at each step's time): to rounding.
  const std::vector<double> sum =
      final_field("{type: uniform, value: {table: [[0, 3.0], [0.01, 2.0]]}}", "double");
  const std::vector<double> list = final_field(
      "[{type: uniform, value: {table: [[0, 1.0], [0.01, 3.0]]}},"
      " {type: uniform, value: {table: [[0, 2.0], [0.01, -1.0]]}}]",
      "double");
  EXPECT_LE(max_diff(list, sum), 1e-14 * max_abs(sum));
  EXPECT_FALSE(bitwise_equal(sum, final_field("{type: uniform, value: 3.0}", "double")));
}

// A box and a Gaussian: the list's field is their sum, which a run of each alone and the
// source-free run confirm (the scheme is linear in f).
TEST(SourceLists, ShapesSumLinearly) {
  const std::string box = "{type: box, value: 5.0, lower: [0.1, 0.1, 0.1], upper: [0.5, 0.6, 0.4]}";
  const std::string gauss =
      "{type: gaussian, amplitude: -3.0, center: [0.6, 0.4, 0.5], width: 0.15}";
  const std::vector<double> both = final_field("[" + box + ", " + gauss + "]", "double");
  const std::vector<double> a = final_field(box, "double"), b = final_field(gauss, "double");
  const std::vector<double> none = final_field("{type: none}", "double");
  double worst = 0;
  for (std::size_t i = 0; i < both.size(); ++i)
    worst = std::max(worst, std::abs(both[i] - (a[i] + b[i] - none[i])));
  EXPECT_LE(worst, 1e-13 * max_abs(both));
}

// ---- Initial field from a file ------------------------------------------------------------------

#ifdef HEATSOLVE_HAVE_HDF5

const char* kSeriesDeck = R"(name: series
problem: {type: heat, dimensions: 3}
grid: {cells: [12, 10, 8]}
time: {steps: @steps@, dt: 0.0008}
initial: @initial@
source: {type: box, value: 3.0, lower: [0.5, 0.1, 0.2], upper: [0.9, 0.4, 0.7]}
boundary:
  all: {type: dirichlet, value: 0.0}
  x-: {type: dirichlet, value: 1.0}
  x+: {type: neumann, flux: -0.5}
execution: {precision: @precision@}
output: {directory: @dir@, every: 10, formats: [hdf5]}
)";

Capture run_series(const std::string& text) {
  const Config cfg = deck(text);
  auto writers = make_writers(cfg, output_grid(cfg));
  Capture out;
  run(cfg, {&out, writers[0].get()});
  writers[0]->finalize();
  return out;
}

// A run started from a step of another's series equals that run continued, bit for bit (the
// explicit scheme with the same dt); without `dataset`, the series' last step.
TEST(InitialFieldFile, ContinuesTheRunThatWroteIt) {
  const TempDir dir;
  for (const char* precision : {"double", "float"}) {
    SCOPED_TRACE(precision);
    const std::string p = precision;
    const auto text = [&](const std::string& steps, const std::string& initial,
                          const std::string& sub) {
      return fill(kSeriesDeck, {{"steps", steps},
                                {"initial", initial},
                                {"precision", p},
                                {"dir", dir.str() + "/" + sub + p}});
    };
    const std::string gaussian =
        "{type: gaussian, amplitude: 2.0, center: [0.3, 0.6, 0.5], width: 0.2}";
    const Capture whole = run_series(text("30", gaussian, "whole"));
    const Capture from10 = run_series(text("20",
                                           "{type: file, path: " + dir.str() + "/whole" + p +
                                               "/series.h5, dataset: /steps/00000010/temperature}",
                                           "from10"));
    EXPECT_TRUE(bitwise_equal(from10.at(0).data, whole.at(10).data));
    EXPECT_TRUE(bitwise_equal(from10.at(20).data, whole.at(30).data));
    // A series of 10 steps, continued from its last step (no dataset given).
    run_series(text("10", gaussian, "first"));
    const Capture last = run_series(
        text("20", "{type: file, path: " + dir.str() + "/first" + p + "/series.h5}", "last"));
    EXPECT_TRUE(bitwise_equal(last.at(20).data, whole.at(30).data));
  }
}

// A steady solve's reference residual comes from the initial field (Sweeper::initial_field):
// started from a file holding a shape's values it runs exactly as started from the shape.
TEST(InitialFieldFile, SteadySolveStartsFromTheFile) {
  const TempDir dir;
  const std::string shape = "{type: gaussian, amplitude: 0.7, center: [0.4, 0.6], width: 0.3}";
  // A heat run of no steps writes the shape's values as its step 0.
  const Config writer = deck(R"(name: shape
problem: {type: heat, dimensions: 2}
grid: {cells: [20, 16]}
time: {steps: 0, dt: 0.0001}
initial: )" + shape + R"(
output: {directory: )" + dir.str() +
                             R"(/shape, formats: [hdf5]}
)");
  {
    auto writers = make_writers(writer, output_grid(writer));
    run(writer, {writers[0].get()});
    writers[0]->finalize();
  }
  const char* text = R"(name: steady
problem: {type: poisson, dimensions: 2}
grid: {cells: [20, 16]}
initial: @initial@
source: {type: sine, amplitude: 4.0}
boundary: {all: {type: dirichlet, value: 0.5}, y+: {type: neumann, flux: 1.0}}
solver: {method: @method@, tolerance: 1.0e-8, check_every: 5}
output: {formats: []}
)";
  for (const char* method : {"jacobi", "anderson", "multigrid"}) {
    SCOPED_TRACE(method);
    Capture a, b;
    const RunResult ra = run(deck(fill(text, {{"initial", shape}, {"method", method}})), {&a});
    const RunResult rb =
        run(deck(fill(text, {{"initial", "{type: file, path: " + dir.str() + "/shape/shape.h5}"},
                             {"method", method}})),
            {&b});
    ASSERT_TRUE(ra.converged);
    EXPECT_EQ(ra.steps, rb.steps);
    EXPECT_EQ(ra.residual_history, rb.residual_history);
    EXPECT_TRUE(bitwise_equal(a.steps.front().data, b.steps.front().data));
    EXPECT_TRUE(bitwise_equal(a.steps.back().data, b.steps.back().data));
  }
}

#endif  // HEATSOLVE_HAVE_HDF5

// ---- Singular problems: compatible-mean ---------------------------------------------------------

// Insulated and flux faces, a Gaussian source that does not balance them: every method solves
// the compatible part (the mean imbalance removed from the source) and returns the solution of
// zero mean; Jacobi and Anderson agree with multigrid. With materials by region plain Jacobi is
// left out: there every cell's diagonal is the sum of its couplings when no face fixes the
// level, so the checkerboard mode is an eigenvector of the sweep with eigenvalue -1 and never
// decays (docs/deck.md "Singular problems"); Anderson's mixing removes it.
const char* kSingularDeck = R"(name: singular
problem: {type: poisson, dimensions: 2}
grid: {cells: [20, 16], length: [1.0, 0.8]}
initial: {type: uniform, value: 3.0}
source: {type: gaussian, amplitude: 5.0, center: [0.3, 0.5], width: 0.15}
boundary:
  all: {type: neumann, flux: 0.0}
  x-: {type: neumann, flux: 0.75}
  y+: {type: periodic}
  y-: {type: periodic}
solver: {method: @method@, tolerance: @tolerance@, max_iterations: 200000, check_every: 10,
         singular: compatible-mean}
output: {formats: []}
@materials@
)";

std::vector<double> singular_solution(const std::string& method, const std::string& tolerance,
                                      const std::string& materials, RunResult* r) {
  const Config cfg = deck(fill(
      kSingularDeck, {{"method", method}, {"tolerance", tolerance}, {"materials", materials}}));
  Capture out;
  *r = run(cfg, {&out});
  return out.steps.back().data;
}

TEST(CompatibleMean, JacobiAndAndersonAgreeWithMultigrid) {
  for (const std::string materials :
       {std::string(), std::string("materials: [{region: {box: {lower: [0.5, 0.0], upper: [1.0, "
                                   "0.4]}}, conductivity: 4.0}]")}) {
    SCOPED_TRACE(materials.empty() ? "uniform" : "materials");
    RunResult rmg;
    const std::vector<double> mg = singular_solution("multigrid", "1.0e-12", materials, &rmg);
    ASSERT_TRUE(rmg.converged);
    EXPECT_LE(std::abs(mean(mg)), 1e-13 * max_abs(mg));
    for (const char* method : {"jacobi", "anderson"}) {
      if (!materials.empty() && method == std::string("jacobi")) continue;
      RunResult r;
      const std::vector<double> u = singular_solution(method, "1.0e-10", materials, &r);
      EXPECT_TRUE(r.converged) << method << ": " << r.final_residual;
      EXPECT_LE(std::abs(mean(u)), 1e-13 * max_abs(mg)) << method;
      const double d = max_diff(u, mg) / max_abs(mg);
      EXPECT_LE(d, 1e-7) << method;
      std::printf("[ measured ] %s%s: %lld iterations, max |u - u_mg| / max |u_mg| = %.1e\n",
                  method, materials.empty() ? "" : " (materials)", static_cast<long long>(r.steps),
                  d);
    }
  }
}

// The default policy never lets an unbalanced singular deck reach a solver: the validator
// refuses it (exit 2 at `source`).
TEST(CompatibleMean, RefusedWithoutThePolicy) {
  std::string text =
      fill(kSingularDeck, {{"method", "jacobi"}, {"tolerance", "1.0e-8"}, {"materials", ""}});
  text.replace(text.find("singular: compatible-mean"), 25, "singular: refuse");
  EXPECT_THROW(deck(text), DeckError);
}

// ---- Restarts -----------------------------------------------------------------------------------

#ifdef HEATSOLVE_HAVE_HDF5

// Uninterrupted, then `first` steps or iterations with a checkpoint there, then from that
// checkpoint: the final fields bitwise equal (faces and sources over time are taken from each
// step's time, a singular solve's shift from the deck's initial field).
void expect_bitwise_restart(Config cfg, std::int64_t first) {
  const TempDir dir;
  cfg.output_directory = dir.str();
  cfg.deck = {{"name", "inputs-restart"}};
  Capture whole;
  const RunResult reference = run(cfg, {&whole});
  ASSERT_GT(reference.steps, first);
  const Config part = test_support::stopped_after(cfg, first);
  run(part, {});
  RunContext ctx;
  ctx.domain = serial_domain(cfg.grid(), cfg.boundary);
  ctx.backend_options = backend_options_for(cfg);
  ctx.restart_path = fmt::format("{}/checkpoint_{:08d}.h5", dir.str(), first);
  ASSERT_TRUE(fs::exists(ctx.restart_path)) << ctx.restart_path;
  Capture resumed;
  const RunResult r = run_simulation(cfg, ctx, {&resumed});
  EXPECT_EQ(r.steps, reference.steps);
  EXPECT_TRUE(bitwise_equal(resumed.steps.back().data, whole.steps.back().data));
}

TEST(InputsRestart, TablesAndSingularSolvesRestartBitwise) {
  const char* heat = R"(name: heat
problem: {type: heat, dimensions: 2}
grid: {cells: [16, 12]}
time: {steps: 12, dt: @dt@, scheme: @scheme@}
initial: {type: uniform, value: 0.5}
source: [{type: sine, amplitude: {table: [[0, 1.0], [0.005, 4.0]]}},
         {type: uniform, value: {table: [[0.001, 0.0], [0.004, -2.0]]}}]
boundary:
  all: {type: neumann, flux: 0.0}
  x-: {type: dirichlet, value: {table: [[0, 0.0], [0.006, 2.0]]}}
  y+: {type: convective, h: 3.0, ambient: {table: [[0, 1.0], [0.01, -1.0]]}}
solver: {tolerance: 1.0e-10}
output: {formats: []}
)";
  expect_bitwise_restart(deck(fill(heat, {{"dt", "0.0005"}, {"scheme", "explicit"}})), 5);
  expect_bitwise_restart(deck(fill(heat, {{"dt", "0.002"}, {"scheme", "crank-nicolson"}})), 5);
  for (const char* method : {"jacobi", "anderson"})
    expect_bitwise_restart(
        deck(fill(kSingularDeck, {{"method", method}, {"tolerance", "1.0e-9"}, {"materials", ""}})),
        40);
}

#endif  // HEATSOLVE_HAVE_HDF5

}  // namespace
}  // namespace heatsolve
