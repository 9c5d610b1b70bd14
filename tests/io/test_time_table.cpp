// Time-varying inputs (core/time_table.hpp; docs/deck.md "Time-varying inputs"): TimeTable's
// semantics (knots reproduced exactly, linear between, held outside), and the deck's tables for
// boundary values, fluxes, ambients and source strengths, with file:line:col for bad ones.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/time_table.hpp"
#include "io/deck.hpp"
#include "tests/io/deck_text.hpp"

namespace heatsolve {
namespace {

using deck_text::parse;
using deck_text::parse_error;

// Four lines; tests append sections from line 5 on.
const std::string kBase =
    "name: t\n"
    "problem: {type: heat, dimensions: 3}\n"
    "grid: {cells: [8, 8, 8]}\n"
    "time: {end: 0.01}\n";

const std::string kPoisson =
    "name: t\n"
    "problem: {type: poisson, dimensions: 3}\n"
    "grid: {cells: [8, 8, 8]}\n"
    "time:\n";

void expect_at(const DeckError& e, int line, int column, const std::string& text) {
  test_support::expect_deck_error_at(e, line, column, text, "test.yaml");
}

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

// ---- Deck tables ----------------------------------------------------------------------------

TEST(DeckTables, BoundaryValueFluxAndAmbientTakeTables) {
  const Config cfg = parse(kBase +
                           "material: {conductivity: 2.0, density: 1.0, specific_heat: 1.0}\n"
                           "boundary:\n"
                           "  x-: {type: dirichlet, value: {table: [[0, 300], [10, 400]]}}\n"
                           "  x+: {type: neumann, flux: {table: [[1, 0], [2, 5]]}}\n"
                           "  y-: {type: convective, h: 10, ambient: {table: [[0, 20], [1, 30]]}}\n"
                           "  y+: {type: heat_flux, value: {table: [[0.5, 100]]}}\n"
                           "  z-: {type: dirichlet, value: 7}\n");
  // FaceBC holds the value at t = 0; the tables the rest.
  EXPECT_EQ(cfg.boundary[0].value, 300.0);
  EXPECT_EQ(cfg.boundary[1].value, 0.0);
  EXPECT_EQ(cfg.boundary[2].value, 20.0);
  EXPECT_EQ(cfg.boundary[2].coeff, 10.0);
  EXPECT_EQ(cfg.boundary[3].value, 100.0);
  EXPECT_EQ(cfg.boundary[4].value, 7.0);
  ASSERT_TRUE(cfg.boundary_tables[0] && cfg.boundary_tables[1] && cfg.boundary_tables[2] &&
              cfg.boundary_tables[3]);
  EXPECT_FALSE(cfg.boundary_tables[4]);  // a number: no table
  EXPECT_FALSE(cfg.boundary_tables[5]);  // a default face
  EXPECT_TRUE(cfg.boundary_varies());
  EXPECT_TRUE(cfg.boundary_tables[3]->constant());  // one knot
  const BoundaryFaces at5 = cfg.boundary_at(5.0);
  EXPECT_EQ(at5[0].value, 350.0);
  EXPECT_EQ(at5[1].value, 5.0);
  EXPECT_EQ(at5[2].value, 30.0);
  EXPECT_EQ(at5[2].coeff, 10.0);
  EXPECT_EQ(at5[3].value, 100.0);
  EXPECT_EQ(at5[4].value, 7.0);
  EXPECT_EQ(cfg.boundary_at(0.0)[0].value, 300.0);
  EXPECT_EQ(cfg.boundary_at(1.5)[1].value, 2.5);
  EXPECT_EQ(at5[0].type, BoundaryType::Dirichlet);
}

TEST(DeckTables, AllCopiesTheTableToEveryFace) {
  const Config cfg = parse(kBase +
                           "boundary: {all: {type: dirichlet, value: {table: [[0, 1], "
                           "[1, 2]]}}, x+: {type: dirichlet, value: 0}}\n");
  for (int f : {0, 2, 3, 4, 5}) {
    ASSERT_TRUE(cfg.boundary_tables[f]) << f;
    EXPECT_EQ(cfg.boundary_at(0.5)[f].value, 1.5);
  }
  EXPECT_FALSE(cfg.boundary_tables[1]);
}

TEST(DeckTables, SourceStrengthTakesTables) {
  const Config cfg =
      parse(kBase +
            "source: {type: gaussian, amplitude: {table: [[0, 0], [1, 10]]}, center: [0.5, 0.5, "
            "0.5], width: 0.1, value: {table: [[0, 1], [1, 3]]}}\n");
  ASSERT_EQ(cfg.sources.size(), 1u);
  const Shape& s = cfg.sources[0];
  EXPECT_EQ(s.amplitude, 0.0);
  EXPECT_EQ(s.value, 1.0);
  EXPECT_TRUE(s.varies());
  EXPECT_TRUE(cfg.sources_vary());
  EXPECT_EQ(s.at(0.5).amplitude, 5.0);
  EXPECT_EQ(s.at(0.5).value, 2.0);
  EXPECT_EQ(s.at(7.0).amplitude, 10.0);
  EXPECT_EQ(cfg.source.amplitude_table, s.amplitude_table);
  for (const char* src : {"{type: uniform, value: {table: [[0, 1], [2, 3]]}}",
                          "{type: box, value: {table: [[0, 1], [2, 3]]}, lower: [0, 0, 0], upper: "
                          "[0.5, 0.5, 0.5]}",
                          "{type: sine, amplitude: {table: [[0, 1], [2, 3]]}}"}) {
    const Config c = parse(kBase + "source: " + src + "\n");
    ASSERT_EQ(c.sources.size(), 1u) << src;
    const Shape& t = c.sources[0];
    EXPECT_TRUE(t.varies()) << src;
    EXPECT_EQ(t.type == ShapeType::Sine ? t.amplitude_at(1.0) : t.value_at(1.0), 2.0) << src;
  }
}

TEST(DeckTables, ConstantDecksGetNoTables) {
  const Config cfg = parse(kBase +
                           "boundary: {all: {type: dirichlet, value: 1}}\n"
                           "source: {type: uniform, value: 2}\n");
  for (const auto& t : cfg.boundary_tables) EXPECT_FALSE(t);
  EXPECT_FALSE(cfg.boundary_varies());
  ASSERT_EQ(cfg.sources.size(), 1u);
  EXPECT_FALSE(cfg.sources[0].value_table);
  EXPECT_FALSE(cfg.sources_vary());
  EXPECT_EQ(cfg.boundary_at(123.0)[0].value, 1.0);
}

TEST(DeckTables, BadTablesAreReportedAtTheirNode) {
  // line 5: "boundary: {x-: {type: dirichlet, value: {table: ...}}}"
  const std::string pre = "boundary: {x-: {type: dirichlet, value: ";
  const auto at = [&](const std::string& value) {
    return parse_error(kBase + pre + value + "}}\n");
  };
  const int c = int(pre.size()) + 1;  // the value's column
  expect_at(at("{table: [[0, 1], [0, 2]]}"), 5, c + 18, "times must increase strictly");
  expect_at(at("{table: [[0, 1], [-1, 2]]}"), 5, c + 18, "times must not be negative");
  expect_at(at("{table: [[0, 1], [1, .nan]]}"), 5, c + 21, "finite number");
  expect_at(at("{table: [[0, 1], [1]]}"), 5, c + 17, "expected 2 entries");
  expect_at(at("{table: []}"), 5, c + 8, "at least one [t, value] pair");
  expect_at(at("{table: 3}"), 5, c + 8, "expected a list");
  expect_at(at("{tabel: [[0, 1]]}"), 5, c + 1, "did you mean 'table'");
  expect_at(at("{}"), 5, c, "missing required key 'boundary.x-.value.table'");
  expect_at(at("[[0, 1]]"), 5, c, "a number or a table");
  expect_at(at("{table: [[0, \"1\"]]}"), 5, c + 13, "expected a number");
}

TEST(DeckTables, SteadyProblemsRefuseTables) {
  const DeckError e = parse_error(
      kPoisson + "boundary: {x-: {type: dirichlet, value: {table: [[0, 1], [1, 2]]}}}\n");
  expect_at(e, 5, 41, "a steady problem has no time");
  const DeckError s = parse_error(kPoisson +
                                  "boundary: {all: {type: dirichlet}}\n"
                                  "source: {type: uniform, value: {table: [[0, 1], [1, 2]]}}\n");
  expect_at(s, 6, 32, "a steady problem has no time");
}

TEST(DeckTables, InitialFieldTakesNoTable) {
  const DeckError e = parse_error(kBase + "initial: {type: uniform, value: {table: [[0, 1]]}}\n");
  expect_at(e, 5, 33, "expected a number");
}

}  // namespace
}  // namespace heatsolve
