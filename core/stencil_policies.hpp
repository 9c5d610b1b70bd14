// The compiled tile shapes of the CUDA stencil ladder as one table of named policies. The
// CUDA launcher (kernels/stencil/cuda/stencil_launch.cu) instantiates one kernel per row and
// dispatches to it; the deck validator (io/deck.cpp) checks `execution.block` against the same
// rows without any CUDA header; `heatsolve bench` lists them. Plain C++.
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "core/stencil_variants.hpp"

namespace heatsolve {

// A compiled tile shape (docs/kernels.md, "shape words"). bx, by, bz: thread-block shape; for
// the streaming variants the block is bx x by and bz is the planes of the stream axis a block
// walks (a launch argument, not compiled: 0 = chosen from the grid). ry: rows per thread
// (2.5d-register, 2.5d-async, 2.5d-tma in 3D; 1 elsewhere). pd: planes prefetched ahead
// (2.5d-register; 0 elsewhere). vx: columns per thread (2.5d-register: 2 = vector
// loads/stores; 1 elsewhere). mb: minimum resident blocks per SM in __launch_bounds__ (a
// register cap; 0 = none). st: stages of the shared-memory ring (2.5d-async, 2.5d-tma; 0
// elsewhere). cb: bytes per cp.async where both addresses allow it (2.5d-async: 4, 8, 16; 0
// elsewhere).
struct StencilShape {
  int bx = 0, by = 0, bz = 0, ry = 1, pd = 0, vx = 1, mb = 0, st = 0, cb = 0;

  // "32x4x4", "64x4x0/ry4/pd2", "64x4x0/ry2/mb8/st8/cb16" (`heatsolve bench`, errors).
  std::string str() const {
    std::string s = std::to_string(bx) + 'x' + std::to_string(by) + 'x' + std::to_string(bz);
    const auto word = [&s](const char* w, int v) { s += std::string("/") + w + std::to_string(v); };
    if (ry != 1) word("ry", ry);
    if (pd != 0) word("pd", pd);
    if (vx != 1) word("vx", vx);
    if (mb != 0) word("mb", mb);
    if (st != 0) word("st", st);
    if (cb != 0) word("cb", cb);
    return s;
  }
  // Whether `o` is this compiled instance: every compiled field equal (the planes per block of
  // a streaming variant are a launch argument).
  constexpr bool same_instance(const StencilShape& o, bool streaming) const {
    return bx == o.bx && by == o.by && (streaming || bz == o.bz) && ry == o.ry && pd == o.pd &&
           vx == o.vx && mb == o.mb && st == o.st && cb == o.cb;
  }
};

// One compiled instance: a variant in 2 or 3 dimensions with a shape, for float, double or both.
// Built with the named setters, so that each number in the table says what it is:
//   policy(StencilVariant::Tma25D, 3).threads(256, 1).rows(32).stages(4).min_blocks(1).float_only()
struct StencilPolicy {
  StencilVariant variant = StencilVariant::Naive;
  int dims = 3;
  int value_bytes = 0;  // 0: float and double; 4 / 8: only that sizeof(T)
  StencilShape shape;

  constexpr bool compiled_for(int bytes) const { return value_bytes == 0 || value_bytes == bytes; }
  // The __launch_bounds__ minimum of the kernel (mb = 0: no cap, i.e. 1).
  constexpr int launch_min_blocks() const { return shape.mb > 0 ? shape.mb : 1; }
  // Whether this row is the instance a launch of (v, dims, sizeof(T) = bytes, s) runs.
  constexpr bool runs(StencilVariant v, int d, int bytes, const StencilShape& s) const {
    return variant == v && dims == d && compiled_for(bytes) &&
           shape.same_instance(s, stencil_variant_row(v).streaming);
  }

  // Threads per block (bz: non-streaming variants only).
  constexpr StencilPolicy threads(int x, int y, int z = 0) const {
    return with(&StencilShape::bx, x).with(&StencilShape::by, y).with(&StencilShape::bz, z);
  }
  constexpr StencilPolicy rows(int per_thread) const { return with(&StencilShape::ry, per_thread); }
  constexpr StencilPolicy prefetch(int planes) const { return with(&StencilShape::pd, planes); }
  constexpr StencilPolicy columns(int per_thread) const {
    return with(&StencilShape::vx, per_thread);
  }
  constexpr StencilPolicy min_blocks(int per_sm) const { return with(&StencilShape::mb, per_sm); }
  constexpr StencilPolicy stages(int ring) const { return with(&StencilShape::st, ring); }
  constexpr StencilPolicy copy_bytes(int bytes) const { return with(&StencilShape::cb, bytes); }
  constexpr StencilPolicy float_only() const { return only(4); }
  constexpr StencilPolicy double_only() const { return only(8); }

