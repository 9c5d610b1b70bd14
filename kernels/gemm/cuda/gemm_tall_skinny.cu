// Tall-skinny C = A^T B (A: N x m, B: N x n, m, n <= 16, N huge): memory-bound; every element
// of A and B is read exactly once from device memory.
//
// A block walks chunks of R consecutive rows (fixed grid, chunk c = blockIdx.x + k*gridDim.x):
//   1. the chunk is fetched with 16-byte loads into registers (prefetched one chunk ahead, so
//      the loads of chunk c+1 are in flight while chunk c is multiplied), converted to the
//      accumulator type and stored to shared memory;
//   2. the m x n products are split into 4 x 4 register blocks; 256 / (#blocks) row groups
//      each take every (256/#blocks)-th row of the chunk: 8 shared loads per 16 FMAs.
// At the end the row groups are summed in a fixed order (shared memory), one m*n partial per
// block; a second kernel adds the partials in block order: deterministic, no atomics.
// Row-major operands whose width is a multiple of 4 read each row's 4 values of a register
// block with one 16-byte shared load (two for double) instead of four scalar ones.
// 1 x 1 is a dot product: it runs on the modern reduction rung's flat machinery (DotLoader).
// Knobs (rows per chunk, occupancy hint) are template parameters; the candidates and the
// entry points' choice are in one place below (kTsCandidates, ts_tuning()).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/compiled_choice.cuh"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/gemm/cuda/gemm.cuh"
#include "kernels/reduction/cuda/reduction_launch.cuh"  // VecT, GridMask, DotLoader, the modern rung

