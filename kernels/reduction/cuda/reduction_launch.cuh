// Host-side launch helpers shared by reduction.cu (flat arrays, ladder) and
// reduction_grid.cu (padded GridDesc fields). Include only from .cu files.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "kernels/backend.hpp"
#include "kernels/cuda/compiled_choice.cuh"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/reduction/cuda/reduction.cuh"
#include "kernels/reduction/cuda/reduction_kernels.cuh"

namespace heatsolve::cuda::detail {

// Resident blocks per SM of a kernel at `block` threads (queried once per instantiation).
template <class Kernel>
int blocks_per_sm(Kernel k, int block) {
  int b = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, k, block, 0));
  return std::max(b, 1);
}

// Accumulator of the modern rung: double for Sum / SumSquares; for MaxAbs the input type (the
// maximum is exact in any precision, and comparing floats avoids float->double conversions).
template <class Op, class T>
using ModernAcc = std::conditional_t<std::is_same_v<Op, MaxAbsOp>, T, double>;

// Compile-time form of a ModernReductionConfig.
template <int BLOCK, int UNROLL, int MAX_BLOCKS, bool FUSED>
struct ModernTuning {
  static_assert(BLOCK % 32 == 0 && BLOCK >= 64 && BLOCK <= 1024, "block: whole warps, <= 1024");
  static_assert(UNROLL >= 1 && MAX_BLOCKS >= 1, "bad modern-rung configuration");
  static constexpr int kBlock = BLOCK, kUnroll = UNROLL, kMaxBlocks = MAX_BLOCKS;
  static constexpr bool kFused = FUSED;
  // Grid of the flat rung: one block per tile up to the cap -- a function of n only, so the
  // result is bitwise the same on every GPU model.
  static int grid(std::size_t nvec) {
    const std::size_t tile = std::size_t(BLOCK) * UNROLL;
    return static_cast<int>(std::clamp<std::size_t>((nvec + tile - 1) / tile, 1, MAX_BLOCKS));
  }
};
template <class T>
using SolverTuning = ModernTuning<modern_config<T>().block, modern_config<T>().unroll,
                                  modern_config<T>().max_blocks, modern_config<T>().fused>;

// Calls f(ModernTuning<...>{}) for the candidate equal to cfg; throws if there is none.
template <class F>
void with_candidate(const ModernReductionConfig& cfg, F&& f) {
  constexpr std::size_t kCount = sizeof(kModernCandidates) / sizeof(kModernCandidates[0]);
  const bool found = with_compiled_index<kCount>(
      [&](std::size_t i) { return kModernCandidates[i] == cfg; },
      [&](auto i) {
        constexpr ModernReductionConfig c = kModernCandidates[decltype(i)::value];
        f(ModernTuning<c.block, c.unroll, c.max_blocks, c.fused>{});
      });
  if (!found) throw std::invalid_argument("not a compiled modern-reduction configuration");
}

// Modern rung over positions [0, n) of loader ld (head scalars, nvec aligned vectors, the rest
// scalars) with explicit scratch: `part` holds Tu::grid(nvec) partials, `done` is a zeroed
// counter (fused form only). The result, converted to OutT, lands in *out.
template <class Tu, class Op, class A, class L, class OutT>
void launch_modern_raw(const L& ld, std::size_t head, std::size_t nvec, std::size_t n, A* part,
                       unsigned* done, OutT* out, cudaStream_t s) {
  const int grid = Tu::grid(nvec);
  reduce_modern_pass1<Tu::kBlock, Tu::kUnroll, Tu::kFused, Op, A, L, OutT>
      <<<grid, Tu::kBlock, 0, s>>>(ld, head, nvec, n, part, done, out);
  CUDA_CHECK_LAUNCH();
  if constexpr (!Tu::kFused) {
    reduce_final<Tu::kBlock, Op, A, OutT><<<1, Tu::kBlock, 0, s>>>(part, grid, out);
    CUDA_CHECK_LAUNCH();
  }
}

// Same, scratch and result in the workspace (result: ws.d_result()).
template <class Tu, class Op, class A, class L>
void launch_modern(const L& ld, std::size_t head, std::size_t nvec, std::size_t n, cudaStream_t s,
                   ReductionWorkspace& ws) {
  ws.reserve(std::size_t(Tu::grid(nvec)) * sizeof(A));
  launch_modern_raw<Tu, Op, A>(ld, head, nvec, n, static_cast<A*>(ws.partials(0)), ws.d_counter(),
                               ws.d_result(), s);
}

// Modern rung over the interior rows of a padded field (see RowGeom): fixed grid of
// min(ceil(items / warps per block), max_blocks) blocks, then the ordered combine.
template <class Tu, class Op, class A, class RL>
void launch_rows(const RL& ld, const RowGeom& geo, cudaStream_t s, ReductionWorkspace& ws) {
  constexpr int B = Tu::kBlock;
  const std::int64_t want = std::max<std::int64_t>((geo.items + B / 32 - 1) / (B / 32), 1);
  const int grid = static_cast<int>(std::min<std::int64_t>(want, Tu::kMaxBlocks));
  ws.reserve(std::size_t(grid) * sizeof(A));
  A* part = static_cast<A*>(ws.partials(0));
  reduce_rows_pass1<B, Tu::kFused, Op, A>
      <<<grid, B, 0, s>>>(ld, geo, part, ws.d_counter(), ws.d_result());
  CUDA_CHECK_LAUNCH();
  if constexpr (!Tu::kFused) {
    reduce_final<B, Op, A, double><<<1, B, 0, s>>>(part, grid, ws.d_result());
    CUDA_CHECK_LAUNCH();
  }
}

inline RowGeom row_geometry(const GridDesc& g, std::int64_t seg_len) {
  RowGeom r;
  const std::int64_t rows = std::int64_t(g.ny) * (g.dims == 3 ? g.nz : 1);
  r.seg_len = seg_len;
  r.segs = (g.nx + seg_len - 1) / seg_len;
  r.items = rows * r.segs;
  r.ny = g.ny;
  r.nx = g.nx;
  r.sy = g.stride_y();
  r.sz = g.stride_z();
  r.off0 = g.interior_offset();
  return r;
}

// Number of leading elements before p is 16-byte aligned (capped at n).
template <class T>
std::size_t align_head(const T* p, std::size_t n) {
  constexpr std::size_t V = 16 / sizeof(T);
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  std::size_t head = ((16 - addr % 16) % 16) / sizeof(T);
  if (addr % sizeof(T) != 0) head = V;  // never happens for typed device pointers
  return std::min(head, n);
}

// Copies the device result to the pinned mirror and waits for the stream.
inline double finish(cudaStream_t s, ReductionWorkspace& ws) {
  ws.run_before_wait();
  CUDA_CHECK(
      cudaMemcpyAsync(ws.h_result(), ws.d_result(), sizeof(double), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return *ws.h_result();
}

template <class F>
void dispatch_op(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::Sum:
      f(SumOp{});
      return;
    case ReduceOp::SumSquares:
      f(SumSquaresOp{});
      return;
    case ReduceOp::MaxAbs:
      f(MaxAbsOp{});
      return;
  }
  throw std::invalid_argument("unknown ReduceOp");
}

}  // namespace heatsolve::cuda::detail
