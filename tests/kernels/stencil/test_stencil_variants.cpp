// The stencil variant table (core/stencil_variants.hpp) is the one list of variant names: the
// names round-trip, the deck's vocabulary is exactly "auto", the table's names and "temporal",
// and the deck validator accepts exactly those. Runs without a GPU.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/execution.hpp"
#include "io/deck.hpp"

namespace heatsolve {
namespace {

const std::string kDeck =
    "name: t\n"
    "problem: {type: heat, dimensions: 3}\n"
    "grid: {cells: [8, 8, 8]}\n"
    "time: {end: 0.01}\n";

TEST(StencilVariants, NamesRoundTrip) {
  std::set<std::string> seen;
  for (StencilVariant v : kAllStencilVariants) {
    const std::string name = stencil_variant_name(v);
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(seen.insert(name).second) << "duplicate name " << name;
    ASSERT_TRUE(parse_stencil_variant(name).has_value()) << name;
    EXPECT_EQ(*parse_stencil_variant(name), v) << name;
    EXPECT_EQ(stencil_variant_row(v).variant, v);
  }
  EXPECT_EQ(seen.size(), kStencilVariantCount);
  for (const char* other : {kKernelAuto, kKernelTemporal, "", "2.5D", "tma", "naive "})
    EXPECT_FALSE(parse_stencil_variant(other).has_value()) << other;
}

TEST(StencilVariants, KernelNamesAreAutoTheTableAndTemporal) {
  std::vector<std::string> want{kKernelAuto};
  for (const StencilVariantRow& r : kStencilVariants) want.emplace_back(r.name);
  want.emplace_back(kKernelTemporal);
  EXPECT_EQ(kKernelNames, want);
}

TEST(StencilVariants, CapabilityFlags) {
  // Only streaming variants can stage tiles and apply the face rules on them.
  for (const StencilVariantRow& r : kStencilVariants) {
    if (r.rules_in_sweep) EXPECT_TRUE(r.streaming) << r.name;
    EXPECT_GE(r.min_compute_capability, 0) << r.name;
  }
  EXPECT_TRUE(stencil_variant_row(StencilVariant::Tma25D).rules_in_sweep);
  EXPECT_EQ(stencil_variant_row(StencilVariant::Tma25D).min_compute_capability, 90);
  EXPECT_FALSE(stencil_variant_row(StencilVariant::Naive).streaming);
}

TEST(StencilVariants, DeckAcceptsExactlyTheKernelNames) {
  for (const std::string& name : kKernelNames)
    EXPECT_EQ(parse_deck(kDeck + "execution: {kernel: " + name + "}\n", "t.yaml").kernel, name);
  for (const std::string bad : {"2.5D", "tma", "register", "auto-tune", "temporal-memory"}) {
    try {
      parse_deck(kDeck + "execution: {kernel: " + bad + "}\n", "t.yaml");
      ADD_FAILURE() << "accepted kernel '" << bad << "'";
    } catch (const DeckError& e) {
      EXPECT_EQ(e.line(), 5) << e.what();
      EXPECT_NE(std::string(e.what()).find("2.5d-tma"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace heatsolve
