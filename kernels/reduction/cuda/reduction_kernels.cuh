// Device side of the reductions: one templated design, three axes.
//   Op      SumOp | SumSquaresOp | MaxAbsOp   (identity, leaf transform, combine)
//   Acc     accumulation type (float or double)
//   Loader  maps a position i in [0, size) to a value (flat arrays):
//             FlatLoader<T, V>      p[i]                        (V = elements per 16-byte load)
//             PartialLoader<A>      p[i], already transformed   (later passes)
//           or covers a segment of an interior row of a padded GridDesc field (solver norms):
//             FieldRows<T, V, U>    u[i]
//             DiffRows<T, V, U>     a[i] - b[i]                 (V = 1 when a, b differ in phase)
//             DotRows<T, V, U>      a[i] * b[i]                 (same; both are PairRows)
//             ResidualRows<T>       f[i] + lap u (i)            (scalar coalesced loads)
// Ladder kernels reduce_r1..reduce_r7 take a flat loader; the modern rung is
// reduce_modern_pass1 (flat) or reduce_rows_pass1 (fields), then reduce_final (or, fused, the
// last block of pass 1). DotLoader<T, V> (a[i] * b[i]) serves the 1 x 1 tall-skinny A^T B.
// GridMask (interior test by fast divmod) serves the masked tall-skinny Gram kernel.
// Include only from .cu files.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cuda/atomic>

#include "core/grid.hpp"

namespace heatsolve::cuda::detail {

// ---- Operations ---------------------------------------------------------------------------
struct SumOp {
  template <class A>
  __host__ __device__ static A identity() {
    return A(0);
  }
  template <class A>
  __host__ __device__ static A transform(A x) {
    return x;
  }
  template <class A>
  __host__ __device__ static A combine(A a, A b) {
    return a + b;
  }
};
struct SumSquaresOp {
  template <class A>
  __host__ __device__ static A identity() {
    return A(0);
  }
  template <class A>
  __host__ __device__ static A transform(A x) {
    return x * x;
  }
  template <class A>
  __host__ __device__ static A combine(A a, A b) {
    return a + b;
  }
};
struct MaxAbsOp {
  template <class A>
  __host__ __device__ static A identity() {
    return A(0);
  }
  template <class A>
  __host__ __device__ static A transform(A x) {
    return x < A(0) ? -x : x;  // NaN stays NaN
  }
  template <class A>
  __host__ __device__ static A combine(A a, A b) {
    return (a > b || a != a) ? a : b;  // NaN wins, from either side
  }
};

// ---- Fast unsigned 32-bit divmod (multiply-high; valid for n < 2^31) ----------------------
struct FastDivmod {
  std::uint32_t d = 1, mul = 0, shift = 0;
  FastDivmod() = default;
  __host__ explicit FastDivmod(std::uint32_t div) : d(div) {
    if (div != 1) {
      std::uint32_t l = 0;
      while ((1ull << l) < div) ++l;  // ceil(log2 div)
      const std::uint32_t p = 31 + l;
      mul = static_cast<std::uint32_t>(((1ull << p) + div - 1) / div);
      shift = p - 32;
    }
  }
  __host__ __device__ void divmod(std::uint64_t n64, std::uint64_t& q, std::uint64_t& r) const {
    const std::uint32_t n = static_cast<std::uint32_t>(n64);
#ifdef __CUDA_ARCH__
    const std::uint32_t hi = __umulhi(n, mul);
#else
    const std::uint32_t hi = static_cast<std::uint32_t>((std::uint64_t(n) * mul) >> 32);
#endif
    const std::uint32_t qq = d == 1 ? n : hi >> shift;
    q = qq;
    r = n - qq * d;
  }
};
// Plain 64-bit divmod for padded arrays of 2^31 elements or more.
struct PlainDivmod {
  std::uint64_t d = 1;
  PlainDivmod() = default;
  __host__ explicit PlainDivmod(std::uint64_t div) : d(div) {}
  __host__ __device__ void divmod(std::uint64_t n, std::uint64_t& q, std::uint64_t& r) const {
    q = n / d;
    r = n - q * d;
  }
};

// Interior test of a padded-array position. Unsigned wrap: (x - 1) < nx  <=>  1 <= x <= nx.
template <class D>
struct GridMask {
  D div_px, div_py;
  std::uint64_t px = 3, nx = 1, ny = 1, nz = 1;
  bool three_d = false;
  GridMask() = default;
  __host__ explicit GridMask(const GridDesc& g)
      : div_px(static_cast<std::uint32_t>(g.px())),
        div_py(static_cast<std::uint32_t>(g.py())),
        px(g.px()),
        nx(g.nx),
        ny(g.ny),
        nz(g.nz),
        three_d(g.dims == 3) {}
  __device__ bool row_interior(std::uint64_t row) const {
    std::uint64_t z, y;
    div_py.divmod(row, z, y);
    return (y - 1 < ny) && (!three_d || z - 1 < nz);
  }
  __device__ bool interior(std::uint64_t i) const {
    std::uint64_t row, x;
    div_px.divmod(i, row, x);
    return (x - 1 < nx) && row_interior(row);
  }
  // Valid flags of V consecutive positions starting at i (px >= 3 >= V - 1: at most one row
  // boundary inside the vector).
  template <int V>
  __device__ void interior_vec(std::uint64_t i, bool (&ok)[V]) const {
    std::uint64_t row, x0;
    div_px.divmod(i, row, x0);
    const bool r0 = row_interior(row);
    const bool r1 = (x0 + V > px) ? row_interior(row + 1) : r0;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      std::uint64_t x = x0 + e;
      const bool crossed = x >= px;
      if (crossed) x -= px;
      ok[e] = (x - 1 < nx) && (crossed ? r1 : r0);
    }
  }
};

