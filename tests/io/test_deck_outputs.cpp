// The output keys of an engineer's run: output.diagnostics, output.probes and output.interval
// (docs/deck.md "output"): their Config, the time step that lands on every output time, the
// columns of diagnostics.csv, and file:line:col for every bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "io/checkpoint.hpp"
#include "io/deck.hpp"
#include "io/diagnostics_writer.hpp"
#include "tests/io/deck_text.hpp"

namespace heatsolve {
namespace {

using deck_text::parse;
using deck_text::parse_error;
using test_support::expect_deck_error_at;

// Four lines; tests append sections from line 5 on. dt: auto = 0.9 / (2 * 3 * 64) = 0.00234375.
std::string heat(const std::string& time = "{end: 0.1}") {
  return "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\ntime: " + time +
         "\n";
}
const std::string kPoisson =
    "name: t\nproblem: {type: poisson, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\ntime:\n";

// ---- output.diagnostics -----------------------------------------------------------------------

TEST(DeckDiagnostics, EveryIntervalOrBoth) {
  const Config every = parse(heat() + "output: {diagnostics: {every: 10}}\n");
  EXPECT_TRUE(every.diagnostics.enabled());
  EXPECT_EQ(every.diagnostics.every, 10);
  EXPECT_EQ(every.diagnostics.interval, 0.0);
  EXPECT_TRUE(every.diagnostics.due(20));
  EXPECT_FALSE(every.diagnostics.due(21));
  EXPECT_EQ(every.steps, 43);  // `every` keeps the time resolution: ceil(0.1 / 0.00234375)
  EXPECT_EQ(every.dt, 0.1 / 43);

  const Config both = parse(heat() + "output: {diagnostics: {every: 7, interval: 0.01}}\n");
  EXPECT_EQ(both.diagnostics.every, 7);
  EXPECT_EQ(both.diagnostics.interval, 0.01);
  // dt = 0.01 / ceil(0.01 / 0.00234375) = 0.002: 5 steps per interval, 50 to the end.
  EXPECT_DOUBLE_EQ(both.dt, 0.002);
  EXPECT_EQ(both.diagnostics.interval_steps, 5);
  EXPECT_EQ(both.steps, 50);
  EXPECT_TRUE(both.diagnostics.due(14));
  EXPECT_TRUE(both.diagnostics.due(15));
  EXPECT_FALSE(both.diagnostics.due(16));

  // Poisson: iterations only.
  const Config poisson = parse(kPoisson + "output: {diagnostics: {every: 3}}\n");
  EXPECT_EQ(poisson.diagnostics.every, 3);
  EXPECT_FALSE(parse(heat()).diagnostics.enabled());
}

TEST(DeckDiagnostics, BadKeysAreReportedAtThem) {
  expect_deck_error_at(parse_error(heat() + "output: {diagnostics: {}}\n"), 5, 23,
                       "output.diagnostics: give 'every'");
  expect_deck_error_at(parse_error(heat() + "output: {diagnostics: {every: 0}}\n"), 5, 31,
                       "expected a positive integer");
  expect_deck_error_at(parse_error(heat() + "output: {diagnostics: {interval: -1}}\n"), 5, 34,
                       "must be positive");
  expect_deck_error_at(parse_error(heat() + "output: {diagnostics: {evry: 5}}\n"), 5, 24,
                       "did you mean 'every'");
  expect_deck_error_at(parse_error(heat() + "output: {diagnostics: 5}\n"), 5, 23,
                       "expected a mapping");
  expect_deck_error_at(parse_error(kPoisson + "output: {diagnostics: {interval: 0.1}}\n"), 5, 34,
                       "a steady problem has no simulated time; use output.diagnostics.every");
}

// ---- output.interval: the step lands on every output time -------------------------------------

TEST(DeckInterval, TimeStepDividesTheIntervalAndTheEnd) {
  const Config cfg = parse(heat() + "output: {interval: 0.01, every: 3}\n");
  EXPECT_EQ(cfg.output_interval, 0.01);
  EXPECT_EQ(cfg.output_every, 3);  // both apply
  EXPECT_DOUBLE_EQ(cfg.dt, 0.002);
  EXPECT_LE(cfg.dt, 0.9 * stable_dt(cfg.grid(), 1.0));
  EXPECT_EQ(cfg.output_interval_steps, 5);
  EXPECT_EQ(cfg.steps, 50);
  EXPECT_EQ(cfg.end_time, 0.1);
  // Every output time is a step's time to rounding.
  for (int k = 1; k <= 10; ++k)
    EXPECT_NEAR(double(k * cfg.output_interval_steps) * cfg.dt, k * 0.01, 1e-15);

  // Intervals and end without a common divisor of their own: 0.3 and 1 share 0.1.
  const Config odd = parse(heat("{end: 1.0, dt: 0.05, scheme: implicit-euler}") +
                           "output: {interval: 0.3, diagnostics: {interval: 0.7}}\n");
  EXPECT_DOUBLE_EQ(odd.dt, 0.05);
  EXPECT_EQ(odd.steps, 20);
  EXPECT_EQ(odd.output_interval_steps, 6);
  EXPECT_EQ(odd.diagnostics.interval_steps, 14);
  // An interval below dt makes dt the interval.
  const Config fine =
      parse(heat("{end: 1.0, dt: 0.05, scheme: crank-nicolson}") + "output: {interval: 0.02}\n");
  EXPECT_DOUBLE_EQ(fine.dt, 0.02);
  EXPECT_EQ(fine.output_interval_steps, 1);
  EXPECT_EQ(fine.steps, 50);
  // time.steps: the steps stay, the end follows dt.
  const Config steps = parse(heat("{steps: 40}") + "output: {interval: 0.01}\n");
  EXPECT_DOUBLE_EQ(steps.dt, 0.002);
  EXPECT_EQ(steps.steps, 40);
  EXPECT_DOUBLE_EQ(steps.end_time, 0.08);
  EXPECT_EQ(steps.output_interval_steps, 5);
  // Without an interval nothing changes.
  const Config plain = parse(heat() + "output: {every: 3}\n");
  EXPECT_EQ(plain.output_interval_steps, 0);
  EXPECT_EQ(plain.steps, 43);  // ceil(0.1 / 0.00234375)
}

TEST(DeckInterval, IntervalsChooseDtSoARestartMustKeepThem) {
  const auto hash = [](const std::string& output) {
    return checkpoint_deck_hash(parse(heat() + "output: " + output + "\n"));
  };
  // Output keys that do not change dt may change on restart ...
  EXPECT_EQ(hash("{every: 3}"), hash("{every: 5, diagnostics: {every: 2}, directory: x}"));
  // ... the intervals may not: they choose dt.
  EXPECT_NE(hash("{interval: 0.01}"), hash("{interval: 0.02}"));
  EXPECT_NE(hash("{diagnostics: {interval: 0.01}}"), hash("{diagnostics: {interval: 0.02}}"));
  EXPECT_NE(hash("{interval: 0.01}"), hash("{every: 3}"));
  EXPECT_EQ(hash("{interval: 0.01, every: 3}"), hash("{interval: 0.01, every: 9}"));
  EXPECT_NE(checkpoint_deck_json(parse(heat() + "output: {interval: 0.01}\n")).find("interval"),
            std::string::npos);
}

TEST(DeckInterval, BadIntervalsAreReportedAtThem) {
  expect_deck_error_at(parse_error(heat() + "output: {interval: 0}\n"), 5, 20, "must be positive");
  expect_deck_error_at(parse_error(heat() + "output: {interval: x}\n"), 5, 20, "expected a number");
  expect_deck_error_at(parse_error(kPoisson + "output: {interval: 1}\n"), 5, 20,
                       "a steady problem has no simulated time; use output.every");
  // 1/pi is no decimal multiple of anything 0.3 is.
  expect_deck_error_at(
      parse_error(heat("{end: 0.3183098861837907}") + "output: {interval: 0.03}\n"), 4, 13,
      "time.end: 0.31831 and output.interval = 0.03 have no common time step");
}

// ---- output.probes -----------------------------------------------------------------------------

TEST(DeckProbes, CellsHoldingThePoints) {
  const Config cfg = parse(
      "name: t\nproblem: {type: heat, dimensions: 3}\n"
      "grid: {cells: [8, 4, 2], length: [1, 1, 1], origin: [1, 0, 0]}\n"
      "time: {end: 0.001}\n"
      "output:\n"
      "  diagnostics: {every: 1}\n"
      "  probes:\n"
      "    - {name: centre, point: [1.5, 0.5, 0.5]}\n"
      "    - {name: corner_0, point: [1, 0, 0]}\n"
      "    - {name: far, point: [2, 1, 1]}\n"
      "    - {name: Mid_2, point: [1.3, 0.3, 0.2]}\n");
  ASSERT_EQ(cfg.probes.size(), 4u);
  EXPECT_EQ(cfg.probes[0].name, "centre");
  EXPECT_EQ(cfg.probes[0].point, (std::array<double, 3>{1.5, 0.5, 0.5}));
  EXPECT_EQ(cfg.probes[0].cell, (std::array<int, 3>{4, 2, 1}));  // a face: the upper cell
  EXPECT_EQ(cfg.probes[1].cell, (std::array<int, 3>{0, 0, 0}));
  EXPECT_EQ(cfg.probes[2].cell, (std::array<int, 3>{7, 3, 1}));  // the upper faces: last cells
  EXPECT_EQ(cfg.probes[3].cell, (std::array<int, 3>{2, 1, 0}));
  const Config two = parse(
      "name: t\nproblem: {type: heat, dimensions: 2}\ngrid: {cells: [8, 8]}\ntime: {end: 0.001}\n"
      "output: {diagnostics: {every: 2}, probes: [{name: p, point: [0.9, 0.1]}]}\n");
  EXPECT_EQ(two.probes[0].cell, (std::array<int, 3>{7, 0, 0}));
}

TEST(DeckProbes, BadProbesAreReportedAtThem) {
  const std::string pre = heat() + "output:\n  diagnostics: {every: 1}\n  probes:\n";
  // line 8 is the first entry: "    - {name: ..., point: [...]}"
  const auto error = [&](const std::string& entries) { return parse_error(pre + entries); };
  expect_deck_error_at(
      error("    - {name: a, point: [0.5, 0.5, 0.5]}\n    - {name: a, point: [0.1, 0.1, "
            "0.1]}\n"),
      9, 14, "the name 'a' is already output.probes[0]");
  expect_deck_error_at(error("    - {name: a-b, point: [0.5, 0.5, 0.5]}\n"), 8, 14,
                       "may contain only letters, digits and '_'");
  expect_deck_error_at(
      error("    - {name: a, point: [0.5, 1.5, 0.5]}\n"), 8, 30,
      "output.probes[0].point[1]: 1.5 lies outside the domain [0, 1] on the y axis");
  expect_deck_error_at(error("    - {name: a, point: [0.5, 0.5]}\n"), 8, 24, "expected 3 entries");
  expect_deck_error_at(error("    - {name: a}\n"), 8, 7,
                       "missing required key 'output.probes[0].point'");
  expect_deck_error_at(error("    - {point: [0.5, 0.5, 0.5]}\n"), 8, 7,
                       "missing required key 'output.probes[0].name'");
  expect_deck_error_at(error("    - {name: a, point: [0.5, 0.5, 0.5], at: 1}\n"), 8, 41,
                       "unknown key 'at' in 'output.probes[0]'");
  expect_deck_error_at(error("    - 5\n"), 8, 7, "output.probes[0]: expected a mapping");
  expect_deck_error_at(parse_error(heat() + "output: {probes: {name: a}}\n"), 5, 18,
                       "expected a list");
  expect_deck_error_at(
      parse_error(heat() + "output: {probes: [{name: a, point: [0.5, 0.5, 0.5]}]}\n"), 5, 10,
      "probes are columns of diagnostics.csv: give output.diagnostics");
}

// ---- diagnostics.csv columns --------------------------------------------------------------------

TEST(DiagnosticsColumns, FromTheDeck) {
  const Config cfg = parse(heat() +
                           "boundary: {x-: {type: periodic}, x+: {type: periodic}}\n"
                           "output: {diagnostics: {every: 1}, probes: [{name: c, point: [0.5, "
                           "0.5, 0.5]}, {name: d, point: [0.1, 0.1, 0.1]}]}\n");
  EXPECT_EQ(diagnostics_columns(cfg),
            (std::vector<std::string>{"step", "time", "min", "max", "mean", "heat", "flow_y-",
                                      "flow_y+", "flow_z-", "flow_z+", "source_power", "balance",
                                      "probe_c", "probe_d"}));
  const Config poisson = parse(
      "name: t\nproblem: {type: poisson, dimensions: 2}\ngrid: {cells: [8, 8]}\n"
      "output: {diagnostics: {every: 5}}\n");
  EXPECT_EQ(diagnostics_columns(poisson),
            (std::vector<std::string>{"iteration", "min", "max", "mean", "flow_x-", "flow_x+",
                                      "flow_y-", "flow_y+", "source_power", "balance"}));
  EXPECT_EQ(diagnostics_header({"step", "time", "min"}), "step,time,min\n");
}

}  // namespace
}  // namespace heatsolve
