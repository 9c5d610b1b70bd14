// Host API of the CUDA GEMMs: the tiled-GEMM ladder (Kirk & Hwu) as one templated design over
// float and double, and the tall-skinny C = A^T B that the Anderson-accelerated Jacobi solver
// needs for its Gram matrices. Plain C++ header (the host compiler includes it too).
//
// ---- Anderson layout (documented choice) --------------------------------------------------
// Anderson(m) keeps the last m residual differences dF_j (and iterate differences dX_j), each
// a full padded field of N = GridDesc::padded_size() values. We store the history
// COLUMN-MAJOR as m separate device fields ("column blocks"), addressed by an array of column
// pointers (TallSkinnyColumns):
//   * a new column is written by the ordinary field kernels (contiguous, coalesced), and the
//     ring buffer rotates pointers: nothing is ever copied or transposed;
//   * the tall-skinny kernel reads element r of every column of a chunk of R consecutive rows
//     with 16-byte loads (each column is contiguous), i.e. every element exactly once, and
//     masks ghost cells when given the GridDesc (so the Gram matrix is over interior cells);
//   * for F^T F (B == A) the columns are read once, not twice (B aliases A in shared memory).
// The row-major (N x m, lda = m) form is also supported; it is the layout the benchmark uses
// to compare with cuBLAS.
//
// Accumulation: the ladder accumulates in T (as cuBLAS does). The tall-skinny kernel takes the
// accumulator as a template parameter: gemm_atb_tall_skinny (benchmark vs cuBLAS) uses T, the
// solver entry points gram_tall_skinny* accumulate in double and return double.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/grid.hpp"

namespace heatsolve::cuda {

enum class GemmVariant {
  Naive,          // one thread per C element, operands from global memory
  Tiled,          // TILE x TILE shared tiles, two barriers per phase, zero-filled edges
  TiledPrefetch,  // + next tiles loaded into registers while the current ones are multiplied
  TiledUnroll,    // + the inner product loop fully unrolled (cumulative: prefetch + unroll)
  RegisterTiled,  // thread coarsening: 128x128 block tile, 8x8 outputs per thread, 16-byte
                  // loads, double-buffered shared memory (the fastest FMA rung)
  TensorCore,     // double: FP64 tensor cores (mma.sync m16n8k16 .f64 = DMMA), 128x128x16 block
                  // tile, 64x32 warp tiles, 3-stage cp.async pipeline. float: runs the
                  // register-tiled kernel (no pedantic FP32 tensor-core path; TF32 is not FP32)
};
const char* gemm_variant_name(GemmVariant v);  // "naive", "tiled", "tiled_prefetch", ...
std::vector<GemmVariant> all_gemm_variants();  // every rung (names, parsing, tests)
// The rungs with a kernel of their own in precision T, i.e. the benchmark's rows: all of them
// for double; float omits TensorCore (it would only repeat the register-tiled row).
template <typename T>
std::vector<GemmVariant> gemm_ladder();
bool parse_gemm_variant(const std::string& name, GemmVariant* out);  // also "fastest"

// C[M x N] = A[M x K] * B[K x N]; row-major, dense (lda = K, ldb = N, ldc = N), device
// pointers, any M, N, K >= 0. Asynchronous on `stream`.
template <typename T>
void gemm(GemmVariant v, int M, int N, int K, const T* A, const T* B, T* C, cudaStream_t stream);
// The FP64 tensor-core rung with an explicit mma shape, for the benchmark that times both:
// 16 = m16n8k16 (sm_90, the shape GemmVariant::TensorCore uses), 4 = m8n8k4 (sm_80+). Throws
// otherwise.
void gemm_tensor_core_f64(int mma_k, int M, int N, int K, const double* A, const double* B,
                          double* C, cudaStream_t stream);

namespace detail {
// 16-byte alignment, the condition of the kernels' vector paths.
inline bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}
}  // namespace detail

// ---- Tall-skinny C = A^T B ------------------------------------------------------------------
constexpr int kTallSkinnyMax = 16;  // m, n <= 16

// Device scratch of the tall-skinny kernels (per-block partials), grown on demand (RAII).
class TallSkinnyWorkspace {
 public:
  TallSkinnyWorkspace() = default;
  ~TallSkinnyWorkspace();
  TallSkinnyWorkspace(const TallSkinnyWorkspace&) = delete;
  TallSkinnyWorkspace& operator=(const TallSkinnyWorkspace&) = delete;
  void* reserve(std::size_t bytes);        // returns a buffer of at least `bytes`
  double* host_result(std::size_t count);  // pinned, for the *_host entry points