// ---- Vector registers ---------------------------------------------------------------------
template <class T, int V>
struct alignas(sizeof(T) * V) VecT {
  T v[V];
};
template <class T, int V>
__device__ __forceinline__ VecT<T, V> load_vec(const T* p) {
  if constexpr (V == 1) {
    return VecT<T, 1>{{__ldg(p)}};
  } else {
    return *reinterpret_cast<const VecT<T, V>*>(p);
  }
}

// Leaf value at position i: transformed, or the identity where invalid.
template <class Op, class A, class L>
__device__ __forceinline__ A leaf(const L& ld, std::size_t i) {
  if (!ld.valid(i)) return Op::template identity<A>();
  const A x = ld.template value<A>(i);
  if constexpr (L::kLeaf) {
    return Op::transform(x);
  } else {
    return x;
  }
}

// ---- Loaders ------------------------------------------------------------------------------
template <class T, int V = 16 / sizeof(T)>
struct FlatLoader {
  static constexpr bool kLeaf = true;
  static constexpr int kVec = V;
  using Raw = VecT<T, V>;
  const T* p;
  __device__ bool valid(std::size_t) const { return true; }
  template <class A>
  __device__ A value(std::size_t i) const {
    return A(p[i]);
  }
  __device__ Raw load(std::size_t i) const { return load_vec<T, V>(p + i); }
  template <class Op, class A>
  __device__ A fold(const Raw& r, std::size_t, A acc) const {
#pragma unroll
    for (int e = 0; e < V; ++e) acc = Op::combine(acc, Op::transform(A(r.v[e])));
    return acc;
  }
};

// Dot product sum_i a[i] * b[i] (with SumOp): the 1 x 1 tall-skinny A^T B. a and b share the
// 16-byte phase when V > 1. Products are formed in A (double accumulation: exact products).
template <class T, int V = 16 / sizeof(T)>
struct DotLoader {
  static constexpr bool kLeaf = true;
  static constexpr int kVec = V;
  struct Raw {
    VecT<T, V> a, b;
  };
  const T* a;
  const T* b;
  __device__ bool valid(std::size_t) const { return true; }
  template <class A>
  __device__ A value(std::size_t i) const {
    return A(a[i]) * A(b[i]);
  }
  __device__ Raw load(std::size_t i) const {
    return {load_vec<T, V>(a + i), load_vec<T, V>(b + i)};
  }
  template <class Op, class A>
  __device__ A fold(const Raw& r, std::size_t, A acc) const {
#pragma unroll
    for (int e = 0; e < V; ++e) acc = Op::combine(acc, Op::transform(A(r.a.v[e]) * A(r.b.v[e])));
    return acc;
  }
};

