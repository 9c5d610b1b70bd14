// Host-side launch helpers shared by reduction.cu (flat arrays, ladder) and
// reduction_grid.cu (padded GridDesc fields). Include only from .cu files.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/reduction.cuh"
#include "kernels/cuda/reduction_kernels.cuh"

namespace heatsolve::cuda::detail {

constexpr int kModernBlock = 256;
constexpr int kModernUnroll = 4;

// Resident blocks per SM of a kernel at `block` threads (queried once per instantiation).
template <class Kernel>
int blocks_per_sm(Kernel k, int block) {
  int b = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, k, block, 0));
  return std::max(b, 1);
}

// Modern rung over positions [0, n) of loader ld: a fixed grid of min(ceil(nvec/256), 1024)
// blocks -- a function of n only, so the result is bitwise the same on every GPU model (1024
// blocks of 256 threads fill an H100/H200: 132 SMs x 8 resident blocks) -- then one block
// combines the partials in order. Result in ws.d_result().
constexpr int kModernMaxBlocks = 1024;
// Accumulator of the modern rung: double for Sum / SumSquares; for MaxAbs the input type (the
// maximum is exact in any precision, and comparing floats avoids float->double conversions).
template <class Op, class T>
using ModernAcc = std::conditional_t<std::is_same_v<Op, MaxAbsOp>, T, double>;

template <class Op, class L, class A = double>
void launch_modern(const L& ld, std::size_t head, std::size_t nvec, std::size_t n, cudaStream_t s,
                   ReductionWorkspace& ws) {
  constexpr int B = kModernBlock;
  auto* k1 = reduce_modern_pass1<B, kModernUnroll, Op, A, L>;
  const std::size_t want = std::max<std::size_t>((nvec + B - 1) / B, 1);
  const int grid = static_cast<int>(std::min<std::size_t>(want, kModernMaxBlocks));
  ws.reserve(std::size_t(grid) * sizeof(A));
  A* part = static_cast<A*>(ws.partials(0));
  k1<<<grid, B, 0, s>>>(ld, head, nvec, n, part);
  CUDA_CHECK_LAUNCH();
  reduce_final<B, Op, A><<<1, B, 0, s>>>(part, grid, ws.d_result());
  CUDA_CHECK_LAUNCH();
}

// Modern rung over the interior rows of a padded field (see RowGeom): fixed grid of
// min(ceil(items / 8), 1024) blocks, then the ordered final pass.
template <class Op, class A, class RL>
void launch_rows(const RL& ld, const RowGeom& geo, cudaStream_t s, ReductionWorkspace& ws) {
  constexpr int B = kModernBlock;
  const std::int64_t want = std::max<std::int64_t>((geo.items + B / 32 - 1) / (B / 32), 1);
  const int grid = static_cast<int>(std::min<std::int64_t>(want, kModernMaxBlocks));
  ws.reserve(std::size_t(grid) * sizeof(A));
  A* part = static_cast<A*>(ws.partials(0));
  reduce_rows_pass1<B, Op, A><<<grid, B, 0, s>>>(ld, geo, part);
  CUDA_CHECK_LAUNCH();
  reduce_final<B, Op, A><<<1, B, 0, s>>>(part, grid, ws.d_result());
  CUDA_CHECK_LAUNCH();
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