 private:
  void* d_ = nullptr;
  std::size_t bytes_ = 0;
  double* h_ = nullptr;
  std::size_t h_count_ = 0;
};
TallSkinnyWorkspace& default_tall_skinny_workspace();  // per thread

// Row-major form: A is N x m (lda = m), B is N x n (ldb = n); C (m x n, row-major, ldc = n)
// on the device, accumulated in T. Deterministic (fixed grid, fixed-order partial sums).
template <typename T>
void gemm_atb_tall_skinny(std::int64_t N, int m, int n, const T* A, const T* B, T* C,
                          cudaStream_t stream, TallSkinnyWorkspace* ws = nullptr);

// Column-block form for Anderson: column j of A is the contiguous array cols[j][0..N).
template <typename T>
struct TallSkinnyColumns {
  const T* cols[kTallSkinnyMax] = {};
  int count = 0;
};

// Device-side API the Anderson solver calls. G = A^T B over rows 0..N-1, or, when `mask` is
// given (N must then be mask->padded_size()), over the interior cells of that grid only.
// B may equal A (same pointers, F^T F): the columns are then read once.
//   gram_tall_skinny_async: C_dev (m x n, row-major, double) on the device, no sync.
//   gram_tall_skinny:       C_host (m x n, row-major, double), synchronises the stream.
template <typename T>
void gram_tall_skinny_async(const TallSkinnyColumns<T>& A, const TallSkinnyColumns<T>& B,
                            std::int64_t N, const GridDesc* mask, double* C_dev,
                            cudaStream_t stream, TallSkinnyWorkspace* ws = nullptr);
template <typename T>
void gram_tall_skinny(const TallSkinnyColumns<T>& A, const TallSkinnyColumns<T>& B, std::int64_t N,
                      const GridDesc* mask, double* C_host, cudaStream_t stream,
                      TallSkinnyWorkspace* ws = nullptr);
// Column-major history with a leading dimension (what Backend::gram passes): column j of A
// is a + j*ld, n elements long (likewise B). Vector loads need ld*sizeof(T) % 16 == 0 (pad
// ld); otherwise the scalar-load path runs. Double result on the host; syncs the stream.
template <typename T>
void gram_tall_skinny_strided(const T* a, int na, const T* b, int nb, std::size_t ld, std::size_t n,
                              double* C_host, cudaStream_t stream,
                              TallSkinnyWorkspace* ws = nullptr);
// Row-major history (N x m and N x n, lda = m, ldb = n), double result on the host: the
// signature sketched in the issue.
template <typename T>
void gram_tall_skinny(const T* A, std::int64_t N, int m, const T* B, int n, double* C_host,
                      cudaStream_t stream, TallSkinnyWorkspace* ws = nullptr);
// Same, result (double, m x n row-major) left on the device, no sync.
template <typename T>
void gram_tall_skinny_async(const T* A, std::int64_t N, int m, const T* B, int n, double* C_dev,
                            cudaStream_t stream, TallSkinnyWorkspace* ws = nullptr);

// Tall-skinny tuning (compile-time knobs; every candidate is instantiated, timed side by side by
// the GEMM bench and checked by the tests; the entry points above use the choice in
// gemm_tall_skinny.cu). chunk_scale multiplies the rows per chunk (bytes in flight per block);
// min_blocks is the resident blocks per SM asked of ptxas (1: its own choice).
struct TallSkinnyTuning {
  int chunk_scale = 1;
  int min_blocks = 1;
};
std::vector<TallSkinnyTuning> tall_skinny_tunings();
std::string tall_skinny_tuning_name(const TallSkinnyTuning& t);  // "s2b3"
// Row-major forms with an explicit candidate (std::invalid_argument for any other).
template <typename T>
void gemm_atb_tall_skinny_tuned(const TallSkinnyTuning& t, std::int64_t N, int m, int n, const T* A,
                                const T* B, T* C, cudaStream_t stream,
                                TallSkinnyWorkspace* ws = nullptr);
template <typename T>
void gram_tall_skinny_tuned_async(const TallSkinnyTuning& t, const T* A, std::int64_t N, int m,
                                  const T* B, int n, double* C_dev, cudaStream_t stream,
                                  TallSkinnyWorkspace* ws = nullptr);

}  // namespace heatsolve::cuda
