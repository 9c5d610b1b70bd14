// Numeric and structural edge cases of decks and runs, each handled deliberately
// (docs/robustness.md): non-finite and huge numbers, degenerate grids, zero lengths and steps,
// step counts beyond 2^31, extreme diffusivities, hostile YAML (alias bombs, invalid UTF-8),
// the memory preflight and the overwrite refusal. Regression tests for fuzzer findings too.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/exit_codes.hpp"
#include "app/preflight.hpp"
#include "app/run_command.hpp"
#include "io/deck.hpp"
#include "solvers/solver.hpp"
#include "tests/file_bytes.hpp"
#include "tests/io/deck_error.hpp"
#include "tests/temp_dir.hpp"

namespace heatsolve {
namespace {

namespace fs = std::filesystem;

const std::string kHead3D = "name: t\nproblem: {type: heat, dimensions: 3}\n";

Config parse(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return parse_deck(text, "edge.yaml", overrides);
}

DeckError parse_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return test_support::deck_error_of(text, [&] { parse(text, overrides); });
}

void expect_error(const std::string& text, const std::string& fragment, int line, int column = 0,
                  const std::vector<std::string>& overrides = {}) {
  const DeckError e = parse_error(text, overrides);
  EXPECT_NE(e.message().find(fragment), std::string::npos)
      << "message: " << e.what() << "\nexpected fragment: " << fragment;
  EXPECT_EQ(e.line(), line) << e.what();
  if (column > 0) EXPECT_EQ(e.column(), column) << e.what();
}

// A fresh directory per test, removed afterwards.
using test_support::TempDir;

std::string write_deck(const fs::path& dir, const std::string& text) {
  const fs::path p = dir / "deck.yaml";
  std::ofstream(p) << text;
  return p.string();
}

// ---- Non-finite and huge numbers ----------------------------------------------------------

TEST(EdgeNumbers, NonFiniteAndOverflowingValuesAreRejectedWithPosition) {
  expect_error(kHead3D + "grid: {cells: [4, 4, 4]}\ntime: {end: .inf}\n",
               "time.end: expected a finite number, got '.inf'", 4, 13);
  expect_error(kHead3D + "grid: {cells: [4, 4, 4]}\ntime: {end: 1e400}\n",
               "time.end: expected a finite number, got '1e400'", 4, 13);
  expect_error(kHead3D +
                   "grid: {cells: [4, 4, 4]}\ntime: {end: 1}\ninitial: {type: uniform, "
                   "value: -.NaN}\n",
               "initial.value: expected a finite number, got '-.NaN'", 5, 33);
  expect_error(kHead3D + "grid: {cells: [4, 4, 4], length: [1, 1e999, 1]}\ntime: {end: 1}\n",
               "grid.length[1]: expected a finite number, got '1e999'", 3, 38);
  expect_error(kHead3D + "grid: {cells: [4, 4, 4]}\ntime: {end: 1}\nmaterial: {diffusivity: nan}\n",
               "material.diffusivity: expected a finite number, got 'nan'", 5, 25);
}

TEST(EdgeNumbers, IntegersBeyondTheirRangeAreRejected) {
  expect_error(kHead3D + "grid: {cells: [4, 4, 99999999999999999999]}\ntime: {end: 1}\n",
               "grid.cells[2]: expected a positive integer, got '99999999999999999999'", 3, 22);
  expect_error(kHead3D + "grid: {cells: [4, 4, 2147483648]}\ntime: {end: 1}\n",
               "grid.cells[2]: 2147483648 is too large (at most 1073741824)", 3, 22);
  // Found by reasoning about the int cast: 2^32 + 2 used to wrap around to 2 dimensions.
  expect_error("name: t\nproblem: {type: heat, dimensions: 4294967298}\n",
               "problem.dimensions: expected 2 or 3, got 4294967298", 2, 35);
}

TEST(EdgeNumbers, ZeroAndNegativeLengthsAreRejected) {
  expect_error(kHead3D + "grid: {cells: [4, 4, 4], length: [0, 1, 1]}\ntime: {end: 1}\n",
               "grid.length[0]: must be positive, got 0", 3, 35);
  expect_error(kHead3D + "grid: {cells: [4, 4, 4], length: [1, 1, -2]}\ntime: {end: 1}\n",
               "grid.length[2]: must be positive, got -2", 3, 41);
}

TEST(EdgeNumbers, CellSizesOutsideTheUsableRangeAreRejected) {
  expect_error(kHead3D + "grid: {cells: [4, 4, 4], length: [1e-200, 1, 1]}\ntime: {end: 1}\n",
               "grid: cell size length[0]/cells[0] = 2.5e-201 is outside the usable range", 3, 34);
  expect_error(kHead3D + "grid: {cells: [4, 4, 4], length: [1, 1e300, 1]}\ntime: {end: 1}\n",
               "is outside the usable range", 3, 34);
}

// ---- Diffusivity and time resolution ------------------------------------------------------

TEST(EdgeTime, HugeDiffusivityNeedsTooManySteps) {
  // dt_max = 1/(2 * 1e300 * 48) ~ 1e-302: 0.01 would need ~1e300 steps.
  expect_error(kHead3D +
                   "grid: {cells: [4, 4, 4]}\nmaterial: {diffusivity: 1e300}\n"
                   "time: {end: 0.01}\n",
               "time.end: 0.01 needs", 5, 13);
}

TEST(EdgeTime, DiffusivityThatUnderflowsTheStabilityLimitIsRejected) {
  // 2 * 1e308 * 48 overflows: dt_max = 0. This used to cast NaN to an integer (UBSan).
  const DeckError e = parse_error(kHead3D +
                                  "grid: {cells: [4, 4, 4]}\n"
                                  "material: {diffusivity: 1e308}\ntime: {end: 0}\n");
  EXPECT_NE(e.message().find("is not a usable time step"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("alpha = 1e+308"), std::string::npos) << e.what();
  EXPECT_EQ(e.line(), 5);
  // The same with steps: there is no dt to step with.
  expect_error(kHead3D +
                   "grid: {cells: [4, 4, 4]}\nmaterial: {diffusivity: 1e308}\n"
                   "time: {steps: 3}\n",
               "is not a usable time step", 5);
}

TEST(EdgeTime, TinyDiffusivityIsFine) {
  const Config cfg = parse(kHead3D +
                           "grid: {cells: [4, 4, 4]}\nmaterial: {diffusivity: 1e-30}\n"
                           "time: {end: 1}\n");
  EXPECT_EQ(cfg.steps, 1);  // one (stable) step of dt = end
  EXPECT_DOUBLE_EQ(cfg.dt, 1.0);
}

TEST(EdgeTime, MoreThan2To31StepsAreAllowed) {
  // Step counters are 64-bit: 3e9 steps is a (long) legitimate run, accepted as given.
  const Config by_steps = parse(kHead3D + "grid: {cells: [4, 4, 4]}\ntime: {steps: 3000000000}\n");
  EXPECT_EQ(by_steps.steps, 3000000000LL);
  EXPECT_TRUE(std::isfinite(by_steps.end_time));
  // dt_max = 1/96 on a 4^3 grid; end 3e7 needs ceil(3e7 / (0.9/96)) = 3.2e9 steps.
  const Config by_end = parse(kHead3D + "grid: {cells: [4, 4, 4]}\ntime: {end: 3e7}\n");
  EXPECT_GT(by_end.steps, (std::int64_t{1} << 31));
  EXPECT_NEAR(by_end.dt * double(by_end.steps), 3e7, 1e-3);
}

TEST(EdgeTime, MoreThan1e15StepsAreRefused) {
  expect_error(kHead3D + "grid: {cells: [4, 4, 4]}\ntime: {steps: 2000000000000000}\n",
               "time.steps: 2000000000000000 is too large (at most 1000000000000000)", 4, 15);
  expect_error(kHead3D + "grid: {cells: [4, 4, 4]}\ntime: {end: 1e20}\n",
               "time.end: 1e+20 needs 1.06667e+22 steps of dt = 0.009375 (more than 1e+15)", 4, 13);
}

TEST(EdgeTime, ZeroStepsAndZeroEnd) {
  EXPECT_EQ(parse(kHead3D + "grid: {cells: [4, 4, 4]}\ntime: {steps: 0}\n").steps, 0);
  EXPECT_EQ(parse(kHead3D + "grid: {cells: [4, 4, 4]}\ntime: {end: 0}\n").steps, 0);
}

// ---- Degenerate grids ---------------------------------------------------------------------

TEST(EdgeGrid, OneCellGridRunsExactly) {
  // One cell, Dirichlet 0 all round (ghost = -u), h = 1: each step multiplies u by
  // 1 - alpha*dt*(4/h^2 per axis) = 1 - 12*dt in 3D and 1 - 8*dt in 2D.
  for (const int dims : {2, 3}) {
    SCOPED_TRACE(dims);
    const std::string cells = dims == 3 ? "[1, 1, 1]" : "[1, 1]";
    const Config cfg =
        parse(fmt::format("name: t\nproblem: {{type: heat, dimensions: {}}}\n"
                          "grid: {{cells: {}}}\ntime: {{steps: 5, dt: 0.05}}\n"
                          "initial: {{type: uniform, value: 1}}\nexecution: {{backend: cpu}}\n",
                          dims, cells));
    std::vector<double> u;
    const RunResult r = run_serial<double>(cfg, &u);
    ASSERT_EQ(u.size(), 1u);
    EXPECT_EQ(r.steps, 5);
    EXPECT_NEAR(u[0], std::pow(1 - 4 * dims * 0.05, 5), 1e-14);
  }
}

TEST(EdgeGrid, OneCellPoisson) {
  // One cell, Dirichlet 0 (ghosts = -u), f = 1, h = 1: the solution is |u| = 1/8 in 2D.
  const std::string deck =
      "name: p\nproblem: {type: poisson, dimensions: 2}\ngrid: {cells: [1, 1]}\n"
      "source: {type: uniform, value: 1}\nexecution: {backend: cpu}\n"
      "solver: {tolerance: 1e-10, max_iterations: 200, check_every: 1";
  std::vector<double> u;
  const RunResult anderson = run_serial<double>(parse(deck + ", method: anderson}\n"), &u);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_TRUE(anderson.converged);
  EXPECT_NEAR(std::abs(u[0]), 0.125, 1e-9);
  // Plain Jacobi has spectral radius exactly 1 on a single cell (u <- 1/4 - u oscillates):
  // it ends at max_iterations without converging (exit 3 from the CLI), finite throughout.
  const RunResult jacobi = run_serial<double>(parse(deck + ", method: jacobi}\n"), &u);
  EXPECT_FALSE(jacobi.converged);
  EXPECT_EQ(jacobi.steps, 200);
  EXPECT_TRUE(std::isfinite(u[0]));
}

TEST(EdgeGrid, ThinGridsRun) {
  const Config cfg = parse(kHead3D +
                           "grid: {cells: [64, 1, 1]}\ntime: {steps: 10}\n"
                           "initial: {type: sine, amplitude: 1}\n"
                           "execution: {backend: cpu}\n");
  std::vector<double> u;
  run_serial<double>(cfg, &u);
  ASSERT_EQ(u.size(), 64u);
  for (double v : u) EXPECT_TRUE(std::isfinite(v));
}

// ---- Hostile YAML (fuzzer findings) --------------------------------------------------------

TEST(EdgeYaml, AliasBombIsRejectedQuickly) {
  // "Billion laughs": 10^9 values in a few lines; a timeout of the fuzz target.
  std::string text = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  std::string prev = "a";
  for (int i = 0; i < 8; ++i) {
    const std::string name = "b" + std::to_string(i);
    text += name + ": &" + name + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *" : "*") + prev;
    text += "]\n";
    prev = name;
  }
  const auto start = std::chrono::steady_clock::now();
  const DeckError e = parse_error(text);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(e.message().find("the deck expands to more than 10000 values"), std::string::npos)
      << e.what();
  EXPECT_GE(e.line(), 1);
}

TEST(EdgeYaml, DeepNestingIsRejectedBeforeTheStackRunsOut) {
  // A crash of the fuzz target (stack overflow under ASan): aliases re-anchored inside their
  // own sequence nested the conversion thousands of levels deep. Plain nesting, the same way:
  std::string text = "name: x\ngrid: ";
  for (int i = 0; i < 200; ++i) text += "[";
  for (int i = 0; i < 200; ++i) text += "]";
  text += "\n";
  const DeckError e = parse_error(text);
  EXPECT_NE(e.message().find("nested more than 64 levels deep"), std::string::npos) << e.what();
  EXPECT_EQ(e.line(), 2);
}

TEST(EdgeYaml, InvalidUtf8IsRejectedWhereItIs) {
  // A crash of the fuzz target: accepted, then summary.json's JSON writer threw at the end
  // of a run.
  expect_error(kHead3D +
                   "grid: {cells: [4, 4, 4]}\ntime: {end: 1}\n"
                   "output: {directory: out\xff"
                   "x}\n",
               "invalid UTF-8 text", 5, 21);
  expect_error(kHead3D + "grid: {cells: [4, 4, 4]}\ntime: {end: 1}\nout\xc3put: {}\n",
               "invalid UTF-8 text", 5, 1);
  // A surrogate code point spelled as a YAML escape: yaml-cpp rejects it itself.
  expect_error(kHead3D +
                   "grid: {cells: [4, 4, 4]}\ntime: {end: 1}\n"
                   "output: {directory: \"a\\ud800\"}\n",
               "invalid unicode", 5, 29);
  // Valid multi-byte text is fine.
  EXPECT_EQ(parse(kHead3D + "grid: {cells: [4, 4, 4]}\ntime: {end: 1}\n"
                            "output: {directory: \"r\xc3\xa9sultats/\xe2\x82\xac\"}\n")
                .output_directory,
            "r\xc3\xa9sultats/\xe2\x82\xac");
}

TEST(EdgeYaml, ControlCharactersInNamesAndPathsAreRejected) {
  expect_error(kHead3D +
                   "grid: {cells: [4, 4, 4]}\ntime: {end: 1}\n"
                   "output: {directory: \"a\\0b\"}\n",
               "output.directory: control characters", 5, 21);
  expect_error(kHead3D +
                   "grid: {cells: [4, 4, 4]}\ntime: {end: 1}\n"
                   "output: {directory: \"a\\nb\"}\n",
               "output.directory: control characters", 5, 21);
}

TEST(EdgeYaml, DeepNestingIsAnError) {
  const std::string deep = "name: " + std::string(5000, '[') + std::string(5000, ']') + "\n";
  const DeckError e = parse_error(deep);
  EXPECT_EQ(e.line(), 1) << e.what();
}

TEST(EdgeYaml, OverridesWithOddText) {
  const std::string base = kHead3D + "grid: {cells: [4, 4, 4]}\ntime: {end: 0.01}\n";
  expect_error(base, "empty key in override path", 1, 1, {"=1"});
  expect_error(base, "empty key in override path", 1, 6, {"grid..cells=1"});
  expect_error(base, "invalid UTF-8 text", 1, 0, {"output.directory=a\xfe"});
  expect_error(base, "expected key.path=value", 2, 1, {"time.end=1", "nonsense"});
  EXPECT_EQ(parse(base, {"time=", "time.steps=0"}).steps, 0);
}

TEST(EdgeYaml, HugeFilesAreNotDecks) {
  TempDir tmp;
  const std::string path = write_deck(tmp.path(), "# " + std::string(2 << 20, 'x') + "\n");
  try {
    load_deck(path);
    FAIL() << "a 2 MiB file was accepted";
  } catch (const DeckError& e) {
    EXPECT_EQ(std::string(e.what()), path +
                                         ": cannot read deck: larger than 1 MiB (is this "
                                         "the right file?)");
  }
}

// ---- Runs: steps 0, memory preflight, overwrite refusal ------------------------------------

TEST(EdgeRun, ZeroStepsWritesTheInitialStateAndSucceeds) {
  TempDir tmp;
  const fs::path out = tmp.path() / "out";
  RunOptions opts;
  opts.deck = write_deck(tmp.path(), kHead3D +
                                         "grid: {cells: [4, 4, 4]}\ntime: {steps: 0}\n"
                                         "initial: {type: uniform, value: 3}\n"
                                         "execution: {backend: cpu}\n");
  // In-process runs have no MPI session: no HDF5 writer here (tests/e2e/steps_zero.sh
  // checks the HDF5 file of the binary).
  opts.overrides = {"output.directory=" + out.string(), "output.formats=[]"};
  opts.quiet = true;
  ASSERT_EQ(run_command(opts), exit_code::kSuccess);
  std::ifstream in(out / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["steps"], 0);
  EXPECT_EQ(summary["final_time"], 0.0);
  EXPECT_EQ(summary["total_heat"], 3.0);  // 64 cells of volume 1/64 at 3
}

TEST(EdgePreflight, EstimateCountsFieldsAndStaging) {
  Config cfg = parse(kHead3D + "grid: {cells: [8, 8, 8]}\ntime: {steps: 1}\n");
  // Padded 10^3 doubles = 8000 B per field; u, v; staging = padded + interior (512 * 8).
  MemoryEstimate e = estimate_memory(cfg, 1, /*on_device=*/false);
  EXPECT_DOUBLE_EQ(e.host_bytes, 2 * 8000 + 8000 + 4096);
  EXPECT_EQ(e.device_bytes, 0);
  e = estimate_memory(cfg, 1, /*on_device=*/true);
  EXPECT_DOUBLE_EQ(e.device_bytes, 2 * 8000);
  EXPECT_DOUBLE_EQ(e.host_bytes, 8000 + 4096);
  cfg.precision = Precision::Float;
  EXPECT_DOUBLE_EQ(estimate_memory(cfg, 1, false).host_bytes, (2 * 8000 + 8000 + 4096) / 2);
  // Eight ranks: 4^3 blocks, padded 6^3; temporal blocking (time_block: auto) may take deep
  // halos: u and v once more.
  cfg.precision = Precision::Double;
  cfg.formats.clear();
  EXPECT_DOUBLE_EQ(estimate_memory(cfg, 8, false).host_bytes, 5 * 216 * 8 + 64 * 8);
  // Three ranks along z of 8x8x12: 8x8x4 blocks, padded 10x10x6, and every field with
  // margins 4 planes deep on each side of the middle block (multigrid's deep smoothing,
  // solvers/parallel/margins.hpp): 14 planes. Two ranks along z of 8^3: one side each.
  cfg.cells = {8, 8, 12};
  cfg.decomposition = {1, 1, 3};
  EXPECT_DOUBLE_EQ(estimate_memory(cfg, 3, false).host_bytes, 4 * 1400 * 8 + 600 * 8 + 256 * 8);
  cfg.cells = {8, 8, 8};
  cfg.decomposition = {1, 1, 2};
  EXPECT_DOUBLE_EQ(estimate_memory(cfg, 2, false).host_bytes, 4 * 1000 * 8 + 600 * 8 + 256 * 8);
}

// Each solver's own fields come from the registry (solvers/registry.hpp): the multigrid
// hierarchy, mg-cg's CG vectors, implicit heat's right side, the Anderson history.
TEST(EdgePreflight, EstimateCountsEachSolversFields) {
  const Config heat = parse(kHead3D + "grid: {cells: [8, 8, 8]}\ntime: {steps: 1}\n");
  const double base = estimate_memory(heat, 1, true).device_bytes;
  EXPECT_DOUBLE_EQ(base, 2 * 8000);
  const auto fields = [&](const std::string& extra) {
    const Config c = parse("name: t\ngrid: {cells: [8, 8, 8]}\n" + extra);
    return estimate_memory(c, 1, true).device_bytes / 8000;
  };
  // Multigrid on 8^3: level 0 r and scratch (2), levels 4^3 and 2^3 (6^3 and 4^3 padded) of 4
  // fields, the coarsest's CG vectors (3), the cycles' residual (1), a zero source (1).
  const double mg = fields(
      "problem: {type: poisson, dimensions: 3}\nsolver: {method: multigrid}\n"
      "boundary: {all: {type: dirichlet, value: 0.0}}\n");
  EXPECT_NEAR(mg, 2 + 2 + 4 * 216.0 / 1000 + 4 * 64.0 / 1000 + 3 * 64.0 / 1000 + 1 + 1, 1e-12);
  const double cg = fields(
      "problem: {type: poisson, dimensions: 3}\nsolver: {method: mg-cg}\n"
      "boundary: {all: {type: dirichlet, value: 0.0}}\n");
  EXPECT_NEAR(cg - mg, 3, 1e-12);  // r, z, p, q instead of r
  const double implicit = fields(
      "problem: {type: heat, dimensions: 3}\ntime: {steps: 1, dt: 0.001, scheme: "
      "implicit-euler}\nsolver: {method: multigrid}\n");
  EXPECT_NEAR(implicit, 2 + 1 + 2 + 4 * 216.0 / 1000 + 4 * 64.0 / 1000 + 3 * 64.0 / 1000 + 1,
              1e-12);
  const double anderson = fields(
      "problem: {type: poisson, dimensions: 3}\nsolver: {method: anderson, anderson: {depth: "
      "4}}\n");
  EXPECT_NEAR(anderson, 2 + 2 * 4 + 2, 1e-12);
}

// Full multigrid's interpolation scratch (mg::cubic_chunks) is device memory of its own: on
// 64^3 the finest interpolation from 32^3 runs as one chunk of 32 planes x 32 rows, (32 + 4) x
// (32 + 4 + 64) x 64 doubles; at 512^3 chunks of 64 planes x 256 rows, (64 + 4) x (256 + 4 +
// 512) x 512. FMG's correction is one field more; on the host only that field.
TEST(EdgePreflight, FullMultigridScratchIsDeviceMemory) {
  const auto deck = [](int n, const std::string& cycle) {
    const std::string c = std::to_string(n);
    return parse("name: t\nproblem: {type: poisson, dimensions: 3}\ngrid: {cells: [" + c + ", " +
                 c + ", " + c + "]}\nsolver: {method: multigrid, multigrid: {cycle: " + cycle +
                 "}}\nboundary: {all: {type: dirichlet, value: 0.0}}\n");
  };
  const auto device = [&](int n, const std::string& cycle) {
    return estimate_memory(deck(n, cycle), 1, true).device_bytes;
  };
  const double field64 = 66.0 * 66 * 66 * 8, field512 = 514.0 * 514 * 514 * 8;
  EXPECT_DOUBLE_EQ(device(64, "fmg") - device(64, "v"), field64 + 36.0 * 100 * 64 * 8);
  EXPECT_DOUBLE_EQ(device(512, "fmg") - device(512, "v"), field512 + 68.0 * 772 * 512 * 8);
  const MemoryEstimate on = estimate_memory(deck(64, "fmg"), 1, true);
  EXPECT_NE(on.device_detail.find("interpolation scratch"), std::string::npos) << on.device_detail;
  EXPECT_DOUBLE_EQ(estimate_memory(deck(64, "fmg"), 1, false).host_bytes -
                       estimate_memory(deck(64, "v"), 1, false).host_bytes,
                   field64);
  // Decomposed, the pass is a V-cycle: no interpolation.
  EXPECT_DOUBLE_EQ(estimate_memory(deck(64, "fmg"), 8, true).device_bytes -
                       estimate_memory(deck(64, "v"), 8, true).device_bytes,
                   34.0 * 34 * 34 * 8);
}

TEST(EdgePreflight, AndersonHistoryIsCounted) {
  const Config cfg = parse(
      "name: p\nproblem: {type: poisson, dimensions: 2}\ngrid: {cells: [8, 8]}\n"
      "source: {type: uniform, value: 1}\nsolver: {method: anderson, anderson: {depth: 5}}\n");
  // u, v, f + 2m+2 = 12 history fields, padded 10^2 doubles; Gram (m+1)^2 doubles.
  const MemoryEstimate e = estimate_memory(cfg, 1, false);
  EXPECT_DOUBLE_EQ(e.host_bytes, 15 * 800 + 800 + 64 * 8 + 36 * 8);
  EXPECT_NE(e.host_detail.find("Anderson history 2m+2 = 12"), std::string::npos) << e.host_detail;
}

TEST(EdgePreflight, AbsurdAndersonDepthDoesNotOverflow) {
  const Config cfg = parse(
      "name: p\nproblem: {type: poisson, dimensions: 2}\ngrid: {cells: [8, 8]}\n"
      "solver: {method: anderson, anderson: {depth: 2147483647}}\n");
  const MemoryEstimate e = estimate_memory(cfg, 1, false);
  EXPECT_GT(e.host_bytes, 1e18);  // ~3.7e19 (Gram matrix) + history
  EXPECT_NE(memory_preflight(cfg, 1), "");
}

TEST(EdgePreflight, HostMemoryIsKnownHere) {
  const auto avail = host_memory_available();
  ASSERT_TRUE(avail.has_value());
  EXPECT_GT(*avail, 0u);
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(8.0 * (1ull << 40)), "8.00 TiB");
}

TEST(EdgePreflight, RunThatCannotFitStopsBeforeAnything) {
  TempDir tmp;
  const fs::path out = tmp.path() / "out";
  RunOptions opts;
  // 20000^3 cells: under the 2^48-value cap of the deck, ~128 TiB for u and v alone.
  opts.deck = write_deck(tmp.path(), kHead3D +
                                         "grid: {cells: [8, 8, 8]}\ntime: {steps: 1}\n"
                                         "execution: {backend: cpu}\n");
  opts.overrides = {"grid.cells=[20000,20000,20000]", "output.directory=" + out.string()};
  opts.quiet = true;
  ::testing::internal::CaptureStderr();
  const int rc = run_command(opts);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, exit_code::kRuntimeError);
  EXPECT_NE(err.find("error: not enough memory: this run needs about"), std::string::npos) << err;
  EXPECT_NE(err.find("TiB of host memory"), std::string::npos) << err;
  EXPECT_NE(err.find("is available (MemAvailable"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out)) << "the output directory was created";
}

