// diagnostics.csv through whole runs (issue #32): the energy balance at rounding level for
// explicit runs with flux, Dirichlet, convective and source terms (uniform and regions),
// at the solver's tolerance for implicit ones; probes equal the field; the same file with and
// without a progress display.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/deck.hpp"
#include "io/diagnostics_writer.hpp"
#include "solvers/solver.hpp"

namespace heatsolve {
namespace {

namespace fs = std::filesystem;

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
  std::string text;
  double at(std::size_t row, const std::string& column) const {
    for (std::size_t c = 0; c < columns.size(); ++c)
      if (columns[c] == column) return rows.at(row).at(c);
    ADD_FAILURE() << "no column " << column;
    return 0;
  }
};

// Runs cfg (serial) with a diagnostics writer in a scratch directory; the file's table.
Table run_with_diagnostics(Config cfg, const std::string& label, std::vector<double>* field,
                           bool progress = false) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("hs-diag-{}-{}", label, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  cfg.output_directory = dir.string();
  RunContext ctx;
  ctx.domain = serial_domain(cfg.grid(), cfg.boundary);
  ctx.backend_options = backend_options_for(cfg);
  if (progress) ctx.on_progress = [](const ProgressInfo&) {};
  DiagnosticsWriter writer(dir.string(), diagnostics_columns(cfg));
  ctx.diagnostics = &writer;
  run_simulation(cfg, ctx, {});
  writer.finalize();
  Table t;
  std::ifstream in(dir / kDiagnosticsFile);
  std::stringstream all;
  all << in.rdbuf();
  t.text = all.str();
  std::istringstream lines(t.text);
  std::string line;
  std::getline(lines, line);
  std::istringstream header(line);
  for (std::string c; std::getline(header, c, ',');) t.columns.push_back(c);
  while (std::getline(lines, line)) {
    std::istringstream cells(line);
    std::vector<double> row;
    for (std::string c; std::getline(cells, c, ',');) row.push_back(std::stod(c));
    t.rows.push_back(row);
  }
  if (field) {
    std::vector<double> u;
    run_serial<double>(cfg, &u);
    *field = u;
  }
  fs::remove_all(dir);
  return t;
}

const char* kSlab =
    "name: slab\n"
    "problem: {type: heat, dimensions: 3}\n"
    "grid: {cells: [12, 10, 8], length: [0.12, 0.1, 0.08]}\n"
    "material: {conductivity: 45.0, density: 7850.0, specific_heat: 490.0}\n"
    "time: {steps: 60, dt: auto}\n"
    "initial: {type: gaussian, amplitude: 50.0, width: 0.03, center: [0.05, 0.05, 0.04], "
    "value: 300.0}\n"
    "source: {type: box, value: 2.0e6, lower: [0.0, 0.0, 0.0], upper: [0.04, 0.1, 0.08]}\n"
    "boundary:\n"
    "  all: {type: neumann, flux: 0.0}\n"
    "  x-: {type: heat_flux, value: 2.0e4}\n"
    "  x+: {type: dirichlet, value: 290.0}\n"
    "  y+: {type: convective, h: 500.0, ambient: 280.0}\n"
    "  z-: {type: neumann, flux: -30.0}\n"
    "execution: {backend: cpu, precision: double}\n"
    "output: {formats: [], diagnostics: {every: 10}, probes: [{name: p, point: [0.05, 0.05, "
    "0.04]}]}\n";

TEST(Diagnostics, ExplicitBalanceIsAtRoundingLevel) {
  for (const bool regions : {false, true}) {
    std::vector<std::string> overrides;
    if (regions)
      overrides.push_back(
          "materials=[{region: {sphere: {center: [0.06, 0.05, 0.04], radius: 0.03}}, "
          "conductivity: 400.0, density: 8960.0, specific_heat: 385.0}]");
    const Config cfg = parse_deck(kSlab, "<test>", overrides);
    std::vector<double> u;
    const Table t = run_with_diagnostics(cfg, regions ? "regions" : "uniform", &u);
    ASSERT_EQ(t.rows.size(), 7u);  // steps 0, 10, ..., 60
    const double heat0 = t.at(0, "heat");
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      const double b = t.at(r, "balance");
      std::printf("[ measured ] %s step %.0f: balance %.3e J of heat %.6e J\n",
                  regions ? "regions" : "uniform", t.rows[r][0], b, t.at(r, "heat"));
      EXPECT_LE(std::abs(b), 1e-11 * heat0) << r;
    }
    // Something flowed through every non-insulated face.
    for (const char* face : {"flow_x-", "flow_x+", "flow_y+", "flow_z-"})
      EXPECT_NE(t.at(6, face), 0.0) << face;
    EXPECT_EQ(t.at(6, "flow_y-"), 0.0);
    EXPECT_NEAR(t.at(6, "flow_x-"), 2.0e4 * 0.1 * 0.08, 1e-9);  // heat flux x area
    // The probe is the value of the cell holding the point: (5, 5, 4) of 12 x 10 x 8.
    EXPECT_EQ(t.at(6, "probe_p"), u[(4 * 10 + 5) * 12 + 5]);
    EXPECT_EQ(t.at(6, "max"), *std::max_element(u.begin(), u.end()));
    EXPECT_EQ(t.at(6, "min"), *std::min_element(u.begin(), u.end()));
  }
}

