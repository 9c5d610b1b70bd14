// The tiled-GEMM ladder: naive, tiled, tiled+prefetch, tiled+unroll, register-tiled, and the
// FP64 tensor-core rung (double only). Row-major C[M x N] = A[M x K] * B[K x N], float and
// double, any shape.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/gemm/cuda/gemm.cuh"
#include "kernels/reduction/cuda/reduction_kernels.cuh"  // VecT

namespace heatsolve::cuda {

const char* gemm_variant_name(GemmVariant v) {
  switch (v) {
    case GemmVariant::Naive:
      return "naive";
    case GemmVariant::Tiled:
      return "tiled";
    case GemmVariant::TiledPrefetch:
      return "tiled_prefetch";
    case GemmVariant::TiledUnroll:
      return "tiled_unroll";
    case GemmVariant::RegisterTiled:
      return "register_tiled";
    case GemmVariant::TensorCore:
      return "tensor_core";
  }
  return "unknown";
}

std::vector<GemmVariant> all_gemm_variants() {
  return {GemmVariant::Naive,       GemmVariant::Tiled,         GemmVariant::TiledPrefetch,
          GemmVariant::TiledUnroll, GemmVariant::RegisterTiled, GemmVariant::TensorCore};
}

template <typename T>
std::vector<GemmVariant> gemm_ladder() {
  std::vector<GemmVariant> v = all_gemm_variants();
  if constexpr (!std::is_same_v<T, double>)
    v.erase(std::remove(v.begin(), v.end(), GemmVariant::TensorCore), v.end());
  return v;
}
template std::vector<GemmVariant> gemm_ladder<float>();
template std::vector<GemmVariant> gemm_ladder<double>();

bool parse_gemm_variant(const std::string& name, GemmVariant* out) {
  for (GemmVariant v : all_gemm_variants())
    if (name == gemm_variant_name(v)) {
      *out = v;
      return true;
    }
  if (name == "fastest") {  // tensor_core: DMMA in double, the register-tiled kernel in float
    *out = GemmVariant::TensorCore;
    return true;
  }
  if (name == "coarsened") {
    *out = GemmVariant::RegisterTiled;
    return true;
  }
  return false;
}

namespace detail {

constexpr int kNaiveBlock = 16;
constexpr int kTile = 32;  // tiled rungs: 32 x 32 threads, one output each

// Rung 1: one thread per output; a row of A and a column of B straight from global memory.
template <class T>
__global__ void gemm_naive(int M, int N, int K, const T* __restrict__ A, const T* __restrict__ B,
                           T* __restrict__ C) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  const T* a = A + std::int64_t(row) * K;
  T acc = 0;
  for (int k = 0; k < K; ++k) acc += a[k] * B[std::int64_t(k) * N + col];
  C[std::int64_t(row) * N + col] = acc;
}

// Rungs 2-4: TILE x TILE shared tiles, out-of-range elements loaded as zeros.
//   kPrefetch: the next phase's elements are loaded into registers before the current tiles
//              are multiplied (the loads' latency hides behind the arithmetic);
//   kUnroll:   the TILE-long inner product is fully unrolled (rung 2/3 keep `unroll 1`).
template <class T, int TILE, bool kPrefetch, bool kUnroll>
__global__ void __launch_bounds__(TILE* TILE)
    gemm_tiled(int M, int N, int K, const T* __restrict__ A, const T* __restrict__ B,
               T* __restrict__ C) {
  __shared__ T As[TILE][TILE];
  __shared__ T Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  auto load_a = [&](int ph) {
    const int k = ph * TILE + tx;
    return (row < M && k < K) ? A[std::int64_t(row) * K + k] : T(0);
  };
  auto load_b = [&](int ph) {
    const int k = ph * TILE + ty;
    return (k < K && col < N) ? B[std::int64_t(k) * N + col] : T(0);
  };
  const int phases = (K + TILE - 1) / TILE;
  T acc = 0;
  T ra = 0, rb = 0;
  if constexpr (kPrefetch) {
    if (phases > 0) {
      ra = load_a(0);
      rb = load_b(0);
    }
  }
  for (int ph = 0; ph < phases; ++ph) {
    if constexpr (kPrefetch) {
      As[ty][tx] = ra;
      Bs[ty][tx] = rb;
    } else {
      As[ty][tx] = load_a(ph);
      Bs[ty][tx] = load_b(ph);
    }
    __syncthreads();
    if constexpr (kPrefetch) {
      if (ph + 1 < phases) {
        ra = load_a(ph + 1);
        rb = load_b(ph + 1);
      }
    }
    if constexpr (kUnroll) {
#pragma unroll
      for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    } else {
#pragma unroll 1
      for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    }
    __syncthreads();
  }
  if (row < M && col < N) C[std::int64_t(row) * N + col] = acc;
}

// Rung 5, thread coarsening / register tiling. A block computes a BM x BN tile of C with
// (BM/TM) x (BN/TN) threads; each thread owns TM x TN outputs laid out as 2 x 2 sub-blocks
// (rows ty*TM/2 + [0, TM/2) and BM/2 + ..., columns likewise) so that a warp's shared-memory
// reads are 16-byte, conflict-free and mostly broadcasts. A is stored transposed (As[k][m]).
// Shared memory is double-buffered: the next BK slice is fetched from global memory into
// registers while the current one is multiplied, one barrier per slice.
// kVec: 16-byte global loads/stores (requires K and N multiples of the vector width and
// 16-byte aligned pointers); otherwise scalar, bounds-checked loads.
template <class T, int BM, int BN, int BK, int TM, int TN, bool kVec>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    gemm_regtile(int M, int N, int K, const T* __restrict__ A, const T* __restrict__ B,
                 T* __restrict__ C) {
  constexpr int NT = (BM / TM) * (BN / TN);
  constexpr int VW = kVec ? int(16 / sizeof(T)) : 1;
  constexpr int TX = BN / TN;
  constexpr int HM = TM / 2, HN = TN / 2;
  constexpr int PAD = 16 / sizeof(T);
  constexpr int A_VPR = BK / VW, LA = BM * BK / VW / NT;
  constexpr int B_VPR = BN / VW, LB = BK * BN / VW / NT;
  static_assert(LA * VW * NT == BM * BK && LB * VW * NT == BK * BN, "tile/thread mismatch");
  static_assert(HN % VW == 0 || !kVec, "output vector width");
  using V = VecT<T, VW>;
  using VA = VecT<T, HM>;
  using VB = VecT<T, HN>;

  __shared__ __align__(32) T As[2][BK][BM + PAD];
  __shared__ __align__(32) T Bs[2][BK][BN];

  const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  V ra[LA], rb[LB];
  auto gload = [&](int k0) {
#pragma unroll
    for (int l = 0; l < LA; ++l) {
      const int idx = tid + l * NT;
      const int r = idx / A_VPR, kv = (idx % A_VPR) * VW;
      const int gr = m0 + r, gk = k0 + kv;
      if (gr < M && gk < K) {
        ra[l] = *reinterpret_cast<const V*>(A + std::int64_t(gr) * K + gk);
      } else {
#pragma unroll
        for (int e = 0; e < VW; ++e) ra[l].v[e] = T(0);
      }
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
      const int idx = tid + l * NT;
      const int r = idx / B_VPR, nv = (idx % B_VPR) * VW;
      const int gk = k0 + r, gn = n0 + nv;
      if (gk < K && gn < N) {
        rb[l] = *reinterpret_cast<const V*>(B + std::int64_t(gk) * N + gn);
      } else {
#pragma unroll
        for (int e = 0; e < VW; ++e) rb[l].v[e] = T(0);
      }
    }
  };
  auto sstore = [&](int buf) {
#pragma unroll
    for (int l = 0; l < LA; ++l) {
      const int idx = tid + l * NT;
      const int r = idx / A_VPR, kv = (idx % A_VPR) * VW;
#pragma unroll
      for (int e = 0; e < VW; ++e) As[buf][kv + e][r] = ra[l].v[e];
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
      const int idx = tid + l * NT;
      const int r = idx / B_VPR, nv = (idx % B_VPR) * VW;
      *reinterpret_cast<V*>(&Bs[buf][r][nv]) = rb[l];
    }
  };

  T acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = T(0);

  gload(0);
  sstore(0);
  __syncthreads();
  int buf = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool next = k0 + BK < K;
    if (next) gload(k0 + BK);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      T a[TM], b[TN];
      const VA a0 = *reinterpret_cast<const VA*>(&As[buf][kk][ty * HM]);
      const VA a1 = *reinterpret_cast<const VA*>(&As[buf][kk][BM / 2 + ty * HM]);
      const VB b0 = *reinterpret_cast<const VB*>(&Bs[buf][kk][tx * HN]);
      const VB b1 = *reinterpret_cast<const VB*>(&Bs[buf][kk][BN / 2 + tx * HN]);
#pragma unroll
      for (int i = 0; i < HM; ++i) {
        a[i] = a0.v[i];
        a[HM + i] = a1.v[i];
      }
#pragma unroll
      for (int j = 0; j < HN; ++j) {
        b[j] = b0.v[j];
        b[HN + j] = b1.v[j];
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    if (next) sstore(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = m0 + (i < HM ? ty * HM + i : BM / 2 + ty * HM + (i - HM));
    if (r >= M) continue;
    T* crow = C + std::int64_t(r) * N;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c0 = n0 + h * (BN / 2) + tx * HN;
      if (kVec && c0 + HN <= N) {
#pragma unroll
        for (int q = 0; q < HN / VW; ++q) {
          V out;
#pragma unroll
          for (int e = 0; e < VW; ++e) out.v[e] = acc[i][h * HN + q * VW + e];
          *reinterpret_cast<V*>(crow + c0 + q * VW) = out;
        }
      } else {
#pragma unroll
        for (int j = 0; j < HN; ++j)
          if (c0 + j < N) crow[c0 + j] = acc[i][h * HN + j];
      }
    }
  }
}

template <class T>
struct RegTileConfig {
  static constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
};

// ---- Rung 6: FP64 tensor cores (DMMA) ------------------------------------------------------
// mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 (sm_80+, plain sm_90; SASS DMMA.884):
// D (8x8) = A (8x4) B (4x8) + C, one warp, fragments per lane l with g = l / 4, t = l % 4
// (PTX ISA, "Matrix Fragments for mma.m8n8k4 with .f64 floating point type"):
//   A, row-major 8x4:  a0 = A[g][t]
//   B, "col" 4x8:      b0 = B[t][g]
//   C and D, 8x8:      {c0, c1} = {C[g][2t], C[g][2t + 1]}
__device__ __forceinline__ void dmma_m8n8k4(double (&d)[2], double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
      : "+d"(d[0]), "+d"(d[1])
      : "d"(a), "d"(b));
#else
  (void)d, (void)a, (void)b;
  __trap();  // the launcher never selects this rung below sm_80
#endif
}

