// Host-side entry points of the CUDA backend (compiled by the host compiler too).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/backend.hpp"

namespace heatsolve {

// Number of usable CUDA devices (0 when the driver or device is missing; never throws).
int cuda_device_count();

template <typename T>
std::unique_ptr<Backend<T>> make_cuda_backend(const BackendOptions& opts);

// The CUDA stencil ladder (docs/kernels.md). Names are what decks and `heatsolve bench` use.
enum class StencilVariant {
  Naive,           // "naive"
  Shared,          // "shared"
  NonDivergent,    // "nondivergent"
  Streaming25D,    // "2.5d"               (two shared slices, old/new swap)
  SingleSlice25D,  // "2.5d-single-slice"  (one shared slice, running partial sums)
  Register25D,     // "2.5d-register"      (ours: no shared memory, y register blocking, prefetch)
  Async25D,        // "2.5d-async"         (ours: cp.async ring of planes in shared memory)
  Tma25D,          // "2.5d-tma"           (ours: tall tiles staged by bulk copies, sm_90)
};

inline constexpr std::array<StencilVariant, 8> kAllStencilVariants{
    StencilVariant::Naive,        StencilVariant::Shared,         StencilVariant::NonDivergent,
    StencilVariant::Streaming25D, StencilVariant::SingleSlice25D, StencilVariant::Register25D,
    StencilVariant::Async25D,     StencilVariant::Tma25D};

const char* stencil_variant_name(StencilVariant v);
// Parses a variant name; std::nullopt for unknown names (and for "auto").
std::optional<StencilVariant> parse_stencil_variant(const std::string& name);
// Whether the current CUDA device can run a variant (2.5d-tma needs compute capability 9.0).
bool stencil_variant_supported(StencilVariant v);

// Block shapes [bx, by, bz] a variant is compiled for, in this dimension (the first is the
// default). For the streaming variants bz is the number of z planes (2D: y rows) a block
// walks, 0 = chosen from the grid; for 2.5d-register and 2.5d-async by counts threads, each
// owning several rows (StencilShape::ry).
std::vector<std::array<int, 3>> stencil_block_shapes(StencilVariant v, int dims);

}  // namespace heatsolve