namespace heatsolve::cuda {

TallSkinnyWorkspace::~TallSkinnyWorkspace() {
  cudaFree(d_);  // errors ignored (may run at exit)
  cudaFreeHost(h_);
}

void* TallSkinnyWorkspace::reserve(std::size_t bytes) {
  if (bytes > bytes_) {
    if (d_) CUDA_CHECK(cudaFree(d_));
    d_ = nullptr;
    bytes = std::max(bytes, 2 * bytes_);
    CUDA_CHECK(cudaMalloc(&d_, bytes));
    bytes_ = bytes;
  }
  return d_;
}

double* TallSkinnyWorkspace::host_result(std::size_t count) {
  if (count > h_count_) {
    if (h_) CUDA_CHECK(cudaFreeHost(h_));
    h_ = nullptr;
    CUDA_CHECK(cudaMallocHost(&h_, count * sizeof(double)));
    h_count_ = count;
  }
  return h_;
}

TallSkinnyWorkspace& default_tall_skinny_workspace() {
  thread_local TallSkinnyWorkspace ws;
  return ws;
}

namespace detail {

constexpr int kTsThreads = 256;

// ---- Tuning: the candidates the bench times, and THE choice of the entry points ------------
// {chunk scale, min blocks per SM}. ptxas -v (sm_90, 256 threads), row-major, 16-byte loads:
//   float in float:   {1,1} 72 regs (3 blocks/SM), {1,2} 64 (4), {2,2} 92 (2), {2,3} 80 (3)
//   float in double:  {1,1} 96 (2), {1,3} 80 (3, no spills), {2,3} 80 (24 B spills)
//   double in double: {1,1} 111 (2), {2,2} 128 (2, 8 B spills); min_blocks 3 spills 200+ B
//   column form (Anderson), float in double: {1,1} no spills, min_blocks 3 spills 420 B
constexpr TallSkinnyTuning kTsCandidates[] = {{1, 1}, {1, 2}, {1, 3}, {2, 1}, {2, 2}, {2, 3}};

// THE choice of the entry points (gemm_atb_tall_skinny, gram_tall_skinny*): switch here after a
// bench run (heatsolve bench --gemm times every candidate): float in double {2,2} is the
// fastest candidate at every width; the other defaults are within 2 % of the best.
template <class T, class Acc, bool kCols>
constexpr TallSkinnyTuning ts_tuning() {
  if (kCols) return {1, 1};                               // Anderson's column history
  if (sizeof(T) == 4 && sizeof(Acc) == 4) return {2, 3};  // float in float
  if (sizeof(T) == 4) return {2, 2};                      // float in double
  return {1, 1};                                          // double
}

constexpr bool same_tuning(const TallSkinnyTuning& a, const TallSkinnyTuning& b) {
  return a.chunk_scale == b.chunk_scale && a.min_blocks == b.min_blocks;
}
template <int SCALE, int MINB>
struct TsTune {
  static_assert(SCALE >= 1 && MINB >= 1, "bad tall-skinny tuning");
  static constexpr int kScale = SCALE, kMinBlocks = MINB;
};
template <class T, class Acc, bool kCols>
using TsDefault =
    TsTune<ts_tuning<T, Acc, kCols>().chunk_scale, ts_tuning<T, Acc, kCols>().min_blocks>;

// Calls f(TsTune<...>{}) for the compiled candidate equal to t; throws if there is none.
template <class F>
void with_ts_tuning(const TallSkinnyTuning& t, F&& f) {
  constexpr std::size_t kCount = sizeof(kTsCandidates) / sizeof(kTsCandidates[0]);
  const bool found = with_compiled_index<kCount>(
      [&](std::size_t i) { return same_tuning(kTsCandidates[i], t); },
      [&](auto i) {
        constexpr TallSkinnyTuning c = kTsCandidates[decltype(i)::value];
        f(TsTune<c.chunk_scale, c.min_blocks>{});
      });
  if (!found) throw std::invalid_argument("not a compiled tall-skinny tuning");
}

struct NoMask {
  template <int V>
  __device__ void interior_vec(std::uint64_t, bool (&ok)[V]) const {
#pragma unroll
    for (int e = 0; e < V; ++e) ok[e] = true;
  }
};

// Operand sources. Row-major: one pointer, row r at p + r*ld (ld = m or n). Columns: column j
// at cols[j][0..N).
template <class T>
struct TsRowMajor {
  const T* a;
  const T* b;
};
template <class T>
struct TsColumns {
  const T* a[kTallSkinnyMax];
  const T* b[kTallSkinnyMax];
};

template <class T, class Acc, int R, int MAXC, int NT, int VW, bool kCols, int MINB, class Mask,
          class Src>
__global__ void __launch_bounds__(NT, MINB)
    atb_tall_skinny_kernel(Src src, std::int64_t N, int m, int n, bool b_is_a, Mask mask,
                           std::int64_t nchunks, Acc* __restrict__ partials) {
  static_assert(R % VW == 0, "chunk must hold whole vectors");
  constexpr int KV = (R * MAXC / VW + NT - 1) / NT;  // vectors per thread and operand
  constexpr int RS = kCols ? R + 1 : R;              // column layout: padded column stride (banks)
  using V = VecT<T, VW>;
  extern __shared__ __align__(16) unsigned char ts_smem[];
  Acc* As = reinterpret_cast<Acc*>(ts_smem);
  Acc* Bs = b_is_a ? As : As + (kCols ? RS * m : R * m);

  const int tid = threadIdx.x;
  const int nva = m * (R / VW), nvb = b_is_a ? 0 : n * (R / VW);

  // Vector v of operand (p, ld): row-major -> flat element v*VW of the chunk; columns ->
  // column v / (R/VW), rows (v % (R/VW))*VW.. of the chunk.
  auto fetch = [&](std::int64_t c, int v, int ld, bool is_b) -> V {
    V out;
    if constexpr (!kCols) {
      const T* p = is_b ? src.b : src.a;
      const std::int64_t e = c * R * ld + std::int64_t(v) * VW, end = N * ld;
      if (e + VW <= end) {
        out = *reinterpret_cast<const V*>(p + e);
      } else {
#pragma unroll
        for (int t = 0; t < VW; ++t) out.v[t] = e + t < end ? p[e + t] : T(0);
      }
    } else {
      const int j = v / (R / VW), rv = (v % (R / VW)) * VW;
      const T* p = is_b ? src.b[j] : src.a[j];
      const std::int64_t g = c * R + rv;
      if (g + VW <= N) {
        out = *reinterpret_cast<const V*>(p + g);
      } else {
#pragma unroll
        for (int t = 0; t < VW; ++t) out.v[t] = g + t < N ? p[g + t] : T(0);
      }
      bool ok[VW];
      mask.template interior_vec<VW>(static_cast<std::uint64_t>(g), ok);
#pragma unroll
      for (int t = 0; t < VW; ++t)
        if (!ok[t]) out.v[t] = T(0);
    }
    return out;
  };
  auto put = [&](Acc* S, int v, int ld, const V& x) {
    if constexpr (!kCols) {
#pragma unroll
      for (int t = 0; t < VW; ++t) S[v * VW + t] = Acc(x.v[t]);
    } else {
      const int j = v / (R / VW), rv = (v % (R / VW)) * VW;
#pragma unroll
      for (int t = 0; t < VW; ++t) S[j * RS + rv + t] = Acc(x.v[t]);
    }
    (void)ld;
  };

  V ra[KV], rb[KV];
  auto load_chunk = [&](std::int64_t c) {
#pragma unroll
    for (int k = 0; k < KV; ++k) {
      const int v = tid + k * NT;
      if (v < nva) ra[k] = fetch(c, v, m, false);
      if (v < nvb) rb[k] = fetch(c, v, n, true);
    }
  };

  // Register-block assignment.
  const int nbj = (n + 3) / 4, nb = ((m + 3) / 4) * nbj;
  const int groups = NT / nb;
  const int blk = tid % nb, rg = tid / nb;
  const bool active = rg < groups;
  const int bi = blk / nbj, bj = blk % nbj;
  int ia[4], ib[4];  // element offsets of the block's rows/columns within a chunk row
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int i = min(bi * 4 + k, m - 1), j = min(bj * 4 + k, n - 1);
    ia[k] = kCols ? i * RS : i;
    ib[k] = kCols ? j * RS : j;
  }
  // Row-major staging: row r of A at As[r*m ..]; with m % 4 == 0 a register block's 4 values
  // of a row are 16-byte aligned and contiguous (likewise B).
  const bool vec_a = !kCols && m % 4 == 0, vec_b = !kCols && n % 4 == 0;
  auto ld4 = [](const Acc* p, bool vec, const int(&off)[4], Acc(&x)[4]) {
    constexpr int AV = 16 / sizeof(Acc);
    if (vec) {
#pragma unroll
      for (int h = 0; h < 4 / AV; ++h) {
        const VecT<Acc, AV> q = *reinterpret_cast<const VecT<Acc, AV>*>(p + off[0] + h * AV);
#pragma unroll
        for (int e = 0; e < AV; ++e) x[h * AV + e] = q.v[e];
      }
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) x[k] = p[off[k]];
    }
  };
  Acc acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = Acc(0);