// Optional sm_90 shape mma.sync.aligned.m16n8k16.row.col.f64 (PTX ISA 7.8; CuTe's
// SM90_16x8x16_F64F64F64F64_TN layouts): with h, q in {0, 1} and v in {0 .. 3}
//   a[h + 2v] = A[g + 8h][t + 4v],  b[v] = B[t + 4v][g],  d[e + 2h] = D[g + 8h][2t + e],
// i.e. exactly the m8n8k4 fragments of two m8 tiles (rows +8) and four k-steps: the same
// shared-memory layout and fragment loads feed it, with 8x fewer mma instructions.
__device__ __forceinline__ void dmma_m16n8k16(double (&d0)[2], double (&d1)[2],
                                              const double (&a)[8], const double (&b)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
      : "+d"(d0[0]), "+d"(d0[1]), "+d"(d1[0]), "+d"(d1[1])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
        "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
#else
  (void)d0, (void)d1, (void)a, (void)b;
  __trap();
#endif
}

// A block computes a BM x BN tile of C with (BM/WM) x (BN/WN) warps; a warp owns a WM x WN
// tile as (WM/8) x (WN/8) m8n8 accumulators (2 doubles per lane each), and per k-step of 4
// loads WM/8 A fragments and WN/8 B fragments (one LDS.64 each) for (WM/8)(WN/8) DMMAs.
// Shared memory, STAGES-deep ring of BK slices filled by cp.async (one commit group per slice):
//   As[s][m][k], row stride SA = BK + 4 doubles;  Bs[s][k][n], row stride SB = BN + 4.
// Both strides are 4 (mod 16) doubles, so a fragment read (8 rows x 4 columns of A, or 4 rows
// x 8 columns of B, 256 bytes per warp) hits every 8-byte bank pair exactly twice: the minimum
// of 2 wavefronts; rows stay 16-byte aligned for the cp.async writes.
// Pipeline: the slice for k-tile kt + STAGES - 1 is requested while kt is multiplied; fragments
// are double-buffered in registers, and the wait + barrier for the next slice is placed before
// the last k-step of the current one, so its DMMAs cover the barrier (one barrier per slice).
// kVec: 16-byte copies (K, N even, A, B, C 16-byte aligned); otherwise 8-byte copies. Either way
// out-of-range elements are zero-filled and only in-range C elements are written.
// One thread's share of a slice: CP copies of VW doubles at rows row, row + RSTEP, ... of a
// row-major matrix (leading dimension ld, `rows` rows) into shared rows of stride SS;
// zero-filled past the last row or when the column chunk is outside (`col_ok` false).
// `any` is a valid address, never read, for the zero-filled copies.
template <int CP, int RSTEP, int SS, int VW>
__device__ __forceinline__ void stage_rows(double* dst, const double* src, std::int64_t ld, int row,
                                           int rows, bool col_ok, const double* any) {
#pragma unroll
  for (int i = 0; i < CP; ++i) {
    const bool ok = row + i * RSTEP < rows && col_ok;
    cp_async_zfill<VW * 8>(shared_address(dst + i * RSTEP * SS),
                           ok ? src + std::int64_t(i) * RSTEP * ld : any, ok);
  }
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MMA_K, bool kVec>
struct DmmaTile {
  static constexpr int kThreads = (BM / WM) * (BN / WN) * 32;
  static constexpr int SA = BK + 4, SB = BN + 4;
  static constexpr std::size_t kSmemBytes =
      std::size_t(STAGES) * (BM * SA + BK * SB) * sizeof(double);
};

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MMA_K, bool kVec>
__global__ void __launch_bounds__(DmmaTile<BM, BN, BK, WM, WN, STAGES, MMA_K, kVec>::kThreads, 1)
    gemm_dmma(int M, int N, int K, const double* __restrict__ A, const double* __restrict__ B,
              double* __restrict__ C) {
  using Tile = DmmaTile<BM, BN, BK, WM, WN, STAGES, MMA_K, kVec>;
  constexpr int NT = Tile::kThreads, SA = Tile::SA, SB = Tile::SB;
  constexpr int WARPS_N = BN / WN;
  constexpr int FM = WM / 8, FN = WN / 8;  // m8n8 tiles per warp
  constexpr int KSTEPS = BK / 4;           // k4 steps per slice
  constexpr int VW = kVec ? 2 : 1;         // doubles per cp.async
  constexpr int A_CPR = BK / VW, A_CP = BM * BK / VW / NT;
  constexpr int B_CPR = BN / VW, B_CP = BK * BN / VW / NT;
  constexpr int A_RSTEP = NT / A_CPR, B_RSTEP = NT / B_CPR;  // rows between a thread's copies
  static_assert(NT % A_CPR == 0 && NT % B_CPR == 0, "copy rows");
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 8 == 0 && WN % 8 == 0, "warp tiling");
  static_assert(BK % 4 == 0 && KSTEPS >= 2 && STAGES >= 2, "pipeline shape");
  static_assert(MMA_K == 4 || (MMA_K == 16 && BK % 16 == 0 && FM % 2 == 0), "mma shape");
  static_assert(A_CP * VW * NT == BM * BK && B_CP * VW * NT == BK * BN, "copies per thread");
  static_assert(SA % 16 == 4 && SB % 16 == 4 && SA % 2 == 0 && SB % 2 == 0, "smem strides");

  extern __shared__ __align__(16) double dmma_smem[];
  double* const As = dmma_smem;                     // [STAGES][BM][SA]
  double* const Bs = dmma_smem + STAGES * BM * SA;  // [STAGES][BK][SB]

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, t = lane % 4;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int ktiles = (K + BK - 1) / BK;

  // Slice kt of A (BM x BK) and B (BK x BN) into ring slot `stage`. Thread tid copies column
  // chunk tid % CPR of rows tid / CPR + i * (NT / CPR). With kVec a copy covers elements
  // gk, gk + 1 (gk even, K even), so gk < K bounds both; likewise gn < N for B.
  const int a_r = tid / A_CPR, a_c = (tid % A_CPR) * VW;
  const int b_r = tid / B_CPR, b_c = (tid % B_CPR) * VW;
  auto load_slice = [&](int kt, int stage) {
    const int k0 = kt * BK, gk = k0 + a_c, gn = n0 + b_c;
    stage_rows<A_CP, A_RSTEP, SA, VW>(As + stage * BM * SA + a_r * SA + a_c,
                                      A + std::int64_t(m0 + a_r) * K + gk, K, m0 + a_r, M, gk < K,
                                      A);
    stage_rows<B_CP, B_RSTEP, SB, VW>(Bs + stage * BK * SB + b_r * SB + b_c,
                                      B + std::int64_t(k0 + b_r) * N + gn, N, k0 + b_r, K, gn < N,
                                      B);
  };
  // Fragments of k-step ks of ring slot `stage` (layout above: a = A[g][t], b = B[t][g]).
  auto load_frags = [&](double(&a)[FM], double(&b)[FN], int stage, int ks) {
    const double* as = As + stage * BM * SA + (wm + g) * SA + ks * 4 + t;
    const double* bs = Bs + stage * BK * SB + (ks * 4 + t) * SB + wn + g;
#pragma unroll
    for (int i = 0; i < FM; ++i) a[i] = as[i * 8 * SA];
#pragma unroll
    for (int j = 0; j < FN; ++j) b[j] = bs[j * 8];
  };

  double acc[FM][FN][2];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) acc[i][j][0] = acc[i][j][1] = 0.0;

  if (ktiles > 0) {
    // Prologue: slices 0 .. STAGES-2 in flight, one commit group each (empty past the end, so
    // that group j always holds slice j and wait_group counts stay uniform).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < ktiles) load_slice(s, s);
      cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();

    if constexpr (MMA_K == 4) {
      double fa[2][FM], fb[2][FN];
      load_frags(fa[0], fb[0], 0, 0);
      int rd = 0, wr = STAGES - 1;  // ring slots being read / written
      for (int kt = 0; kt < ktiles; ++kt) {
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
          if (ks == KSTEPS - 1) {
            // Slice kt + 1 must have landed (groups 0 .. kt+1 of the STAGES + kt committed)
            // and be visible to all threads before its first fragments are read below. The
            // barrier also orders every read of slot kt - 1 (last one: k-step KSTEPS-2 of
            // slice kt - 1) before that slot is refilled at k-step 0 of slice kt + 1.
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            rd = rd + 1 == STAGES ? 0 : rd + 1;
          }
          // Next k-step's fragments (for ks == KSTEPS-1: k-step 0 of slice kt + 1; on the last
          // slice these are read but never used).
          load_frags(fa[(ks + 1) % 2], fb[(ks + 1) % 2], rd, (ks + 1) % KSTEPS);
          if (ks == 0) {
            // Refill the slot of slice kt - 1 (all reads of it precede the last barrier).
            if (kt + STAGES - 1 < ktiles) load_slice(kt + STAGES - 1, wr);
            cp_async_commit();
            wr = wr + 1 == STAGES ? 0 : wr + 1;
          }
#pragma unroll
          for (int i = 0; i < FM; ++i)
#pragma unroll
            for (int j = 0; j < FN; ++j) dmma_m8n8k4(acc[i][j], fa[ks % 2][i], fb[ks % 2][j]);
        }
      }
    } else {
      // m16n8k16: a whole 16-deep k chunk per instruction needs all its fragments at once, so
      // the barrier sits at the top of each slice (slot kt - 1 is free after it).
      for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (kt + STAGES - 1 < ktiles) load_slice(kt + STAGES - 1, (kt + STAGES - 1) % STAGES);
        cp_async_commit();
        const int rd = kt % STAGES;
#pragma unroll
        for (int kc = 0; kc < BK / 16; ++kc) {
          double fb[FN][4];  // b[v] = B[16kc + 4v + t][wn + 8j + g]
#pragma unroll
          for (int j = 0; j < FN; ++j)
#pragma unroll
            for (int v = 0; v < 4; ++v)
              fb[j][v] = Bs[rd * BK * SB + (kc * 16 + 4 * v + t) * SB + wn + 8 * j + g];
#pragma unroll
          for (int p = 0; p < FM / 2; ++p) {
            double fa[8];  // a[h + 2v] = A[wm + 16p + 8h + g][16kc + 4v + t]
#pragma unroll
            for (int v = 0; v < 4; ++v) {
              const double* as = As + rd * BM * SA + (wm + 16 * p + g) * SA + kc * 16 + 4 * v + t;
              fa[2 * v] = as[0];
              fa[2 * v + 1] = as[8 * SA];
            }
#pragma unroll
            for (int j = 0; j < FN; ++j) dmma_m16n8k16(acc[2 * p][j], acc[2 * p + 1][j], fa, fb[j]);
          }
        }
      }
    }
    cp_async_wait<0>();  // only empty groups can remain; leave none behind
  }

  // Epilogue: lane holds C[wm + 8i + g][wn + 8j + 2t + {0, 1}] of the block tile. With kVec
  // (N even, column even) a pair is in range as a whole: one 16-byte store.
