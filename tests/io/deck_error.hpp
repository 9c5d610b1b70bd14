// The DeckError a deck's parse throws, for the tests of bad decks.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "io/deck.hpp"

namespace heatsolve::test_support {

// Calls parse() (which parses `text`), expecting a DeckError, and returns it; a test failure
// and an empty error where the deck was accepted.
template <class Parse>
DeckError deck_error_of(const std::string& text, Parse&& parse) {
  try {
    parse();
  } catch (const DeckError& e) {
    return e;
  }
  ADD_FAILURE() << "deck was accepted:\n" << text;
  return DeckError("", 0, 0, "");
}

// e points at line:column (and names `file`, where given) and its message holds `text`.
inline void expect_deck_error_at(const DeckError& e, int line, int column, const std::string& text,
                                 const std::string& file = "") {
  if (!file.empty()) EXPECT_EQ(e.file(), file) << e.what();
  EXPECT_EQ(e.line(), line) << e.what();
  EXPECT_EQ(e.column(), column) << e.what();
  EXPECT_NE(e.message().find(text), std::string::npos) << e.what();
}

}  // namespace heatsolve::test_support