 private:
  constexpr StencilPolicy with(int StencilShape::*field, int value) const {
    StencilPolicy p = *this;
    p.shape.*field = value;
    return p;
  }
  constexpr StencilPolicy only(int bytes) const {
    StencilPolicy p = *this;
    p.value_bytes = bytes;
    return p;
  }
};

constexpr StencilPolicy policy(StencilVariant v, int dims) {
  StencilPolicy p;
  p.variant = v;
  p.dims = dims;
  return p;
}

namespace stencil_policy_rows {
using V = StencilVariant;

// Every compiled instance. The first row per (variant, dims, precision) is that variant's
// default shape; the order after it is the order `heatsolve bench --all-shapes` times them.
inline constexpr StencilPolicy kRows[] = {
    // naive
    policy(V::Naive, 3).threads(32, 4, 4),
    policy(V::Naive, 3).threads(32, 8, 4),
    policy(V::Naive, 3).threads(64, 4, 2),
    policy(V::Naive, 3).threads(8, 8, 8),
    policy(V::Naive, 2).threads(32, 8, 1),
    policy(V::Naive, 2).threads(64, 4, 1),
    policy(V::Naive, 2).threads(32, 16, 1),
    // shared
    policy(V::Shared, 3).threads(32, 4, 4),
    policy(V::Shared, 3).threads(32, 8, 4),
    policy(V::Shared, 3).threads(8, 8, 8),
    policy(V::Shared, 2).threads(32, 8, 1),
    policy(V::Shared, 2).threads(32, 16, 1),
    policy(V::Shared, 2).threads(64, 8, 1),
    // nondivergent
    policy(V::NonDivergent, 3).threads(32, 4, 4),
    policy(V::NonDivergent, 3).threads(32, 8, 4),
    policy(V::NonDivergent, 3).threads(8, 8, 8),
    policy(V::NonDivergent, 2).threads(32, 8, 1),
    policy(V::NonDivergent, 2).threads(32, 16, 1),
    policy(V::NonDivergent, 2).threads(64, 8, 1),
    // 2.5d (two slices)
    policy(V::Streaming25D, 3).threads(32, 16),
    policy(V::Streaming25D, 3).threads(32, 8),
    policy(V::Streaming25D, 3).threads(64, 8),
    policy(V::Streaming25D, 2).threads(128, 1),
    policy(V::Streaming25D, 2).threads(256, 1),
    policy(V::Streaming25D, 2).threads(512, 1),
    // 2.5d-single-slice
    policy(V::SingleSlice25D, 3).threads(32, 8),
    policy(V::SingleSlice25D, 3).threads(32, 16),
    policy(V::SingleSlice25D, 3).threads(64, 8),
    policy(V::SingleSlice25D, 2).threads(128, 1),
    policy(V::SingleSlice25D, 2).threads(256, 1),
    policy(V::SingleSlice25D, 2).threads(512, 1),
    // 2.5d-register (ours). Defaults: float 64x4 ry4 pd2 capped at 3 blocks/SM (80
    // registers); double 128x2 ry4 pd3 capped at 2 blocks/SM; the measured best on the H200,
    // docs/performance.md.
    policy(V::Register25D, 3).threads(64, 4).rows(4).prefetch(2).min_blocks(3).float_only(),
    policy(V::Register25D, 3).threads(128, 2).rows(4).prefetch(3).min_blocks(2),
    policy(V::Register25D, 3).threads(64, 4).rows(4).prefetch(2).columns(2),
    policy(V::Register25D, 3).threads(32, 8).rows(4).prefetch(2).columns(2),
    policy(V::Register25D, 3).threads(64, 4).rows(2).prefetch(4).columns(2).float_only(),
    policy(V::Register25D, 3).threads(64, 4).rows(4).prefetch(2).min_blocks(4).float_only(),
    policy(V::Register25D, 3).threads(64, 4).rows(4).prefetch(2),
    policy(V::Register25D, 3).threads(32, 4).rows(4).prefetch(2),
    policy(V::Register25D, 3).threads(32, 8).rows(2).prefetch(2),
    policy(V::Register25D, 3).threads(128, 2).rows(4).prefetch(2),
    policy(V::Register25D, 3).threads(64, 4).rows(2).prefetch(3),
    policy(V::Register25D, 3).threads(64, 2).rows(8).prefetch(1),
    policy(V::Register25D, 2).threads(256, 1).prefetch(6).columns(2).float_only(),
    policy(V::Register25D, 2).threads(512, 1).prefetch(4).columns(2).float_only(),
    policy(V::Register25D, 2).threads(512, 1).prefetch(6),
    policy(V::Register25D, 2).threads(1024, 1).prefetch(4),
    policy(V::Register25D, 2).threads(512, 1).prefetch(8),
    policy(V::Register25D, 2).threads(256, 1).prefetch(4),
    // 2.5d-async (ours). Defaults, ordered by the H200 bench of docs/performance.md: 3D float
    // 256x2 ry2 = 256x4 tiles, 8 stages of 16-byte copies at 4 blocks/SM of 512 threads; 3D
    // double 64x4 ry2, 6 stages of 8-byte copies; 2D 512-wide segments.
    policy(V::Async25D, 3)
        .threads(256, 2)
        .rows(2)
        .stages(8)
        .copy_bytes(16)
        .min_blocks(4)
        .float_only(),
    policy(V::Async25D, 3)
        .threads(128, 2)
        .rows(2)
        .stages(8)
        .copy_bytes(16)
        .min_blocks(8)
        .float_only(),
    policy(V::Async25D, 3)
        .threads(64, 4)
        .rows(2)
        .stages(8)
        .copy_bytes(16)
        .min_blocks(8)
        .float_only(),
    policy(V::Async25D, 3)
        .threads(64, 4)
        .rows(2)
        .stages(6)
        .copy_bytes(8)
        .min_blocks(5)
        .double_only(),
    policy(V::Async25D, 3)
        .threads(64, 4)
        .rows(2)
        .stages(6)
        .copy_bytes(16)
        .min_blocks(6)
        .double_only(),
    policy(V::Async25D, 3)
        .threads(32, 8)
        .rows(2)
        .stages(8)
        .copy_bytes(16)
        .min_blocks(8)
        .float_only(),
    policy(V::Async25D, 3)
        .threads(32, 8)
        .rows(1)
        .stages(12)
        .copy_bytes(16)
        .min_blocks(8)
        .float_only(),
    policy(V::Async25D, 3)
        .threads(64, 8)
        .rows(1)
        .stages(16)
        .copy_bytes(16)
        .min_blocks(4)
        .float_only(),
    policy(V::Async25D, 3)
        .threads(64, 4)
        .rows(2)
        .stages(4)
        .copy_bytes(16)
        .min_blocks(8)
        .float_only(),
    policy(V::Async25D, 3)
        .threads(64, 4)
        .rows(2)
        .stages(8)
        .copy_bytes(8)
        .min_blocks(8)
        .float_only(),
    policy(V::Async25D, 3)
        .threads(64, 4)
        .rows(2)
        .stages(8)
        .copy_bytes(4)
        .min_blocks(6)
        .float_only(),
    policy(V::Async25D, 3).threads(64, 4).rows(2).stages(6).copy_bytes(16).float_only(),
    policy(V::Async25D, 3)
        .threads(32, 8)
        .rows(1)
        .stages(8)
        .copy_bytes(16)
        .min_blocks(8)
        .double_only(),
    // 512 threads: 128x8 tiles (less halo per output than 128x4, but slower)
    policy(V::Async25D, 3)
        .threads(128, 4)
        .rows(2)
        .stages(8)
        .copy_bytes(16)
        .min_blocks(4)
        .float_only(),
    // 2D: one x row segment per stage, so more stages for the same bytes in flight
    policy(V::Async25D, 2).threads(512, 1).stages(16).copy_bytes(16).min_blocks(4).float_only(),
    policy(V::Async25D, 2).threads(256, 1).stages(16).copy_bytes(16).min_blocks(8).float_only(),
    policy(V::Async25D, 2).threads(512, 1).stages(8).copy_bytes(16).min_blocks(4).double_only(),
    policy(V::Async25D, 2).threads(256, 1).stages(10).copy_bytes(16).min_blocks(8).double_only(),
    policy(V::Async25D, 2).threads(256, 1).stages(24).copy_bytes(16).min_blocks(8).float_only(),
    policy(V::Async25D, 2).threads(256, 1).stages(8).copy_bytes(16).min_blocks(8),
    policy(V::Async25D, 2).threads(256, 1).stages(16).copy_bytes(4).min_blocks(8).float_only(),
    // 2.5d-tma (ours): st - 3 planes in flight. Defaults, ordered by the H200 bench of
    // docs/performance.md: 3D float 256 x 32 tiles, 4 stages, 1 block/SM (sustained: the
    // fewest L2 re-reads keep the board under its power cap; 256 x 8 st6 mb3 is as fast only
    // until the board reaches the cap); 3D double 256 x 16, 4 stages, 1 block/SM (faster than
    // 256 x 8 st5 with the boundary rules in the sweep); 2D 512-wide rows.
    policy(V::Tma25D, 3).threads(256, 1).rows(32).stages(4).min_blocks(1).float_only(),
    policy(V::Tma25D, 3).threads(256, 1).rows(8).stages(6).min_blocks(3).float_only(),
    policy(V::Tma25D, 3).threads(512, 1).rows(8).stages(5).min_blocks(2).float_only(),
    policy(V::Tma25D, 3).threads(256, 2).rows(8).stages(5).min_blocks(2).float_only(),
    policy(V::Tma25D, 3).threads(256, 4).rows(4).stages(5).min_blocks(2).float_only(),
    policy(V::Tma25D, 3).threads(512, 1).rows(16).stages(4).min_blocks(1).float_only(),
    policy(V::Tma25D, 3).threads(512, 2).rows(8).stages(5).min_blocks(1).float_only(),
    policy(V::Tma25D, 3).threads(256, 2).rows(8).stages(4).min_blocks(1).double_only(),
    policy(V::Tma25D, 3).threads(256, 1).rows(8).stages(5).min_blocks(2).double_only(),
    policy(V::Tma25D, 3).threads(128, 2).rows(8).stages(5).min_blocks(2).double_only(),
    policy(V::Tma25D, 2).threads(512, 1).stages(16).min_blocks(3).float_only(),
    policy(V::Tma25D, 2).threads(512, 1).stages(12).min_blocks(2),
    policy(V::Tma25D, 2).threads(1024, 1).stages(12).min_blocks(2).float_only(),
};
}  // namespace stencil_policy_rows

inline constexpr const auto& kStencilPolicies = stencil_policy_rows::kRows;
inline constexpr std::size_t kStencilPolicyCount = std::size(stencil_policy_rows::kRows);

// The shapes compiled for variant v in `dims` dimensions for values of `value_bytes` (sizeof(T));
// the first is the default.
inline std::vector<StencilShape> compiled_stencil_shapes(StencilVariant v, int dims,
                                                         int value_bytes) {
  std::vector<StencilShape> out;
  for (const StencilPolicy& p : kStencilPolicies)
    if (p.variant == v && p.dims == dims && p.compiled_for(value_bytes)) out.push_back(p.shape);
  return out;
}

// The shape `execution.block` (BackendOptions::block) asks for: {0, 0, 0} the default; else
// the first compiled shape with that bx and by, and for a streaming variant bz planes per block
// (0 = auto), for the others that bz (2D: 0 or 1). std::nullopt when none is compiled.
inline std::optional<StencilShape> resolve_stencil_block(StencilVariant v, int dims,
                                                         int value_bytes,
                                                         const std::array<int, 3>& block) {
  const std::vector<StencilShape> shapes = compiled_stencil_shapes(v, dims, value_bytes);
  if (shapes.empty()) return std::nullopt;
  if (block[0] == 0 && block[1] == 0 && block[2] == 0) return shapes.front();
  const bool streaming = stencil_variant_row(v).streaming;
  for (const StencilShape& s : shapes) {
    if (s.bx != block[0] || s.by != block[1]) continue;
    if (streaming) {
      if (block[2] < 0) break;
      StencilShape r = s;
      r.bz = block[2];
      return r;
    }
    if (s.bz == block[2] || (dims == 2 && block[2] <= 1)) return s;
  }
  return std::nullopt;
}

// Why resolve_stencil_block found nothing, listing what is compiled (the same text for a deck
// error and for the backend's BackendError).
inline std::string stencil_block_error(StencilVariant v, int dims, int value_bytes,
                                       const std::array<int, 3>& block) {
  const std::string where = std::string("stencil variant '") + stencil_variant_name(v) + "' in " +
                            std::to_string(dims) + "D " + (value_bytes == 4 ? "float" : "double");
  const std::vector<StencilShape> shapes = compiled_stencil_shapes(v, dims, value_bytes);
  if (shapes.empty()) return where + " has no compiled shape";
  std::string list;
  for (const StencilShape& s : shapes) list += (list.empty() ? "" : ", ") + s.str();
  return "block " + std::to_string(block[0]) + "x" + std::to_string(block[1]) + "x" +
         std::to_string(block[2]) + " is not compiled for " + where + " (compiled: " + list +
         (stencil_variant_row(v).streaming ? "; bz = planes per block, 0 = auto" : "") + ")";
}

}  // namespace heatsolve
