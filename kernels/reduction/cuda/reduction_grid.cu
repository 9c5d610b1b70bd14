// Solver norms over padded GridDesc fields: the modern rung with interior-masking loaders.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "kernels/reduction/cuda/reduction_launch.cuh"
#include "kernels/stencil/cuda/stencil_kernels.cuh"

namespace heatsolve::cuda {
namespace detail {

bool empty_grid(const GridDesc& g, cudaStream_t s, ReductionWorkspace& ws) {
  if (g.interior_size() > 0) return false;
  CUDA_CHECK(cudaMemsetAsync(ws.d_result(), 0, sizeof(double), s));
  return true;
}

// Leading elements before the pointer is 16-byte aligned (0..V-1).
template <class T>
std::int64_t head_of(const T* p) {
  return static_cast<std::int64_t>(align_head(p, 16));
}

// op over Pair::apply(a, b) (formed in double) over the interior: 16-byte vectors when a and b
// share the 16-byte phase, else scalar loads (they can never both be aligned).
template <class Pair, class Op, class T>
void launch_pair_rows(const T* a, const T* b, const GridDesc& g, cudaStream_t s,
                      ReductionWorkspace& ws) {
  if (empty_grid(g, s, ws)) return;
  using Tu = SolverTuning<T>;
  constexpr int V = 16 / sizeof(T), U = Tu::kUnroll;
  if (head_of(a) == head_of(b))
    launch_rows<Tu, Op, double>(PairRows<T, V, U, Pair>{a, b, head_of(a)},
                                row_geometry(g, 32 * V * U * 2), s, ws);
  else
    launch_rows<Tu, Op, double>(PairRows<T, 1, U, Pair>{a, b, 0}, row_geometry(g, 32 * U * 2), s,
                                ws);
}

// The squares of stencil(u, f, c) over a row segment: each value with the point update every
// sweep uses (the bits stencil() stores), squared and summed in double. A generated source needs
// the plane of the stream axis, the same for the whole segment (one row).
template <class T>
struct StencilSquareRows {
  const T* u;
  SourceRef<T> src;  // stored, generated, or none
  StencilCoeffs<T> c;
  std::int64_t sy = 0, sz = 0, off0 = 0;
  bool three_d = false;
  template <class Op, class A>
  __device__ A fold(std::int64_t start, std::int64_t end, int lane, A acc) const {
    const int plane = int((start - off0) / (three_d ? sz : sy));
    for (std::int64_t i = start + lane; i < end; i += 32) {
      const T zm = three_d ? __ldg(u + i - sz) : T(0), zp = three_d ? __ldg(u + i + sz) : T(0);
      const T r = three_d ? stencil_point<3>(c, __ldg(u + i), __ldg(u + i - 1), __ldg(u + i + 1),
                                             __ldg(u + i - sy), __ldg(u + i + sy), zm, zp, src, i,
                                             plane, plane)
                          : stencil_point<2>(c, __ldg(u + i), __ldg(u + i - 1), __ldg(u + i + 1),
                                             __ldg(u + i - sy), __ldg(u + i + sy), zm, zp, src, i,
                                             plane, plane);
      acc = Op::combine(acc, A(r) * A(r));
    }
    return acc;
  }
};

// The same squares over a 3D interior, streaming along z: the row loader reads each cell of u
// seven times through the caches; here a warp owns 32 columns (i, j) of one row (a block
// kSquareRows rows) over a chunk of planes and keeps the centres of planes k-1, k, k+1 in
// registers, so u comes from memory once. x neighbours by shuffles (the edge lanes and the last
// interior column load theirs), y neighbours from the warps beside (L1); kSquarePlanes planes'
// loads in flight per step. Threads past the interior load clamped cells and add nothing (all
// take part in the shuffles). Same point update as stencil(); the grid depends on g only, so
// the fixed-order sums are bitwise reproducible.
constexpr int kSquareRows = 8;
constexpr int kSquareBlock = 32 * kSquareRows;
constexpr int kSquarePlanes = 4;

template <typename T, bool FUSED>
__global__ void __launch_bounds__(kSquareBlock)
    stencil_square_stream_kernel(const T* __restrict__ u, const SourceRef<T> f, const GridDesc g,
                                 const StencilCoeffs<T> c, const int bx, const int by,
                                 const int chunk, double* partials, unsigned* done, double* out) {
  constexpr int U = kSquarePlanes;
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = int(threadIdx.x & 31);
  const int b = int(blockIdx.x);  // x fastest, then y, then the chunk of planes
  const int i = (b % bx) * 32 + lane, j = (b / bx) % by * kSquareRows + int(threadIdx.x >> 5);
  const int k0 = b / bx / by * chunk, k1 = min(k0 + chunk, g.nz);
  const bool active = i < g.nx && j < g.ny;
  const bool edge_m = lane == 0, edge_p = lane == 31 || i == g.nx - 1;
  const std::int64_t sy = g.stride_y(), sz = g.stride_z();
  std::int64_t idx = g.index(min(i, g.nx - 1), min(j, g.ny - 1), k0);
  T P[U + 2];  // the column's centres of planes k-1 .. k+U
  P[0] = __ldg(u + idx - sz);
  P[1] = __ldg(u + idx);
  double acc = 0;
  for (int k = k0; k < k1; k += U, idx += U * sz) {  // k < k1: the same in the whole block
    T ym[U], yp[U], xm[U], xp[U];
#pragma unroll
    for (int s = 0; s < U; ++s) {
      if (k + s >= k1) break;
      const std::int64_t at = idx + s * sz;
      P[s + 2] = __ldg(u + at + sz);
      ym[s] = __ldg(u + at - sy);
      yp[s] = __ldg(u + at + sy);
      xm[s] = edge_m ? __ldg(u + at - 1) : T(0);
      xp[s] = edge_p ? __ldg(u + at + 1) : T(0);
    }
#pragma unroll
    for (int s = 0; s < U; ++s) {
      if (k + s >= k1) break;
      const T centre = P[s + 1];
      const T left = __shfl_up_sync(kAll, centre, 1), right = __shfl_down_sync(kAll, centre, 1);
      const T r = stencil_point<3>(c, centre, edge_m ? xm[s] : left, edge_p ? xp[s] : right, ym[s],
                                   yp[s], P[s], P[s + 2], f, idx + s * sz, j, k + s);
      if (active) acc += double(r) * double(r);
    }
    P[0] = P[U];
    P[1] = P[U + 1];
  }
  acc = block_reduce<kSquareBlock, SumOp>(acc);
  finish_block<kSquareBlock, FUSED, SumOp>(acc, partials, done, out);
}

// Chunks of planes: enough blocks to fill the device several times over, and 8 planes or more
// each (a chunk loads two planes beyond its own). Returns false, launching nothing, where the
// blocks would not fit a one-dimensional grid.
template <typename T>
bool launch_stencil_square_stream(const T* u, const SourceRef<T>& f, const GridDesc& g,
                                  const StencilCoeffs<T>& c, cudaStream_t s,
                                  ReductionWorkspace& ws) {
  constexpr std::int64_t kTargetBlocks = 4096;
  const int bx = (g.nx + 31) / 32, by = (g.ny + kSquareRows - 1) / kSquareRows;
  const std::int64_t layer = std::int64_t(bx) * by;
  const int chunks =
      int(std::max<std::int64_t>(1, std::min<std::int64_t>(g.nz / 8, kTargetBlocks / layer)));
  const int chunk = (g.nz + chunks - 1) / chunks;
  const std::int64_t blocks = layer * ((g.nz + chunk - 1) / chunk);
  if (blocks > INT_MAX) return false;
  const int grid = int(blocks);
  ws.reserve(std::size_t(grid) * sizeof(double));
  double* part = static_cast<double*>(ws.partials(0));
  constexpr bool kFused = SolverTuning<T>::kFused;
  stencil_square_stream_kernel<T, kFused><<<grid, kSquareBlock, 0, s>>>(
      u, f, g, c, bx, by, chunk, part, ws.d_counter(), ws.d_result());
  CUDA_CHECK_LAUNCH();
  if constexpr (!kFused) {
    reduce_final<kSquareBlock, SumOp, double, double>
        <<<1, kSquareBlock, 0, s>>>(part, grid, ws.d_result());
    CUDA_CHECK_LAUNCH();
  }
  return true;
}

}  // namespace detail

template <typename T>
double stencil_square_sum_interior(const T* d_u, const SourceRef<T>& f, const GridDesc& g,
                                   const StencilCoeffs<T>& c, cudaStream_t stream,
                                   ReductionWorkspace* ws) {
  using namespace detail;
  ReductionWorkspace& w = ws ? *ws : default_reduction_workspace();
  if (!empty_grid(g, stream, w) &&
      !(g.dims == 3 && launch_stencil_square_stream(d_u, f, g, c, stream, w))) {
    const StencilSquareRows<T> ld{d_u,        f, c, g.stride_y(), g.stride_z(), g.interior_offset(),
                                  g.dims == 3};
    launch_rows<SolverTuning<T>, SumOp, double>(ld, row_geometry(g, 32 * 16), stream, w);
  }
  return finish(stream, w);
}

template <typename T>
void reduce_interior_async(ReduceOp op, const T* d_u, const GridDesc& g, cudaStream_t stream,
                           ReductionWorkspace& ws) {
  using namespace detail;
  if (empty_grid(g, stream, ws)) return;
  using Tu = SolverTuning<T>;
  constexpr int V = 16 / sizeof(T), U = Tu::kUnroll;
  const RowGeom geo = row_geometry(g, 32 * V * U * 2);
  dispatch_op(op, [&](auto o) {
    using Op = decltype(o);
    launch_rows<Tu, Op, ModernAcc<Op, T>>(FieldRows<T, V, U>{d_u, head_of(d_u)}, geo, stream, ws);
  });
}

template <typename T>
void reduce_diff_interior_async(ReduceOp op, const T* d_a, const T* d_b, const GridDesc& g,
                                cudaStream_t stream, ReductionWorkspace& ws) {
  detail::dispatch_op(op, [&](auto o) {
    detail::launch_pair_rows<detail::MinusPair, decltype(o)>(d_a, d_b, g, stream, ws);
  });
}

template <typename T>
void dot_interior_async(const T* d_a, const T* d_b, const GridDesc& g, cudaStream_t stream,
                        ReductionWorkspace& ws) {
  detail::launch_pair_rows<detail::TimesPair, detail::SumOp>(d_a, d_b, g, stream, ws);
}

template <typename T>
void reduce_residual_interior_async(ReduceOp op, const T* d_u, const T* d_f, const GridDesc& g,
                                    cudaStream_t stream, ReductionWorkspace& ws) {
  using namespace detail;
  if (empty_grid(g, stream, ws)) return;
  ResidualRows<T> ld{d_u,
                     d_f,
                     g.stride_y(),
                     g.stride_z(),
                     g.dims == 3,
                     1.0 / (g.hx * g.hx),
                     1.0 / (g.hy * g.hy),
                     g.dims == 3 ? 1.0 / (g.hz * g.hz) : 0.0};
  dispatch_op(op, [&](auto o) {
    launch_rows<SolverTuning<T>, decltype(o), double>(ld, row_geometry(g, 32 * 16), stream, ws);
  });
}

template <typename T>
double reduce_interior(ReduceOp op, const T* d_u, const GridDesc& g, cudaStream_t stream,
                       ReductionWorkspace* ws) {
  ReductionWorkspace& w = ws ? *ws : default_reduction_workspace();
  reduce_interior_async(op, d_u, g, stream, w);
  return detail::finish(stream, w);
}

template <typename T>
double reduce_diff_interior(ReduceOp op, const T* d_a, const T* d_b, const GridDesc& g,
                            cudaStream_t stream, ReductionWorkspace* ws) {
  ReductionWorkspace& w = ws ? *ws : default_reduction_workspace();
  reduce_diff_interior_async(op, d_a, d_b, g, stream, w);
  return detail::finish(stream, w);
}

template <typename T>
double dot_interior(const T* d_a, const T* d_b, const GridDesc& g, cudaStream_t stream,
                    ReductionWorkspace* ws) {
  ReductionWorkspace& w = ws ? *ws : default_reduction_workspace();
  dot_interior_async(d_a, d_b, g, stream, w);
  return detail::finish(stream, w);
}

template <typename T>
double reduce_residual_interior(ReduceOp op, const T* d_u, const T* d_f, const GridDesc& g,
                                cudaStream_t stream, ReductionWorkspace* ws) {
  ReductionWorkspace& w = ws ? *ws : default_reduction_workspace();
  reduce_residual_interior_async(op, d_u, d_f, g, stream, w);
  return detail::finish(stream, w);
}

#define HS_INSTANTIATE(T)                                                                        \
  template double reduce_interior<T>(ReduceOp, const T*, const GridDesc&, cudaStream_t,          \
                                     ReductionWorkspace*);                                       \
  template double reduce_diff_interior<T>(ReduceOp, const T*, const T*, const GridDesc&,         \
                                          cudaStream_t, ReductionWorkspace*);                    \
  template double reduce_residual_interior<T>(ReduceOp, const T*, const T*, const GridDesc&,     \
                                              cudaStream_t, ReductionWorkspace*);                \
  template void reduce_interior_async<T>(ReduceOp, const T*, const GridDesc&, cudaStream_t,      \
                                         ReductionWorkspace&);                                   \
  template void reduce_diff_interior_async<T>(ReduceOp, const T*, const T*, const GridDesc&,     \
                                              cudaStream_t, ReductionWorkspace&);                \
  template void reduce_residual_interior_async<T>(ReduceOp, const T*, const T*, const GridDesc&, \
                                                  cudaStream_t, ReductionWorkspace&);            \
  template double dot_interior<T>(const T*, const T*, const GridDesc&, cudaStream_t,             \
                                  ReductionWorkspace*);                                          \
  template void dot_interior_async<T>(const T*, const T*, const GridDesc&, cudaStream_t,         \
                                      ReductionWorkspace&);                                      \
  template double stencil_square_sum_interior<T>(const T*, const SourceRef<T>&, const GridDesc&, \
                                                 const StencilCoeffs<T>&, cudaStream_t,          \
                                                 ReductionWorkspace*);
HS_INSTANTIATE(float)
HS_INSTANTIATE(double)
#undef HS_INSTANTIATE

}  // namespace heatsolve::cuda