  std::int64_t c = blockIdx.x;
  if (c < nchunks) load_chunk(c);
  for (; c < nchunks; c += gridDim.x) {
#pragma unroll
    for (int k = 0; k < KV; ++k) {
      const int v = tid + k * NT;
      if (v < nva) put(As, v, m, ra[k]);
      if (v < nvb) put(Bs, v, n, rb[k]);
    }
    __syncthreads();
    if (c + gridDim.x < nchunks) load_chunk(c + gridDim.x);
    if (active) {
      for (int r = rg; r < R; r += groups) {
        Acc a[4], b[4];
        const int ra_off = kCols ? r : r * m, rb_off = kCols ? r : r * n;
        ld4(As + ra_off, vec_a, ia, a);
        ld4(Bs + rb_off, vec_b, ib, b);
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
      }
    }
    __syncthreads();
  }

  // Sum the row groups in a fixed order: red[(rg*nb + blk)*16 + i*4 + j].
  Acc* red = As;
  if (active) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) red[(rg * nb + blk) * 16 + i * 4 + j] = acc[i][j];
  }
  __syncthreads();
  const int E = m * n;
  for (int e = tid; e < E; e += NT) {
    const int i = e / n, j = e % n;
    const int b = (i / 4) * nbj + j / 4, k = (i % 4) * 4 + j % 4;
    Acc s = Acc(0);
    for (int g = 0; g < groups; ++g) s += red[(g * nb + b) * 16 + k];
    partials[std::int64_t(blockIdx.x) * E + e] = s;
  }
}

