// The stencil variants of the CUDA ladder in one table: the deck's vocabulary
// (`execution.kernel`) and what each variant can do. Names, parsing, the list of every variant
// and the capability flags derive from kStencilVariants; the kernel side and the benchmarks
// refer to rows by enum and never spell a name. Adding a variant is one row here (in enum
// order), its kernel and launcher (kernels/stencil/cuda/), and its compiled shapes in
// core/stencil_policies.hpp (docs/kernels.md, "Adding a variant").
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string_view>

namespace heatsolve {

// Docs/kernels.md describes each rung; the comments say only what sets it apart.
enum class StencilVariant {
  Naive,           // one thread per point, every neighbour from global memory
  Shared,          // tile + halo in shared memory, halo loaded under per-thread branches
  NonDivergent,    // the same tile, halo loaded by whole warps
  Streaming25D,    // x-y blocks stream along z: two shared slices
  SingleSlice25D,  // one shared slice, running partial sums
  Register25D,     // no shared memory: shuffles, register rows, a prefetch ring
  Async25D,        // the prefetch ring in shared memory, filled by cp.async
  Tma25D,          // tall tiles staged by bulk copies, boundary rules on the stages (sm_90)
};

// One variant. Built with the named setters below, so that a row reads as what it says.
struct StencilVariantRow {
  StencilVariant variant = StencilVariant::Naive;
  const char* name = "";  // execution.kernel, `heatsolve bench --variants`, summary.json
  // Blocks of bx x by threads walk a chunk of the stream axis (z in 3D, y in 2D); the third
  // entry of execution.block is then the planes per block (0 = chosen from the grid).
  bool streaming = false;
  // Applies the Dirichlet/Neumann face rules itself (naive: per neighbour read; 2.5d-tma: on
  // its staged tiles), so a sweep needs no ghost-fill pass (Backend::stencil_with_boundary).
  bool rules_in_sweep = false;
  // Lowest CUDA compute capability (10 major + minor) that can run it; 0 = any.
  int min_compute_capability = 0;

  constexpr StencilVariantRow streams() const {
    StencilVariantRow r = *this;
    r.streaming = true;
    return r;
  }
  constexpr StencilVariantRow applies_rules_in_sweep() const {
    StencilVariantRow r = *this;
    r.rules_in_sweep = true;
    return r;
  }
  constexpr StencilVariantRow needs_compute_capability(int cc) const {
    StencilVariantRow r = *this;
    r.min_compute_capability = cc;
    return r;
  }
};

constexpr StencilVariantRow variant_row(StencilVariant v, const char* name) {
  StencilVariantRow r;
  r.variant = v;
  r.name = name;
  return r;
}

// In enum order (checked below). The names are the deck's: changing one breaks decks.
inline constexpr StencilVariantRow kStencilVariants[] = {
    variant_row(StencilVariant::Naive, "naive").applies_rules_in_sweep(),
    variant_row(StencilVariant::Shared, "shared"),
    variant_row(StencilVariant::NonDivergent, "nondivergent"),
    variant_row(StencilVariant::Streaming25D, "2.5d").streams(),
    variant_row(StencilVariant::SingleSlice25D, "2.5d-single-slice").streams(),
    variant_row(StencilVariant::Register25D, "2.5d-register").streams(),
    variant_row(StencilVariant::Async25D, "2.5d-async").streams(),
    variant_row(StencilVariant::Tma25D, "2.5d-tma")
        .streams()
        .applies_rules_in_sweep()
        .needs_compute_capability(90),
};

inline constexpr std::size_t kStencilVariantCount = std::size(kStencilVariants);

namespace detail {
constexpr bool variant_rows_in_enum_order() {
  for (std::size_t i = 0; i < kStencilVariantCount; ++i)
    if (static_cast<std::size_t>(kStencilVariants[i].variant) != i) return false;
  return true;
}
}  // namespace detail
static_assert(detail::variant_rows_in_enum_order(),
              "kStencilVariants: one row per StencilVariant, in enum order");

// The deck's two kernel names that are not a variant: `auto` times every variant on the grid
// and keeps the fastest; `temporal` runs fused multi-step passes (single steps: `auto`).
inline constexpr char kKernelAuto[] = "auto";
inline constexpr char kKernelTemporal[] = "temporal";

constexpr const StencilVariantRow& stencil_variant_row(StencilVariant v) {
  return kStencilVariants[static_cast<std::size_t>(v)];
}
constexpr const char* stencil_variant_name(StencilVariant v) {
  return stencil_variant_row(v).name;
}

// Every variant, in ladder order.
inline constexpr std::array<StencilVariant, kStencilVariantCount> kAllStencilVariants = [] {
  std::array<StencilVariant, kStencilVariantCount> all{};
  for (std::size_t i = 0; i < kStencilVariantCount; ++i) all[i] = kStencilVariants[i].variant;
  return all;
}();

// A variant's name to its enum; std::nullopt for unknown names, "auto" and "temporal".
inline std::optional<StencilVariant> parse_stencil_variant(std::string_view name) {
  for (const StencilVariantRow& r : kStencilVariants)
    if (name == r.name) return r.variant;
  return std::nullopt;
}

}  // namespace heatsolve
