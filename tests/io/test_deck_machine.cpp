// Deck keys whose validity depends on the build or the machine: output.compression (zfp needs
// the ZFP library in the build) and execution.backend: cuda (needs a usable device here), each
// refused at its node (file:line:column) when unavailable.
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

DeckFeatures features(bool zfp) {
  DeckFeatures f;
  f.zfp = zfp;
  return f;
}

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

TEST(DeckCompression, DefaultIsNone) {
  const Config cfg = parse_deck(kBase, "test.yaml", {}, features(true));
  EXPECT_EQ(cfg.compression.type, CompressionType::None);
}

TEST(DeckCompression, DeflateWithItsLevel) {
  Config cfg = parse_deck(kBase + "output: {compression: {type: deflate, level: 7}}\n", "test.yaml",
                          {}, features(false));
  EXPECT_EQ(cfg.compression.type, CompressionType::Deflate);
  EXPECT_EQ(cfg.compression.level, 7);
  cfg = parse_deck(kBase + "output: {compression: {type: deflate}}\n", "test.yaml", {},
                   features(false));
  EXPECT_EQ(cfg.compression.level, 1);  // default: fastest
  cfg = parse_deck(kBase, "test.yaml", {"output.compression={type: none}"}, features(false));
  EXPECT_EQ(cfg.compression.type, CompressionType::None);
}

TEST(DeckCompression, ZfpWithItsTolerance) {
  const Config cfg = parse_deck(kBase + "output:\n  compression: {type: zfp, tolerance: 1.0e-6}\n",
                                "test.yaml", {}, features(true));
  EXPECT_EQ(cfg.compression.type, CompressionType::Zfp);
  EXPECT_EQ(cfg.compression.tolerance, 1e-6);
}

TEST(DeckCompression, BadValuesAtTheirNode) {
  const DeckFeatures f = features(true);
  expect_error(kBase + "output: {compression: {type: deflate, level: 10}}\n", f,
               "output.compression.level: 10 is too large (at most 9)", 5, 46);
  expect_error(kBase + "output: {compression: {type: deflate, level: 0}}\n", f,
               "output.compression.level: expected a positive integer", 5, 46);
  expect_error(kBase + "output: {compression: {type: zfp}}\n", f,
               "missing required key 'output.compression.tolerance'", 5, 23);
  expect_error(kBase + "output: {compression: {type: zfp, tolerance: -1}}\n", f,
               "output.compression.tolerance: must be positive", 5, 46);
  expect_error(kBase + "output: {compression: {type: zfp, tolerance: 1e-3, level: 3}}\n", f,
               "unknown key 'level' in 'output.compression'", 5, 52);
  expect_error(kBase + "output: {compression: {type: deflate, tolerance: 1e-3}}\n", f,
               "unknown key 'tolerance' in 'output.compression'", 5, 39);
  expect_error(kBase + "output: {compression: {type: lz4}}\n", f,
               "output.compression.type: unknown value 'lz4'; valid values: none, deflate, zfp", 5,
               30);
  expect_error(kBase + "output: {compression: deflate}\n", f,
               "output.compression: expected a mapping", 5, 23);
}

TEST(DeckCompression, ZfpRefusedByABuildWithoutIt) {
  expect_error(kBase + "output:\n  compression: {type: zfp, tolerance: 1.0e-6}\n", features(false),
               "output.compression.type: zfp is not available in this heatsolve", 6, 23);
  // From the command line: the override's position and column.
  expect_error(kBase, features(false), "zfp is not available", 1, 27,
               {"output.compression={type: zfp, tolerance: 1e-3}"});
}

TEST(DeckCompression, ThisBuildSaysWhetherItHasZfp) {
#ifdef HEATSOLVE_HAVE_ZFP
  EXPECT_TRUE(DeckFeatures::of_this_build().zfp);
#else
  EXPECT_FALSE(DeckFeatures::of_this_build().zfp);
#endif
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