template <class Acc, class OutT>
__global__ void atb_tall_skinny_final(const Acc* __restrict__ partials, int blocks, int E,
                                      OutT* __restrict__ C) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= E) return;
  Acc s = Acc(0);
  for (int b = 0; b < blocks; ++b) s += partials[std::int64_t(b) * E + e];
  C[e] = static_cast<OutT>(s);
}

// Launches pass 1 + pass 2. Src/kCols pick the layout, Mask the interior masking.
template <class T, class Acc, bool kCols, int VW, int R, int MAXC, int MINB, class Mask, class Src,
          class OutT>
void launch_ts_r(const Src& src, std::int64_t N, int m, int n, bool b_is_a, const Mask& mask,
                 OutT* C, cudaStream_t s, TallSkinnyWorkspace& ws) {
  constexpr int NT = kTsThreads;
  constexpr int RS = kCols ? R + 1 : R;
  auto* k = atb_tall_skinny_kernel<T, Acc, R, MAXC, NT, VW, kCols, MINB, Mask, Src>;
  const std::size_t stage = std::size_t(RS) * (m + (b_is_a ? 0 : n));
  const std::size_t smem = std::max<std::size_t>(stage, std::size_t(NT) * 16) * sizeof(Acc);
  if (smem > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int dev = 0, sms = 1, resident = 1;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, k, NT, smem));
  resident = std::max(resident, 1);
  const std::int64_t nchunks = (N + R - 1) / R;
  const int grid = static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(nchunks, std::int64_t(sms) * resident)));
  const int E = m * n;
  Acc* part = static_cast<Acc*>(ws.reserve(std::size_t(grid) * E * sizeof(Acc)));
  k<<<grid, NT, smem, s>>>(src, N, m, n, b_is_a, mask, nchunks, part);
  CUDA_CHECK_LAUNCH();
  atb_tall_skinny_final<Acc, OutT><<<(E + 255) / 256, 256, 0, s>>>(part, grid, E, C);
  CUDA_CHECK_LAUNCH();
}

// Chunk height by operand width class (2, 4, 8, 16 columns): narrow operands get taller
// chunks, R * class = 2048 * scale elements per operand, so every width stages the same bytes
// per chunk (the bytes in flight per block) and the staging registers are sized by the class,
// not by 16 columns.
template <class Tu, class T, class Acc, bool kCols, int VW, class Mask, class Src, class OutT>
void launch_ts(const Src& src, std::int64_t N, int m, int n, bool b_is_a, const Mask& mask, OutT* C,
               cudaStream_t s, TallSkinnyWorkspace& ws) {
  constexpr int S = Tu::kScale, MB = Tu::kMinBlocks;
  const int w = std::max(m, n);
  if (w <= 2)
    launch_ts_r<T, Acc, kCols, VW, 1024 * S, 2, MB>(src, N, m, n, b_is_a, mask, C, s, ws);
  else if (w <= 4)
    launch_ts_r<T, Acc, kCols, VW, 512 * S, 4, MB>(src, N, m, n, b_is_a, mask, C, s, ws);
  else if (w <= 8)
    launch_ts_r<T, Acc, kCols, VW, 256 * S, 8, MB>(src, N, m, n, b_is_a, mask, C, s, ws);
  else
    launch_ts_r<T, Acc, kCols, VW, 128 * S, kTallSkinnyMax, MB>(src, N, m, n, b_is_a, mask, C, s,
                                                                ws);
}

