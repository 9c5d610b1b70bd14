// The tiled-GEMM ladder: naive, tiled, tiled+prefetch, tiled+unroll, register-tiled.
// Row-major C[M x N] = A[M x K] * B[K x N], float and double, any shape.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/reduction_kernels.cuh"  // VecT

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
  }
  return "unknown";
}

std::vector<GemmVariant> all_gemm_variants() {
  return {GemmVariant::Naive, GemmVariant::Tiled, GemmVariant::TiledPrefetch,
          GemmVariant::TiledUnroll, GemmVariant::RegisterTiled};
}

bool parse_gemm_variant(const std::string& name, GemmVariant* out) {
  for (GemmVariant v : all_gemm_variants())
    if (name == gemm_variant_name(v)) {
      *out = v;
      return true;
    }
  if (name == "fastest" || name == "coarsened") {
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

template <class T>
void launch_gemm(GemmVariant v, int M, int N, int K, const T* A, const T* B, T* C, cudaStream_t s) {
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
    case GemmVariant::RegisterTiled: {
      using Cfg = RegTileConfig<T>;
      constexpr int VW = 16 / sizeof(T);
      const auto aligned = [](const void* p) {
        return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
      };
      const bool vec = K % VW == 0 && N % VW == 0 && aligned(A) && aligned(B) && aligned(C);
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