#pragma unroll
  for (int i = 0; i < FM; ++i) {
    const int r = m0 + wm + i * 8 + g;
    if (r >= M) continue;
    double* const crow = C + std::int64_t(r) * N;
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      const int c = n0 + wn + j * 8 + 2 * t;
      if constexpr (kVec) {
        if (c < N) *reinterpret_cast<double2*>(crow + c) = make_double2(acc[i][j][0], acc[i][j][1]);
      } else {
        if (c < N) crow[c] = acc[i][j][0];
        if (c + 1 < N) crow[c + 1] = acc[i][j][1];
      }
    }
  }
}

// 128x128x16 block tile, 8 warps of 64x32 (32 DMMAs per k-step), 3 slices of 37 KiB in flight:
// 112 KiB of shared memory and ~200 registers, one block per SM.
struct DmmaConfig {
  static constexpr int BM = 128, BN = 128, BK = 16, WM = 64, WN = 32, STAGES = 3;
  // 16: the sm_90 m16n8k16 shape (8x fewer instructions than m8n8k4, same fragments); 4
  // (m8n8k4) is issue-bound on Hopper. The bench times both (docs/performance.md).
  static constexpr int MMA_K = 16;
};

template <int MMA_K, bool kVec>
void launch_dmma(int M, int N, int K, const double* A, const double* B, double* C, cudaStream_t s) {
  using Cfg = DmmaConfig;
  using Tile = DmmaTile<Cfg::BM, Cfg::BN, Cfg::BK, Cfg::WM, Cfg::WN, Cfg::STAGES, MMA_K, kVec>;
  auto* kernel = gemm_dmma<Cfg::BM, Cfg::BN, Cfg::BK, Cfg::WM, Cfg::WN, Cfg::STAGES, MMA_K, kVec>;
  // More than the default 48 KiB of dynamic shared memory needs an opt-in (per device; cheap,
  // so done at every launch rather than cached).
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  int(Tile::kSmemBytes)));
  const dim3 grid((N + Cfg::BN - 1) / Cfg::BN, (M + Cfg::BM - 1) / Cfg::BM);
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, s>>>(M, N, K, A, B, C);
}