// 1 x 1: sum_i a[i] b[i] on the modern reduction rung (16-byte loads, UNROLL loads in flight,
// grid a function of N only, fixed-order combine) with the solver's block / unroll / grid cap;
// the combine is a second launch (this workspace has no arrival counter).
template <class T, class Acc, class OutT>
void dot_ts(const T* a, const T* b, std::int64_t N, OutT* C, cudaStream_t s,
            TallSkinnyWorkspace& ws) {
  using Sv = SolverTuning<T>;
  using Tu = ModernTuning<Sv::kBlock, Sv::kUnroll, Sv::kMaxBlocks, false>;
  constexpr int V = 16 / sizeof(T);
  const std::size_t n = static_cast<std::size_t>(N);
  const std::size_t ha = align_head(a, n), hb = align_head(b, n);
  if (ha == hb) {  // same 16-byte phase: vector loads after `ha` scalars
    const std::size_t nvec = (n - ha) / V;
    Acc* part = static_cast<Acc*>(ws.reserve(std::size_t(Tu::grid(nvec)) * sizeof(Acc)));
    launch_modern_raw<Tu, SumOp, Acc>(DotLoader<T, V>{a, b}, ha, nvec, n, part, nullptr, C, s);
  } else {  // never both aligned: scalar loads
    Acc* part = static_cast<Acc*>(ws.reserve(std::size_t(Tu::grid(n)) * sizeof(Acc)));
    launch_modern_raw<Tu, SumOp, Acc>(DotLoader<T, 1>{a, b}, 0, n, n, part, nullptr, C, s);
  }
}

void check_shape(std::int64_t N, int m, int n) {
  if (N < 0 || m < 1 || n < 1 || m > kTallSkinnyMax || n > kTallSkinnyMax)
    throw std::invalid_argument("tall-skinny A^T B: need N >= 0 and 1 <= m, n <= 16");
}

template <class Tu, class T, class Acc, class OutT>
void rowmajor_atb(std::int64_t N, int m, int n, const T* A, const T* B, OutT* C, cudaStream_t s,
                  TallSkinnyWorkspace& ws) {
  check_shape(N, m, n);
  if (m == 1 && n == 1) return dot_ts<T, Acc>(A, B, N, C, s, ws);
  const bool b_is_a = A == B && m == n;
  constexpr int VW = 16 / sizeof(T);
  if (aligned16(A) && aligned16(B))
    launch_ts<Tu, T, Acc, false, VW>(TsRowMajor<T>{A, B}, N, m, n, b_is_a, NoMask{}, C, s, ws);
  else
    launch_ts<Tu, T, Acc, false, 1>(TsRowMajor<T>{A, B}, N, m, n, b_is_a, NoMask{}, C, s, ws);
}

}  // namespace detail

template <typename T>
void gemm_atb_tall_skinny(std::int64_t N, int m, int n, const T* A, const T* B, T* C,
                          cudaStream_t stream, TallSkinnyWorkspace* ws) {
  detail::rowmajor_atb<detail::TsDefault<T, T, false>, T, T>(
      N, m, n, A, B, C, stream, ws ? *ws : default_tall_skinny_workspace());
}

