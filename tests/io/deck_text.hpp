// The deck texts and parse helpers shared by the deck tests (test_deck.cpp,
// test_deck_errors.cpp, test_deck_outputs.cpp, test_time_table.cpp).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/deck.hpp"
#include "tests/io/deck_error.hpp"

namespace heatsolve::deck_text {

// Four lines; tests append sections from line 5 on.
inline const std::string kBase =
    "name: t\n"
    "problem: {type: heat, dimensions: 3}\n"
    "grid: {cells: [8, 8, 8]}\n"
    "time: {end: 0.01}\n";

inline const std::string kBase2D =
    "name: t\n"
    "problem: {type: heat, dimensions: 2}\n"
    "grid: {cells: [8, 8]}\n"
    "time: {end: 0.01}\n";

inline Config parse(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return parse_deck(text, "test.yaml", overrides);
}

// Parses `text`, expecting a DeckError; returns it.
inline DeckError parse_error(const std::string& text,
                             const std::vector<std::string>& overrides = {}) {
  return test_support::deck_error_of(text, [&] { parse(text, overrides); });
}

}  // namespace heatsolve::deck_text
