// The stencil variant table (core/stencil_variants.hpp) is the one list of variant names: the
// names round-trip, the deck's vocabulary is exactly "auto", the table's names and "temporal",
// and the deck validator accepts exactly those. The policy tables the CUDA launchers instantiate
// (core/stencil_policies.hpp, kernels/stencil/temporal_policies.hpp) cover every variant in 2D
// and 3D and both precisions, with one row per compiled instance. Runs without a GPU.
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>
#include <vector>

#include "core/execution.hpp"
#include "core/stencil_policies.hpp"
#include "io/deck.hpp"
#include "kernels/stencil/temporal_policies.hpp"

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
  for (const StencilVariantRow& r : kStencilVariants)
    EXPECT_GE(r.min_compute_capability, 0) << r.name;
  // The face rules in the sweep: 2.5d-tma on its staged tiles, naive per neighbour (the small
  // grids' sweep, so a multigrid coarse level's sweep is one launch); the others fill ghosts.
  for (const StencilVariantRow& r : kStencilVariants)
    EXPECT_EQ(r.rules_in_sweep,
              r.variant == StencilVariant::Tma25D || r.variant == StencilVariant::Naive)
        << r.name;
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

// Every variant is compiled in 2D and 3D for both precisions; its first row is the default
// (execution.block auto), and every row can be asked for by its own block.
TEST(StencilPolicies, EveryVariantHasShapesInEveryDimensionAndPrecision) {
  for (StencilVariant v : kAllStencilVariants)
    for (int dims : {2, 3})
      for (int bytes : {4, 8}) {
        SCOPED_TRACE(std::string(stencil_variant_name(v)) + " " + std::to_string(dims) + "D " +
                     std::to_string(bytes));
        const std::vector<StencilShape> shapes = compiled_stencil_shapes(v, dims, bytes);
        ASSERT_FALSE(shapes.empty());
        const auto chosen = resolve_stencil_block(v, dims, bytes, {0, 0, 0});
        ASSERT_TRUE(chosen.has_value());
        EXPECT_TRUE(chosen->same_instance(shapes.front(), false));
        for (const StencilShape& s : shapes) {
          const auto r = resolve_stencil_block(v, dims, bytes, {s.bx, s.by, s.bz == 0 ? 7 : s.bz});
          ASSERT_TRUE(r.has_value()) << s.str();
          EXPECT_EQ(r->bx, s.bx);
          EXPECT_EQ(r->by, s.by);
        }
      }
}

TEST(StencilPolicies, RowsAreDistinctInstancesOfTheirVariant) {
  for (std::size_t i = 0; i < kStencilPolicyCount; ++i) {
    const StencilPolicy& p = kStencilPolicies[i];
    const StencilVariantRow& row = stencil_variant_row(p.variant);
    SCOPED_TRACE(std::string(row.name) + " " + p.shape.str());
    EXPECT_TRUE(p.dims == 2 || p.dims == 3);
    EXPECT_TRUE(p.value_bytes == 0 || p.value_bytes == 4 || p.value_bytes == 8);
    EXPECT_GT(p.shape.bx, 0);
    EXPECT_GT(p.shape.by, 0);
    // The streaming variants' bz is the planes per block, a launch argument.
    if (row.streaming) {
      EXPECT_EQ(p.shape.bz, 0);
    } else {
      EXPECT_TRUE(p.shape.bz > 0 && (p.dims == 3 || p.shape.bz == 1));
    }
    for (std::size_t j = 0; j < i; ++j) {
      const StencilPolicy& q = kStencilPolicies[j];
      const bool shared_precision =
          p.value_bytes == 0 || q.value_bytes == 0 || p.value_bytes == q.value_bytes;
      EXPECT_FALSE(q.variant == p.variant && q.dims == p.dims && shared_precision &&
                   q.shape.same_instance(p.shape, row.streaming))
          << "rows " << j << " and " << i << " are the same instance";
    }
  }
}

TEST(StencilPolicies, UncompiledBlockIsExplained) {
  const std::array<int, 3> block{48, 3, 1};
  EXPECT_FALSE(resolve_stencil_block(StencilVariant::Naive, 3, 4, block).has_value());
  const std::string why = stencil_block_error(StencilVariant::Naive, 3, 4, block);
  EXPECT_NE(why.find("48x3x1"), std::string::npos) << why;
  EXPECT_NE(why.find("'naive' in 3D float"), std::string::npos) << why;
  EXPECT_NE(why.find("32x4x4"), std::string::npos) << why;  // the compiled ones are listed
  // A streaming variant takes any planes per block with a compiled bx x by.
  EXPECT_TRUE(resolve_stencil_block(StencilVariant::Tma25D, 3, 4, {256, 1, 64}).has_value());
  EXPECT_EQ(resolve_stencil_block(StencilVariant::Tma25D, 3, 4, {256, 1, 64})->bz, 64);
  EXPECT_FALSE(resolve_stencil_block(StencilVariant::Tma25D, 3, 8, {512, 1, 64}).has_value());
}

TEST(TemporalPolicies, EveryDimensionAndPrecisionHasPassesAndRowsAreDistinct) {
  using cuda::kTemporalPolicies;
  for (int dims : {2, 3})
    for (int bytes : {4, 8}) {
      std::set<int> ks;
      for (const cuda::TemporalPolicy& p : kTemporalPolicies)
        if (p.dims == dims && p.compiled_for(bytes)) ks.insert(p.shape.k);
      EXPECT_FALSE(ks.empty()) << dims << "D " << bytes;
      EXPECT_TRUE(ks.count(2) && ks.count(4) && ks.count(8)) << dims << "D " << bytes;
    }
  for (std::size_t i = 0; i < cuda::kTemporalPolicyCount; ++i)
    for (std::size_t j = 0; j < i; ++j) {
      const cuda::TemporalPolicy &p = kTemporalPolicies[i], &q = kTemporalPolicies[j];
      const bool shared_precision =
          p.value_bytes == 0 || q.value_bytes == 0 || p.value_bytes == q.value_bytes;
      EXPECT_FALSE(p.dims == q.dims && shared_precision && p.shape.same_instance(q.shape))
          << p.shape.str();
    }
}

// norm_blocks (__launch_bounds__ of a row's residual-measuring instance) must leave each thread
// registers enough for its stage rings (2 K RY VX values, 8 bytes each in double) within an
// SM's 64 Ki registers and 2048 threads; 0 leaves the choice to ptxas.
TEST(TemporalPolicies, NormBlocksFitAnSM) {
  int bounded = 0;  // rows that set norm_blocks: at least the multigrid passes' double rows
  for (const cuda::TemporalPolicy& p : cuda::kTemporalPolicies) {
    if (p.norm_blocks == 0) continue;
    ++bounded;
    const int threads = 32 * p.shape.by * p.norm_blocks;
    EXPECT_GT(p.norm_blocks, 0) << p.shape.str();  // no negative bound either
    EXPECT_LE(threads, 2048) << p.shape.str();
    const int registers = 65536 / threads;
    const int ring_words = 2 * p.shape.k * p.shape.ry * p.shape.vx * (p.value_bytes == 4 ? 1 : 2);
    EXPECT_GE(registers, ring_words + 64) << p.shape.str();
  }
  EXPECT_GT(bounded, 0) << "no row sets norm_blocks: the loop above checked nothing";
}

}  // namespace
}  // namespace heatsolve