template <int MMA_K>
void launch_dmma_any(int M, int N, int K, const double* A, const double* B, double* C,
                     cudaStream_t s) {
  if (K % 2 == 0 && N % 2 == 0 && aligned16(A) && aligned16(B) && aligned16(C))
    launch_dmma<MMA_K, true>(M, N, K, A, B, C, s);
  else
    launch_dmma<MMA_K, false>(M, N, K, A, B, C, s);
}

template <class T>
void launch_gemm(GemmVariant v, int M, int N, int K, const T* A, const T* B, T* C, cudaStream_t s) {
  // Float has no pedantic FP32 tensor-core path (TF32 rounds the operands to 10-bit mantissas):
  // its TensorCore rung is the register-tiled kernel.
  if constexpr (!std::is_same_v<T, double>) {
    if (v == GemmVariant::TensorCore) v = GemmVariant::RegisterTiled;
  }
  switch (v) {
    case GemmVariant::Naive: {
      const dim3 block(kNaiveBlock, kNaiveBlock);
      const dim3 grid((N + kNaiveBlock - 1) / kNaiveBlock, (M + kNaiveBlock - 1) / kNaiveBlock);
      gemm_naive<T><<<grid, block, 0, s>>>(M, N, K, A, B, C);
      break;
    }
    case GemmVariant::Tiled:
    case GemmVariant::TiledPrefetch:
    case GemmVariant::TiledUnroll: {
      const dim3 block(kTile, kTile);
      const dim3 grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile);
      if (v == GemmVariant::Tiled)
        gemm_tiled<T, kTile, false, false><<<grid, block, 0, s>>>(M, N, K, A, B, C);
      else if (v == GemmVariant::TiledPrefetch)
        gemm_tiled<T, kTile, true, false><<<grid, block, 0, s>>>(M, N, K, A, B, C);
      else
        gemm_tiled<T, kTile, true, true><<<grid, block, 0, s>>>(M, N, K, A, B, C);
      break;
    }
    case GemmVariant::TensorCore:
      if constexpr (std::is_same_v<T, double>)
        launch_dmma_any<DmmaConfig::MMA_K>(M, N, K, A, B, C, s);
      break;
    case GemmVariant::RegisterTiled: {
      using Cfg = RegTileConfig<T>;
      constexpr int VW = 16 / sizeof(T);
      const bool vec = K % VW == 0 && N % VW == 0 && aligned16(A) && aligned16(B) && aligned16(C);
      const dim3 block((Cfg::BM / Cfg::TM) * (Cfg::BN / Cfg::TN));
      const dim3 grid((N + Cfg::BN - 1) / Cfg::BN, (M + Cfg::BM - 1) / Cfg::BM);
      if (vec)
        gemm_regtile<T, Cfg::BM, Cfg::BN, Cfg::BK, Cfg::TM, Cfg::TN, true>
            <<<grid, block, 0, s>>>(M, N, K, A, B, C);
      else
        gemm_regtile<T, Cfg::BM, Cfg::BN, Cfg::BK, Cfg::TM, Cfg::TN, false>
            <<<grid, block, 0, s>>>(M, N, K, A, B, C);
      break;
    }
    default:
      throw std::invalid_argument("unknown GemmVariant");
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace detail

void gemm_tensor_core_f64(int mma_k, int M, int N, int K, const double* A, const double* B,
                          double* C, cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  if (mma_k == 4)
    detail::launch_dmma_any<4>(M, N, K, A, B, C, stream);
  else if (mma_k == 16)
    detail::launch_dmma_any<16>(M, N, K, A, B, C, stream);
  else
    throw std::invalid_argument("gemm_tensor_core_f64: mma_k is 4 or 16");
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void gemm(GemmVariant v, int M, int N, int K, const T* A, const T* B, T* C, cudaStream_t stream) {
  if (M < 0 || N < 0 || K < 0) throw std::invalid_argument("gemm: negative dimension");
  if (M == 0 || N == 0) return;
  detail::launch_gemm<T>(v, M, N, K, A, B, C, stream);
}

template void gemm<float>(GemmVariant, int, int, int, const float*, const float*, float*,
                          cudaStream_t);
template void gemm<double>(GemmVariant, int, int, int, const double*, const double*, double*,
                           cudaStream_t);

}  // namespace heatsolve::cuda
