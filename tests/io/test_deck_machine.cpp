// Deck keys whose validity depends on the machine: execution.backend: cuda (needs a usable
// device here), refused at its node (file:line:column) when unavailable.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/deck.hpp"

namespace heatsolve {
namespace {

// Four lines; tests append sections from line 5 on.
const std::string kBase =
    "name: t\n"
    "problem: {type: heat, dimensions: 3}\n"
    "grid: {cells: [8, 8, 8]}\n"
    "time: {end: 0.01}\n";

// Parses `text`, expecting a DeckError at `line`:`column` whose message contains `what`.
void expect_error(const std::string& text, const DeckFeatures& f, const std::string& what, int line,
                  int column, const std::vector<std::string>& overrides = {}) {
  try {
    parse_deck(text, "test.yaml", overrides, f);
    ADD_FAILURE() << "accepted:\n" << text;
  } catch (const DeckError& e) {
    EXPECT_NE(e.message().find(what), std::string::npos) << e.what();
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.column(), column) << e.what();
  }
}

// ---- execution.backend: cuda where no device can be used ------------------------------------

DeckFeatures without_device(int* asked) {
  DeckFeatures f;
  f.cuda_device_problem = [asked] {
    ++*asked;
    return std::string("no usable CUDA device on this machine");
  };
  return f;
}

TEST(DeckCudaDevice, RefusedAtTheBackendKeyWhenNoDevice) {
  int asked = 0;
  expect_error(kBase + "execution:\n  precision: float\n  backend: cuda\n", without_device(&asked),
               "execution.backend: cuda: no usable CUDA device on this machine", 7, 12);
  EXPECT_EQ(asked, 1);
  expect_error(kBase, without_device(&asked), "no usable CUDA device", 1, 19,
               {"execution.backend=cuda"});
}

TEST(DeckCudaDevice, OnlyDecksNamingCudaAsk) {
  int asked = 0;
  for (const char* backend : {"auto", "cpu"}) {
    const Config cfg = parse_deck(kBase + "execution: {backend: " + backend + "}\n", "test.yaml",
                                  {}, without_device(&asked));
    EXPECT_NE(cfg.backend, BackendKind::Cuda);
  }
  parse_deck(kBase, "test.yaml", {}, without_device(&asked));
  EXPECT_EQ(asked, 0);
}

TEST(DeckCudaDevice, AcceptedWhereADeviceIsUsableOrNotAsked) {
  DeckFeatures f;
  f.cuda_device_problem = [] { return std::string(); };
  EXPECT_EQ(parse_deck(kBase + "execution: {backend: cuda}\n", "test.yaml", {}, f).backend,
            BackendKind::Cuda);
  // of_this_build() alone checks the deck, not the machine (tests, bench decks).
  EXPECT_EQ(parse_deck(kBase + "execution: {backend: cuda}\n", "test.yaml").backend,
            BackendKind::Cuda);
}

}  // namespace
}  // namespace heatsolve
