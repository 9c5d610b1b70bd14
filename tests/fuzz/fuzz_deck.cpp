// libFuzzer target for the deck parser (io/deck.cpp, io/deck/): any input must either parse into a
// Config or be rejected with a DeckError. Anything else escaping parse_deck (another
// exception type, a sanitizer report, a hang, a leak) is a bug.
//
// Input layout: deck text, optionally followed by a 0x00 byte and `--set` overrides
// separated by further 0x00 bytes ("deck\0grid.cells=[4,4,4]\0time.steps=3").
// Build and run: scripts/fuzz.sh [seconds]; see docs/robustness.md.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "io/deck.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::size_t cut = input.find('\0');
  const std::string deck = input.substr(0, cut);
  std::vector<std::string> overrides;
  while (cut != std::string::npos) {
    const std::size_t next = input.find('\0', cut + 1);
    overrides.push_back(input.substr(cut + 1, next == std::string::npos ? next : next - cut - 1));
    cut = next;
  }
  // Materials by region are checked cell by cell, each region in turn: on grids of at most
  // 2^20 cells (the shipped decks with regions have 2^16) an input of many regions stays
  // within the fuzzer's -timeout under the sanitizers.
  heatsolve::DeckFeatures features = heatsolve::DeckFeatures::of_this_build();
  features.max_region_cells = std::int64_t{1} << 20;
  try {
    const heatsolve::Config cfg = heatsolve::parse_deck(deck, "fuzz.yaml", overrides, features);
    (void)cfg.deck.dump();  // the summary echo must be serialisable too
  } catch (const heatsolve::DeckError& e) {
    // Rejected input: the message must name the source.
    if (std::string(e.what()).rfind(e.file(), 0) != 0) std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "non-DeckError exception escaped parse_deck: %s\n", e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "unknown exception escaped parse_deck\n");
    std::abort();
  }
  return 0;
}