template <typename T>
void gram_tall_skinny_async(const TallSkinnyColumns<T>& A, const TallSkinnyColumns<T>& B,
                            std::int64_t N, const GridDesc* mask, double* C_dev,
                            cudaStream_t stream, TallSkinnyWorkspace* ws) {
  using namespace detail;
  check_shape(N, A.count, B.count);
  if (mask && static_cast<std::int64_t>(mask->padded_size()) != N)
    throw std::invalid_argument("gram_tall_skinny: N must be the mask's padded size");
  TallSkinnyWorkspace& w = ws ? *ws : default_tall_skinny_workspace();
  TsColumns<T> src{};
  bool aligned = true, b_is_a = A.count == B.count;
  for (int j = 0; j < A.count; ++j) {
    src.a[j] = A.cols[j];
    aligned = aligned && detail::aligned16(A.cols[j]);
  }
  for (int j = 0; j < B.count; ++j) {
    src.b[j] = B.cols[j];
    aligned = aligned && detail::aligned16(B.cols[j]);
    b_is_a = b_is_a && B.cols[j] == A.cols[j];
  }
  const int m = A.count, n = B.count;
  if (m == 1 && n == 1 && !mask)
    return dot_ts<T, double>(A.cols[0], B.cols[0], N, C_dev, stream, w);
  constexpr int VW = 16 / sizeof(T);
  using Tu = TsDefault<T, double, true>;
  auto go = [&](auto msk) {
    if (aligned)
      launch_ts<Tu, T, double, true, VW>(src, N, m, n, b_is_a, msk, C_dev, stream, w);
    else
      launch_ts<Tu, T, double, true, 1>(src, N, m, n, b_is_a, msk, C_dev, stream, w);
  };
  if (!mask)
    go(NoMask{});
  else if (mask->padded_size() < (std::size_t(1) << 31))
    go(GridMask<FastDivmod>(*mask));
  else
    go(GridMask<PlainDivmod>(*mask));
}