TEST(EdgePreflight, SkipVariableDisablesTheCheck) {
  const Config cfg = parse(kHead3D +
                           "grid: {cells: [20000, 20000, 20000]}\ntime: {steps: 1}\n"
                           "execution: {backend: cpu}\n");
  EXPECT_NE(memory_preflight(cfg, 1), "");
  ::setenv("HEATSOLVE_SKIP_MEMORY_CHECK", "1", 1);
  EXPECT_EQ(memory_preflight(cfg, 1), "");
  ::unsetenv("HEATSOLVE_SKIP_MEMORY_CHECK");
}

TEST(EdgeRun, PreviousResultsAreNotOverwritten) {
  TempDir tmp;
  const fs::path out = tmp.path() / "out";
  RunOptions opts;
  opts.deck = write_deck(tmp.path(), kHead3D +
                                         "grid: {cells: [4, 4, 4]}\ntime: {steps: 2}\n"
                                         "execution: {backend: cpu}\n");
  opts.overrides = {"output.directory=" + out.string(), "output.formats=[]"};
  opts.quiet = true;
  ASSERT_EQ(run_command(opts), exit_code::kSuccess);
  const auto stamp = fs::last_write_time(out / "summary.json");
  const std::string before = test_support::file_bytes(out / "summary.json");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_command(opts), exit_code::kInputError);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("already holds results of a previous run"), std::string::npos) << err;
  EXPECT_NE(err.find("--overwrite"), std::string::npos) << err;
  EXPECT_EQ(fs::last_write_time(out / "summary.json"), stamp);
  EXPECT_EQ(test_support::file_bytes(out / "summary.json"), before);
  opts.overwrite = true;
  EXPECT_EQ(run_command(opts), exit_code::kSuccess);
}

}  // namespace
}  // namespace heatsolve
