// Sources in the deck: `source` as one mapping or a list of terms (the same Config for every
// existing deck).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "io/deck.hpp"

namespace heatsolve {
namespace {

namespace fs = std::filesystem;

Config parse(const std::string& text, const std::string& source = "test.yaml") {
  return parse_deck(text, source);
}

DeckError parse_error(const std::string& text, const std::string& source = "test.yaml") {
  try {
    parse(text, source);
  } catch (const DeckError& e) {
    return e;
  }
  ADD_FAILURE() << "deck was accepted:\n" << text;
  return DeckError("", 0, 0, "");
}

void expect_at(const DeckError& e, int line, int column, const std::string& text) {
  EXPECT_EQ(e.line(), line) << e.what();
  EXPECT_EQ(e.column(), column) << e.what();
  EXPECT_NE(e.message().find(text), std::string::npos) << e.what();
}

// Four lines each; tests append sections from line 5 on.
const std::string kHeat =
    "name: t\n"
    "problem: {type: heat, dimensions: 3}\n"
    "grid: {cells: [8, 8, 8]}\n"
    "time: {end: 0.01}\n";
const std::string kPoisson =
    "name: t\n"
    "problem: {type: poisson, dimensions: 3}\n"
    "grid: {cells: [8, 8, 8]}\n"
    "solver: {method: multigrid}\n";

bool same_shape(const Shape& a, const Shape& b) {
  return a.type == b.type && a.value == b.value && a.amplitude == b.amplitude &&
         a.width == b.width && a.center == b.center && a.lower == b.lower && a.upper == b.upper &&
         a.value_table == b.value_table && a.amplitude_table == b.amplitude_table;
}

// ---- source: one mapping or a list ----------------------------------------------------------

TEST(DeckSources, OneMappingIsSourceAndTheOnlyTerm) {
  const Config cfg = parse(kHeat +
                           "source: {type: gaussian, amplitude: 2, center: [0.5, 0.5, "
                           "0.5], width: 0.1}\n");
  EXPECT_EQ(cfg.source.type, ShapeType::Gaussian);
  ASSERT_EQ(cfg.sources.size(), 1u);
  EXPECT_TRUE(same_shape(cfg.sources[0], cfg.source));
  EXPECT_TRUE(parse(kHeat + "source: {type: none}\n").sources.empty());
  EXPECT_TRUE(parse(kHeat).sources.empty());
  EXPECT_EQ(parse(kHeat).source.type, ShapeType::None);
}

TEST(DeckSources, AListIsSummedTerms) {
  const Config cfg = parse(kHeat +
                           "source:\n"
                           "  - {type: uniform, value: 1.5}\n"
                           "  - {type: box, value: 2, lower: [0, 0, 0], upper: [0.5, 0.5, 0.5]}\n"
                           "  - {type: sine, amplitude: {table: [[0, 0], [1, 1]]}}\n");
  ASSERT_EQ(cfg.sources.size(), 3u);
  EXPECT_EQ(cfg.sources[0].type, ShapeType::Uniform);
  EXPECT_EQ(cfg.sources[1].type, ShapeType::Box);
  EXPECT_EQ(cfg.sources[2].type, ShapeType::Sine);
  EXPECT_TRUE(same_shape(cfg.source, cfg.sources[0]));  // the first, for single-source code
  const Config none = parse(kHeat + "source: []\n");
  EXPECT_TRUE(none.sources.empty());
  EXPECT_EQ(none.source.type, ShapeType::None);
}

TEST(DeckSources, BadListEntriesAreReportedAtThem) {
  // line 6 is the second entry.
  expect_at(parse_error(kHeat + "source:\n  - {type: uniform, value: 1}\n  - {type: none}\n"), 7,
            12, "source[1].type: unknown value 'none'");
  expect_at(parse_error(kHeat + "source:\n  - {type: uniform, value: 1}\n  - 3\n"), 7, 5,
            "source[1]: expected a mapping");
  expect_at(parse_error(kHeat + "source:\n  - {type: box, value: 1, lower: [2, 2, 2], upper: [3, "
                                "3, 3]}\n"),
            6, 34, "source[0]: the box");
  expect_at(parse_error(kHeat + "source:\n  - {type: uniform, valu: 1}\n"), 6, 21,
            "unknown key 'valu' in 'source[0]'");
}

TEST(DeckSources, EveryShippedDeckKeepsItsSource) {
  const fs::path inputs = fs::path(HEATSOLVE_SOURCE_DIR) / "inputs";
  int count = 0;
  for (const auto& entry : fs::directory_iterator(inputs)) {
    if (entry.path().extension() != ".yaml") continue;
    DeckFeatures all;
    all.catalyst = true;
    const Config cfg = load_deck(entry.path().string(), {}, all);
    if (cfg.source.type == ShapeType::None) {
      EXPECT_TRUE(cfg.sources.empty()) << entry.path();
    } else {
      ASSERT_EQ(cfg.sources.size(), 1u) << entry.path();
      EXPECT_TRUE(same_shape(cfg.sources[0], cfg.source)) << entry.path();
      EXPECT_FALSE(cfg.source.value_table || cfg.source.amplitude_table) << entry.path();
    }
    for (const auto& t : cfg.boundary_tables) EXPECT_FALSE(t) << entry.path();
    ++count;
  }
  EXPECT_GE(count, 6);
}

}  // namespace
}  // namespace heatsolve