// Partials of an earlier pass: already transformed, so later passes only combine.
template <class A>
struct PartialLoader {
  static constexpr bool kLeaf = false;
  const A* p;
  __device__ bool valid(std::size_t) const { return true; }
  template <class B>
  __device__ B value(std::size_t i) const {
    return B(p[i]);
  }
};

// ---- Warp / block building blocks ---------------------------------------------------------
template <class Op, class A>
__device__ __forceinline__ A warp_reduce(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}

// Fixed-order block reduction through shuffles; the result is valid in thread 0.
template <int BLOCK, class Op, class A>
__device__ __forceinline__ A block_reduce(A v) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "block must be whole warps");
  __shared__ A warp_part[BLOCK / 32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  v = warp_reduce<Op>(v);
  if (lane == 0) warp_part[w] = v;
  __syncthreads();
  if (w == 0) {
    v = lane < BLOCK / 32 ? warp_part[lane] : Op::template identity<A>();
    v = warp_reduce<Op>(v);
  }
  return v;
}

// Shared-memory tree of the last warp, correct under independent thread scheduling: every
// step reads, then __syncwarp(), then writes, then __syncwarp(). Steps that would read past a
// compile-time block of BLOCK entries are skipped (rungs 6/7); rung 5 runs all of them
// (BLOCK 64: it needs 64 valid entries).
template <int BLOCK, class Op, class A>
__device__ __forceinline__ void warp_tail(volatile A* s, unsigned tid) {
  A v = s[tid];
#pragma unroll
  for (int o = 32; o > 0; o >>= 1) {
    if (BLOCK < 2 * o) continue;
    v = Op::combine(v, A(s[tid + o]));
    __syncwarp();
    s[tid] = v;
    __syncwarp();
  }
}

template <class A>
__device__ __forceinline__ A* dyn_smem() {
  extern __shared__ __align__(16) unsigned char hs_reduce_smem[];
  return reinterpret_cast<A*>(hs_reduce_smem);
}