template <typename T>
void gram_tall_skinny(const TallSkinnyColumns<T>& A, const TallSkinnyColumns<T>& B, std::int64_t N,
                      const GridDesc* mask, double* C_host, cudaStream_t stream,
                      TallSkinnyWorkspace* ws) {
  TallSkinnyWorkspace& w = ws ? *ws : default_tall_skinny_workspace();
  const std::size_t E = std::size_t(A.count) * B.count;
  double* d_c = nullptr;
  CUDA_CHECK(cudaMallocAsync(&d_c, E * sizeof(double), stream));
  gram_tall_skinny_async(A, B, N, mask, d_c, stream, &w);
  double* h = w.host_result(E);
  CUDA_CHECK(cudaMemcpyAsync(h, d_c, E * sizeof(double), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaFreeAsync(d_c, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::copy(h, h + E, C_host);
}

template <typename T>
void gram_tall_skinny(const T* A, std::int64_t N, int m, const T* B, int n, double* C_host,
                      cudaStream_t stream, TallSkinnyWorkspace* ws) {
  TallSkinnyWorkspace& w = ws ? *ws : default_tall_skinny_workspace();
  detail::check_shape(N, m, n);
  const std::size_t E = std::size_t(m) * n;
  double* d_c = nullptr;
  CUDA_CHECK(cudaMallocAsync(&d_c, E * sizeof(double), stream));
  detail::rowmajor_atb<detail::TsDefault<T, double, false>, T, double>(N, m, n, A, B, d_c, stream,
                                                                       w);
  double* h = w.host_result(E);
  CUDA_CHECK(cudaMemcpyAsync(h, d_c, E * sizeof(double), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaFreeAsync(d_c, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::copy(h, h + E, C_host);
}

template <typename T>
void gram_tall_skinny_async(const T* A, std::int64_t N, int m, const T* B, int n, double* C_dev,
                            cudaStream_t stream, TallSkinnyWorkspace* ws) {
  detail::rowmajor_atb<detail::TsDefault<T, double, false>, T, double>(
      N, m, n, A, B, C_dev, stream, ws ? *ws : default_tall_skinny_workspace());
}

std::vector<TallSkinnyTuning> tall_skinny_tunings() {
  return {std::begin(detail::kTsCandidates), std::end(detail::kTsCandidates)};
}

std::string tall_skinny_tuning_name(const TallSkinnyTuning& t) {
  return "s" + std::to_string(t.chunk_scale) + "b" + std::to_string(t.min_blocks);
}

template <typename T>
void gemm_atb_tall_skinny_tuned(const TallSkinnyTuning& t, std::int64_t N, int m, int n, const T* A,
                                const T* B, T* C, cudaStream_t stream, TallSkinnyWorkspace* ws) {
  TallSkinnyWorkspace& w = ws ? *ws : default_tall_skinny_workspace();
  detail::with_ts_tuning(
      t, [&](auto tu) { detail::rowmajor_atb<decltype(tu), T, T>(N, m, n, A, B, C, stream, w); });
}

template <typename T>
void gram_tall_skinny_tuned_async(const TallSkinnyTuning& t, const T* A, std::int64_t N, int m,
                                  const T* B, int n, double* C_dev, cudaStream_t stream,
                                  TallSkinnyWorkspace* ws) {
  TallSkinnyWorkspace& w = ws ? *ws : default_tall_skinny_workspace();
  detail::with_ts_tuning(t, [&](auto tu) {
    detail::rowmajor_atb<decltype(tu), T, double>(N, m, n, A, B, C_dev, stream, w);
  });
}

template <typename T>
void gram_tall_skinny_strided(const T* a, int na, const T* b, int nb, std::size_t ld, std::size_t n,
                              double* C_host, cudaStream_t stream, TallSkinnyWorkspace* ws) {
  detail::check_shape(static_cast<std::int64_t>(n), na, nb);
  TallSkinnyColumns<T> A, B;
  A.count = na;
  B.count = nb;
  for (int j = 0; j < na; ++j) A.cols[j] = a + j * ld;
  for (int j = 0; j < nb; ++j) B.cols[j] = b + j * ld;
  gram_tall_skinny(A, B, static_cast<std::int64_t>(n), nullptr, C_host, stream, ws);
}

#define HS_INSTANTIATE(T)                                                                        \
  template void gemm_atb_tall_skinny<T>(std::int64_t, int, int, const T*, const T*, T*,          \
                                        cudaStream_t, TallSkinnyWorkspace*);                     \
  template void gram_tall_skinny_async<T>(                                                       \
      const TallSkinnyColumns<T>&, const TallSkinnyColumns<T>&, std::int64_t, const GridDesc*,   \
      double*, cudaStream_t, TallSkinnyWorkspace*);                                              \
  template void gram_tall_skinny<T>(const TallSkinnyColumns<T>&, const TallSkinnyColumns<T>&,    \
                                    std::int64_t, const GridDesc*, double*, cudaStream_t,        \
                                    TallSkinnyWorkspace*);                                       \
  template void gram_tall_skinny<T>(const T*, std::int64_t, int, const T*, int, double*,         \
                                    cudaStream_t, TallSkinnyWorkspace*);                         \
  template void gram_tall_skinny_async<T>(const T*, std::int64_t, int, const T*, int, double*,   \
                                          cudaStream_t, TallSkinnyWorkspace*);                   \
  template void gram_tall_skinny_strided<T>(const T*, int, const T*, int, std::size_t,           \
                                            std::size_t, double*, cudaStream_t,                  \
                                            TallSkinnyWorkspace*);                               \
  template void gemm_atb_tall_skinny_tuned<T>(const TallSkinnyTuning&, std::int64_t, int, int,   \
                                              const T*, const T*, T*, cudaStream_t,              \
                                              TallSkinnyWorkspace*);                             \
  template void gram_tall_skinny_tuned_async<T>(const TallSkinnyTuning&, const T*, std::int64_t, \
                                                int, const T*, int, double*, cudaStream_t,       \
                                                TallSkinnyWorkspace*);
HS_INSTANTIATE(float)
HS_INSTANTIATE(double)
#undef HS_INSTANTIATE

}  // namespace heatsolve::cuda