TEST(Diagnostics, ImplicitBalanceIsAtTheSolverTolerance) {
  for (const char* scheme : {"implicit-euler", "crank-nicolson"}) {
    const Config cfg =
        parse_deck(kSlab, "<test>",
                   {fmt::format("time.scheme={}", scheme), "time.dt=2.0", "time.steps=20",
                    "solver.method=mg-cg", "solver.tolerance=1.0e-12"});
    const Table t = run_with_diagnostics(cfg, scheme, nullptr);
    const double heat0 = t.at(0, "heat"), gained = t.at(t.rows.size() - 1, "heat") - heat0;
    const double b = t.at(t.rows.size() - 1, "balance");
    std::printf("[ measured ] %s: balance %.3e J of %.3e J gained\n", scheme, b, gained);
    EXPECT_LE(std::abs(b), 1e-6 * std::abs(gained)) << scheme;
  }
}

// Faces and source that follow tables over time: each row's flows are the faces' at the row's
// time, and the balance stays at rounding level (explicit) / the tolerance (implicit), with
// and without regions.
TEST(Diagnostics, BalanceHoldsWithInputsOverTime) {
  const std::vector<std::string> tables{
      "boundary.x-={type: heat_flux, value: {table: [[0.0, 2.0e4], [30.0, -1.0e4]]}}",
      "boundary.x+={type: dirichlet, value: {table: [[0.0, 290.0], [60.0, 330.0]]}}",
      "boundary.y+={type: convective, h: 500.0, ambient: {table: [[0.0, 280.0], [60.0, 350.0]]}}",
      "source.value={table: [[0.0, 2.0e6], [50.0, 0.0]]}"};
  for (const bool regions : {false, true})
    for (const char* scheme : {"explicit", "crank-nicolson"}) {
      std::vector<std::string> overrides = tables;
      overrides.push_back(fmt::format("time.scheme={}", scheme));
      if (std::string(scheme) != "explicit")
        overrides.insert(overrides.end(), {"time.dt=2.0", "time.steps=20", "solver.method=mg-cg",
                                           "solver.tolerance=1.0e-12"});
      if (regions)
        overrides.push_back(
            "materials=[{region: {sphere: {center: [0.06, 0.05, 0.04], radius: 0.03}}, "
            "conductivity: 400.0, density: 8960.0, specific_heat: 385.0}]");
      const Config cfg = parse_deck(kSlab, "<test>", overrides);
      const std::string label = fmt::format("{}-{}", scheme, regions ? "regions" : "uniform");
      const Table t = run_with_diagnostics(cfg, "tables-" + label, nullptr);
      const std::size_t last = t.rows.size() - 1;
      const double time = t.at(last, "time");
      // heat_flux x-: the table's value at the row's time times the face's area.
      const double q = time < 30.0 ? 2.0e4 - 3.0e4 * time / 30.0 : -1.0e4;
      EXPECT_NEAR(t.at(last, "flow_x-"), q * 0.1 * 0.08, 1e-9 * std::abs(q)) << label;
      const double gained = std::abs(t.at(last, "heat") - t.at(0, "heat"));
      const double b = t.at(last, "balance");
      std::printf("[ measured ] %s: t = %.3f, balance %.3e J of %.3e J gained\n", label.c_str(),
                  time, b, gained);
      EXPECT_LE(std::abs(b), (std::string(scheme) == "explicit" ? 1e-11 : 1e-6) * gained) << label;
    }
}

TEST(Diagnostics, TheFileDoesNotDependOnTheTerminal) {
  const Config cfg = parse_deck(kSlab, "<test>");
  const Table quiet = run_with_diagnostics(cfg, "quiet", nullptr, false);
  const Table live = run_with_diagnostics(cfg, "live", nullptr, true);
  EXPECT_EQ(quiet.text, live.text);
}

// A steady solve's one row: the net inflow balances the source at convergence.
TEST(Diagnostics, SteadyRowBalancesTheSource) {
  const Config cfg = parse_deck(
      "name: s\nproblem: {type: poisson, dimensions: 2}\ngrid: {cells: [32, 16]}\n"
      "material: {conductivity: 2.0}\nsource: {type: uniform, value: 5.0}\n"
      "boundary: {all: {type: neumann, flux: 0.0}, x-: {type: dirichlet, value: 1.0}, "
      "y+: {type: convective, h: 3.0, ambient: 0.0}}\n"
      "solver: {method: mg-cg, tolerance: 1.0e-12}\n"
      "execution: {backend: cpu}\noutput: {formats: [], diagnostics: {every: 1}}\n",
      "<test>");
  const Table t = run_with_diagnostics(cfg, "steady", nullptr);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_NEAR(t.at(0, "source_power"), 5.0, 1e-12);
  EXPECT_NEAR(t.at(0, "flow_x-") + t.at(0, "flow_y+"), -5.0, 1e-9);
  EXPECT_LE(std::abs(t.at(0, "balance")), 1e-9);
}

}  // namespace
}  // namespace heatsolve
