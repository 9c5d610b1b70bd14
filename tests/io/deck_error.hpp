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

}  // namespace heatsolve::test_support