// ---- The ladder (one output per block; the host re-launches on the partials) --------------
// Rung 1: interleaved addressing, divergent branch (tid % (2s)).
template <class Op, class A, class L>
__global__ void reduce_r1(L ld, std::size_t n, A* out) {
  A* s = dyn_smem<A>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + tid;
  s[tid] = i < n ? leaf<Op, A>(ld, i) : Op::template identity<A>();
  __syncthreads();
  for (unsigned st = 1; st < blockDim.x; st *= 2) {
    if (tid % (2 * st) == 0) s[tid] = Op::combine(s[tid], s[tid + st]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Rung 2: interleaved addressing, strided index, no divergence (bank conflicts instead).
template <class Op, class A, class L>
__global__ void reduce_r2(L ld, std::size_t n, A* out) {
  A* s = dyn_smem<A>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + tid;
  s[tid] = i < n ? leaf<Op, A>(ld, i) : Op::template identity<A>();
  __syncthreads();
  for (unsigned st = 1; st < blockDim.x; st *= 2) {
    const unsigned index = 2 * st * tid;
    if (index < blockDim.x) s[index] = Op::combine(s[index], s[index + st]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Rung 3: sequential addressing (conflict-free; half the threads idle from the first step).
template <class Op, class A, class L>
__global__ void reduce_r3(L ld, std::size_t n, A* out) {
  A* s = dyn_smem<A>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + tid;
  s[tid] = i < n ? leaf<Op, A>(ld, i) : Op::template identity<A>();
  __syncthreads();
  for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
    if (tid < st) s[tid] = Op::combine(s[tid], s[tid + st]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

template <class Op, class A, class L>
__device__ __forceinline__ A load_two(const L& ld, std::size_t i, unsigned block, std::size_t n) {
  A v = i < n ? leaf<Op, A>(ld, i) : Op::template identity<A>();
  if (i + block < n) v = Op::combine(v, leaf<Op, A>(ld, i + block));
  return v;
}

// Rung 4: first add during load (each block covers 2 * blockDim elements).
template <class Op, class A, class L>
__global__ void reduce_r4(L ld, std::size_t n, A* out) {
  A* s = dyn_smem<A>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * (blockDim.x * 2) + tid;
  s[tid] = load_two<Op, A>(ld, i, blockDim.x, n);
  __syncthreads();
  for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
    if (tid < st) s[tid] = Op::combine(s[tid], s[tid + st]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Rung 5: unroll the last warp (blockDim >= 64). Correct on Volta+: warp_tail syncs the warp.
template <class Op, class A, class L>
__global__ void reduce_r5(L ld, std::size_t n, A* out) {
  A* s = dyn_smem<A>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * (blockDim.x * 2) + tid;
  s[tid] = load_two<Op, A>(ld, i, blockDim.x, n);
  __syncthreads();
  for (unsigned st = blockDim.x / 2; st > 32; st >>= 1) {
    if (tid < st) s[tid] = Op::combine(s[tid], s[tid + st]);
    __syncthreads();
  }
  if (tid < 32) warp_tail<64, Op, A>(s, tid);
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Negative control (tests only): the pre-Volta rung 5, no volatile and no __syncwarp.
template <class Op, class A, class L>
__global__ void reduce_r5_unsafe(L ld, std::size_t n, A* out) {
  A* s = dyn_smem<A>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * (blockDim.x * 2) + tid;
  s[tid] = load_two<Op, A>(ld, i, blockDim.x, n);
  __syncthreads();
  for (unsigned st = blockDim.x / 2; st > 32; st >>= 1) {
    if (tid < st) s[tid] = Op::combine(s[tid], s[tid + st]);
    __syncthreads();
  }
  if (tid < 32) {
    s[tid] = Op::combine(s[tid], s[tid + 32]);
    s[tid] = Op::combine(s[tid], s[tid + 16]);
    s[tid] = Op::combine(s[tid], s[tid + 8]);
    s[tid] = Op::combine(s[tid], s[tid + 4]);
    s[tid] = Op::combine(s[tid], s[tid + 2]);
    s[tid] = Op::combine(s[tid], s[tid + 1]);
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

template <int BLOCK, class Op, class A>
__device__ __forceinline__ void tree_unrolled(A* s, unsigned tid) {
  if (BLOCK >= 1024) {
    if (tid < 512) s[tid] = Op::combine(s[tid], s[tid + 512]);
    __syncthreads();
  }
  if (BLOCK >= 512) {
    if (tid < 256) s[tid] = Op::combine(s[tid], s[tid + 256]);
    __syncthreads();
  }
  if (BLOCK >= 256) {
    if (tid < 128) s[tid] = Op::combine(s[tid], s[tid + 128]);
    __syncthreads();
  }
  if (BLOCK >= 128) {
    if (tid < 64) s[tid] = Op::combine(s[tid], s[tid + 64]);
    __syncthreads();
  }
  if (tid < 32) warp_tail<BLOCK, Op, A>(s, tid);
}

// Rung 6: complete unroll, block size a template parameter.
template <int BLOCK, class Op, class A, class L>
__global__ void __launch_bounds__(BLOCK) reduce_r6(L ld, std::size_t n, A* out) {
  static_assert(BLOCK >= 64, "rung 6 needs at least two warps");
  __shared__ A s[BLOCK];
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * (BLOCK * 2) + tid;
  s[tid] = load_two<Op, A>(ld, i, BLOCK, n);
  __syncthreads();
  tree_unrolled<BLOCK, Op, A>(s, tid);
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Rung 7: multiple elements per thread (grid-stride), then rung 6's tree.
template <int BLOCK, class Op, class A, class L>
__global__ void __launch_bounds__(BLOCK) reduce_r7(L ld, std::size_t n, A* out) {
  static_assert(BLOCK >= 64, "rung 7 needs at least two warps");
  __shared__ A s[BLOCK];
  const unsigned tid = threadIdx.x;
  const std::size_t grid = std::size_t(BLOCK) * 2 * gridDim.x;
  A acc = Op::template identity<A>();
  for (std::size_t i = std::size_t(blockIdx.x) * (BLOCK * 2) + tid; i < n; i += grid) {
    acc = Op::combine(acc, leaf<Op, A>(ld, i));
    if (i + BLOCK < n) acc = Op::combine(acc, leaf<Op, A>(ld, i + BLOCK));
  }
  s[tid] = acc;
  __syncthreads();
  tree_unrolled<BLOCK, Op, A>(s, tid);
  if (tid == 0) out[blockIdx.x] = s[0];
}

// ---- Modern rung ----------------------------------------------------------------------------
// Fixed-order combine of `count` partials by one block: K independent (L2) loads per thread in
// flight, then the shuffle tree. The order depends on count and BLOCK only. Valid in thread 0.
template <int BLOCK, class Op, class A>
__device__ __forceinline__ A combine_partials(const A* p, int count) {
  constexpr int K = 8;
  A acc = Op::template identity<A>();
  for (int base = 0; base < count; base += K * BLOCK) {
    A x[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i = base + k * BLOCK + static_cast<int>(threadIdx.x);
      x[k] = i < count ? __ldcg(p + i) : Op::template identity<A>();  // L2: written by other SMs
    }
#pragma unroll
    for (int k = 0; k < K; ++k) acc = Op::combine(acc, x[k]);
  }
  return block_reduce<BLOCK, Op>(acc);
}

// Pass-1 epilogue (block_val valid in thread 0). !FUSED: store the partial; a second kernel
// (reduce_final) combines. FUSED: the block that arrives last on the device-scope counter
// (acq_rel: every other partial is visible to it) combines all partials in block order --
// the same fixed order whichever block is last -- writes *out and re-arms the counter.
template <int BLOCK, bool FUSED, class Op, class A, class OutT>
__device__ __forceinline__ void finish_block(A block_val, A* partials, unsigned* done, OutT* out) {
  if constexpr (!FUSED) {
    if (threadIdx.x == 0) partials[blockIdx.x] = block_val;
  } else {
    __shared__ bool last;
    if (threadIdx.x == 0) {
      partials[blockIdx.x] = block_val;
      ::cuda::atomic_ref<unsigned, ::cuda::thread_scope_device> cnt(*done);
      last = cnt.fetch_add(1u, ::cuda::std::memory_order_acq_rel) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();  // the other threads of this block read what thread 0 acquired
    const A total = combine_partials<BLOCK, Op>(partials, static_cast<int>(gridDim.x));
    if (threadIdx.x == 0) {
      *out = static_cast<OutT>(total);
      ::cuda::atomic_ref<unsigned, ::cuda::thread_scope_device>(*done).store(
          0u, ::cuda::std::memory_order_relaxed);  // next launch (stream order) sees 0
    }
  }
}

// Pass 1 over a fixed grid. The vectors are cut into tiles of BLOCK * UNROLL; block b takes
// tiles b, b + grid, ... (grid-stride over tiles). In a tile, thread t loads vectors t,
// t + BLOCK, ... (UNROLL independent coalesced 16-byte loads, all issued before any is
// used), so full tiles need no bounds checks. The partial last tile and the < V scalars
// before the first aligned vector and after the last one go to the block that owns tile
// `full` in this order (it has the fewest full tiles).
// Resident blocks per SM the modern rung asks ptxas for: a full SM (2048 threads) up to 4
// vectors per thread, half of it above (the same bytes in flight, twice the registers).
template <int BLOCK, int UNROLL>
constexpr int modern_min_blocks() {
  return UNROLL > 4 ? 1024 / BLOCK : 2048 / BLOCK;
}

template <int BLOCK, int UNROLL, bool FUSED, class Op, class A, class L, class OutT>
__global__ void __launch_bounds__(BLOCK, (modern_min_blocks<BLOCK, UNROLL>()))
    reduce_modern_pass1(L ld, std::size_t head, std::size_t nvec, std::size_t n, A* partials,
                        unsigned* done, OutT* out) {
  static_assert(UNROLL >= 1 && BLOCK >= L::kVec, "bad modern-rung configuration");
  constexpr int V = L::kVec;
  constexpr std::size_t TILE = std::size_t(BLOCK) * UNROLL;
  const std::size_t full = nvec / TILE;
  A acc = Op::template identity<A>();
#pragma unroll 1  // UNROLL alone sets the loads in flight (and the registers)
  for (std::size_t t = blockIdx.x; t < full; t += gridDim.x) {
    const std::size_t i0 = head + (t * TILE + threadIdx.x) * V;
    typename L::Raw r[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) r[u] = ld.load(i0 + std::size_t(u) * BLOCK * V);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      acc = ld.template fold<Op, A>(r[u], i0 + std::size_t(u) * BLOCK * V, acc);
  }
  if (blockIdx.x == full % gridDim.x) {  // < 1 tile in one block: kept simple (and small)
#pragma unroll 1
    for (std::size_t v = full * TILE + threadIdx.x; v < nvec; v += BLOCK)
      acc = ld.template fold<Op, A>(ld.load(head + v * V), head + v * V, acc);
    if (threadIdx.x < head) acc = Op::combine(acc, leaf<Op, A>(ld, threadIdx.x));
    const std::size_t t = head + nvec * V + threadIdx.x;
    if (threadIdx.x < unsigned(V) && t < n) acc = Op::combine(acc, leaf<Op, A>(ld, t));
  }
  acc = block_reduce<BLOCK, Op>(acc);
  finish_block<BLOCK, FUSED, Op>(acc, partials, done, out);
}

// ---- Modern rung over padded fields: row segments ---------------------------------------------
// Work items are segments of interior rows (x-lines): item -> (row, segment) -> [start, end) in
// the padded array; no per-element integer division and no ghost rows read. A warp takes one
// item at a time (fixed grid-stride over items, so the order is fixed); its lanes read the
// 16-byte-aligned vectors that cover [start, end) and mask the elements outside it.
struct RowGeom {
  std::int64_t items = 0;    // rows * segs
  std::int64_t segs = 1;     // segments per row
  std::int64_t seg_len = 1;  // elements per segment
  std::int64_t ny = 1, nx = 1, sy = 0, sz = 0, off0 = 0;
  __device__ void item(std::int64_t it, std::int64_t& start, std::int64_t& end) const {
    const std::int64_t row = it / segs, seg = it - row * segs;
    const std::int64_t k = row / ny, j = row - k * ny;
    const std::int64_t r0 = off0 + j * sy + k * sz;
    start = r0 + seg * seg_len;
    end = min(r0 + nx, start + seg_len);
  }
};

// Loaders over a row segment: fold<Op, A>(start, end, lane, acc) covers [start, end).
// V > 1: aligned V-vectors; `head` = first index at which the pointer(s) are 16-byte aligned.
template <class T, int V, int UNROLL>
struct FieldRows {
  const T* p;
  std::int64_t head;
  template <class Op, class A>
  __device__ A fold(std::int64_t start, std::int64_t end, int lane, A acc) const {
    const std::int64_t k0 = (start - head) / V, k1 = (end - 1 - head) / V;  // start >= V > head
    for (std::int64_t k = k0 + lane; k <= k1; k += 32 * UNROLL) {
      VecT<T, V> r[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
        if (k + 32 * u <= k1) r[u] = load_vec<T, V>(p + head + (k + 32 * u) * V);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        if (k + 32 * u > k1) break;
        const std::int64_t i0 = head + (k + 32 * u) * V;
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (i0 + e >= start && i0 + e < end) acc = Op::combine(acc, Op::transform(A(r[u].v[e])));
      }
    }
    return acc;
  }
};

// Pointwise combination of two fields, formed in the accumulator type A.
struct MinusPair {
  template <class A>
  __device__ static A apply(A x, A y) {
    return x - y;
  }
};
struct TimesPair {
  template <class A>
  __device__ static A apply(A x, A y) {
    return x * y;
  }
};

template <class T, int V, int UNROLL, class Pair>
struct PairRows {
  const T* a;
  const T* b;
  std::int64_t head;
  template <class Op, class A>
  __device__ A fold(std::int64_t start, std::int64_t end, int lane, A acc) const {
    const std::int64_t k0 = (start - head) / V, k1 = (end - 1 - head) / V;
    for (std::int64_t k = k0 + lane; k <= k1; k += 32 * UNROLL) {
      VecT<T, V> ra[UNROLL], rb[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
        if (k + 32 * u <= k1) {
          ra[u] = load_vec<T, V>(a + head + (k + 32 * u) * V);
          rb[u] = load_vec<T, V>(b + head + (k + 32 * u) * V);
        }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        if (k + 32 * u > k1) break;
        const std::int64_t i0 = head + (k + 32 * u) * V;
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (i0 + e >= start && i0 + e < end)
            acc = Op::combine(acc, Op::transform(Pair::apply(A(ra[u].v[e]), A(rb[u].v[e]))));
      }
    }
    return acc;
  }
};
template <class T, int V, int UNROLL>
using DiffRows = PairRows<T, V, UNROLL, MinusPair>;  // a - b (reduce_diff_interior)
template <class T, int V, int UNROLL>
using DotRows = PairRows<T, V, UNROLL, TimesPair>;  // a * b (dot_interior, with SumOp)

// r = f + lap u, scalar coalesced loads (lane x, x+32, ...); neighbours hit L1/L2.
template <class T>
struct ResidualRows {
  const T* u;
  const T* f;  // may be null
  std::int64_t sy = 0, sz = 0;
  bool three_d = false;
  double ihx2 = 0, ihy2 = 0, ihz2 = 0;
  template <class Op, class A>
  __device__ A fold(std::int64_t start, std::int64_t end, int lane, A acc) const {
    for (std::int64_t i = start + lane; i < end; i += 32) {
      const A c = A(u[i]);
      A lap = (A(u[i - 1]) - A(2) * c + A(u[i + 1])) * A(ihx2) +
              (A(u[i - sy]) - A(2) * c + A(u[i + sy])) * A(ihy2);
      if (three_d) lap += (A(u[i - sz]) - A(2) * c + A(u[i + sz])) * A(ihz2);
      acc = Op::combine(acc, Op::transform(f ? A(f[i]) + lap : lap));
    }
    return acc;
  }
};

template <int BLOCK, bool FUSED, class Op, class A, class RL>
__global__ void __launch_bounds__(BLOCK)
    reduce_rows_pass1(RL ld, RowGeom geo, A* partials, unsigned* done, double* out) {
  const int lane = threadIdx.x & 31;
  const std::int64_t warp = (std::int64_t(blockIdx.x) * BLOCK + threadIdx.x) >> 5;
  const std::int64_t nwarps = std::int64_t(gridDim.x) * (BLOCK / 32);
  A acc = Op::template identity<A>();
  for (std::int64_t it = warp; it < geo.items; it += nwarps) {
    std::int64_t start, end;
    geo.item(it, start, end);
    acc = ld.template fold<Op, A>(start, end, lane, acc);
  }
  acc = block_reduce<BLOCK, Op>(acc);
  finish_block<BLOCK, FUSED, Op>(acc, partials, done, out);
}

// Second launch of the !FUSED form: the same fixed-order combine as the fused last block.
template <int BLOCK, class Op, class A, class OutT>
__global__ void __launch_bounds__(BLOCK) reduce_final(const A* partials, int count, OutT* out) {
  const A acc = combine_partials<BLOCK, Op>(partials, count);
  if (threadIdx.x == 0) *out = static_cast<OutT>(acc);
}

template <class A>
__global__ void store_result(const A* src, double* out) {
  *out = static_cast<double>(*src);
}

}  // namespace heatsolve::cuda::detail
