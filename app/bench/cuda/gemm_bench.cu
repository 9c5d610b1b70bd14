#include <cublas_v2.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/bench/cuda/bench_util.cuh"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/gemm/cuda/gemm.cuh"
#include "app/bench/cuda/gemm_bench.hpp"
#include "app/bench/cuda/reduction_bench.hpp"

#define HS_CUBLAS_CHECK(expr)                                                   \
  do {                                                                          \
    const cublasStatus_t st_ = (expr);                                          \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                           \
      throw std::runtime_error(std::string(#expr) + " failed: cuBLAS status " + \
                               std::to_string(static_cast<int>(st_)));          \
  } while (0)

namespace heatsolve::cuda {
namespace {

class Cublas {
 public:
  explicit Cublas(cudaStream_t s) {
    HS_CUBLAS_CHECK(cublasCreate(&h_));
    HS_CUBLAS_CHECK(cublasSetStream(h_, s));
    // Pedantic: plain FP32 (no TF32 tensor cores) / FP64, the fair reference for FFMA code.
    HS_CUBLAS_CHECK(cublasSetMathMode(h_, CUBLAS_PEDANTIC_MATH));
  }
  ~Cublas() { cublasDestroy(h_); }
  // Row-major C[M x N] = A[M x K] B[K x N]  <=>  column-major C^T = B^T A^T.
  void gemm(int M, int N, int K, const float* A, const float* B, float* C) {
    const float one = 1, zero = 0;
    HS_CUBLAS_CHECK(
        cublasSgemm(h_, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N));
  }
  void gemm(int M, int N, int K, const double* A, const double* B, double* C) {
    const double one = 1, zero = 0;
    HS_CUBLAS_CHECK(
        cublasDgemm(h_, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N));
  }
  // Row-major C[m x n] = A^T B, A: N x m, B: N x n. Column-major: A is m x N (lda m), B is
  // n x N (ldb n), C^T (n x m, ldc n) = B A^T.
  void atb(std::int64_t N, int m, int n, const float* A, const float* B, float* C) {
    const float one = 1, zero = 0;
    HS_CUBLAS_CHECK(
        cublasSgemm(h_, CUBLAS_OP_N, CUBLAS_OP_T, n, m, int(N), &one, B, n, A, m, &zero, C, n));
  }
  void atb(std::int64_t N, int m, int n, const double* A, const double* B, double* C) {
    const double one = 1, zero = 0;
    HS_CUBLAS_CHECK(
        cublasDgemm(h_, CUBLAS_OP_N, CUBLAS_OP_T, n, m, int(N), &one, B, n, A, m, &zero, C, n));
  }

 private:
  cublasHandle_t h_ = nullptr;
};

template <class T>
std::vector<double> to_host(const T* d, std::size_t n, cudaStream_t s) {
  std::vector<T> h(n);
  CUDA_CHECK(cudaMemcpyAsync(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return std::vector<double>(h.begin(), h.end());
}

double rel_fro(const std::vector<double>& c, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < std::int64_t(c.size()); ++i) {
    const double d = c[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

template <class T>
void bench_gemm(int max_size, const std::string& prec, cudaStream_t s, Cublas& cb,
                GemmBenchResult& res) {
  for (int sz = 1024; sz <= max_size; sz *= 2) {
    const int M = sz, N = sz, K = sz;
    const std::size_t ne = std::size_t(sz) * sz;
    DeviceBuffer<T> A(ne), B(ne), C(ne), Cref(ne);
    fill_uniform(A.get(), ne, -1.0, 1.0, 1u + sz, s);
    fill_uniform(B.get(), ne, -1.0, 1.0, 2u + sz, s);
    const double flops = 2.0 * M * N * K;
    const double budget = sz >= 8192 ? 400.0 : 200.0;
    const double t_cb =
        time_median_ms([&] { cb.gemm(M, N, K, A.get(), B.get(), Cref.get()); }, s, budget, 2, 20);
    const auto ref = to_host(Cref.get(), ne, s);
    const double cb_gflops = flops / (t_cb * 1e6);
    // One row: `run` computes C (poisoned first, so an unwritten element fails rel_err).
    const auto time_row = [&](const std::string& name, const auto& run) {
      CUDA_CHECK(cudaMemsetAsync(C.get(), 0xFF, ne * sizeof(T), s));  // NaN poison
      const double t = time_median_ms(run, s, budget, 1, 20);
      GemmBenchRow r;
      r.kernel = name;
      r.precision = prec;
      r.M = M, r.N = N, r.K = K;
      r.ms = t;
      r.gflops = flops / (t * 1e6);
      r.pct_cublas = 100.0 * r.gflops / cb_gflops;
      r.rel_err = rel_fro(to_host(C.get(), ne, s), ref);
      res.gemm.push_back(r);
    };
    for (GemmVariant v : gemm_ladder<T>())  // float: no tensor_core row (see gemm.cuh)
      time_row(gemm_variant_name(v), [&] { gemm(v, M, N, K, A.get(), B.get(), C.get(), s); });
    if constexpr (std::is_same_v<T, double>)  // the m8n8k4 DMMA shape, for comparison
      time_row("tensor_core_m8n8k4",
               [&] { gemm_tensor_core_f64(4, M, N, K, A.get(), B.get(), C.get(), s); });
    GemmBenchRow r;
    r.kernel = "cublas";
    r.precision = prec;
    r.M = M, r.N = N, r.K = K;
    r.ms = t_cb;
    r.gflops = cb_gflops;
    r.pct_cublas = 100.0;
    res.gemm.push_back(r);
  }
}

template <class T>
void bench_tall_skinny(const std::string& prec, cudaStream_t s, Cublas& cb, GemmBenchResult& res) {
  const int shapes[][2] = {{1, 1}, {4, 4}, {8, 8}, {16, 16}, {16, 1}};
  const double target_bytes = double(1u << 30);  // ~1 GiB of A and B per call
  TallSkinnyWorkspace ws;
  for (const auto& sh : shapes) {
    const int m = sh[0], n = sh[1];
    const std::int64_t N = static_cast<std::int64_t>(target_bytes / ((m + n) * sizeof(T)));
    DeviceBuffer<T> A(std::size_t(N) * m), B(std::size_t(N) * n), C(std::size_t(m) * n);
    DeviceBuffer<double> Cd(std::size_t(m) * n);
    fill_uniform(A.get(), std::size_t(N) * m, -1.0, 1.0, 11u + m, s);
    fill_uniform(B.get(), std::size_t(N) * n, -1.0, 1.0, 13u + n, s);
    const double bytes = double(N) * (m + n) * sizeof(T);
    auto row = [&](const char* name, double ms, double err) {
      TallSkinnyBenchRow r;
      r.kernel = name;
      r.precision = prec;
      r.N = N, r.m = m, r.n = n;
      r.ms = ms;
      r.gbs = bytes / (ms * 1e6);
      r.pct_copy = 100.0 * r.gbs / res.copy_gbs;
      r.rel_err = err;
      res.tall_skinny.push_back(r);
    };
    // Double-accumulated reference (our kernel, double accumulator).
    const double t_dacc = time_median_ms(
        [&] { gram_tall_skinny_async(A.get(), N, m, B.get(), n, Cd.get(), s, &ws); }, s);
    const auto cdacc = to_host(Cd.get(), std::size_t(m) * n, s);
    const double t_ours = time_median_ms(
        [&] { gemm_atb_tall_skinny(N, m, n, A.get(), B.get(), C.get(), s, &ws); }, s);
    const auto c_ours = to_host(C.get(), std::size_t(m) * n, s);
    const double t_cb = time_median_ms([&] { cb.atb(N, m, n, A.get(), B.get(), C.get()); }, s);
    const auto c_cb = to_host(C.get(), std::size_t(m) * n, s);
    row("ours", t_ours, rel_fro(c_ours, cdacc));
    row("ours_dacc", t_dacc, rel_fro(cdacc, c_cb));
    row("cublas", t_cb, rel_fro(c_cb, cdacc));
    // Every compiled tuning of the kernel ("s<chunk scale>b<min blocks per SM>"): ours_* in T,
    // dacc_* in double. 1 x 1 is a dot product on the reduction rung: no tuning applies.
    if (m == n) {  // Anderson's layout: m column arrays (the same bytes read as columns)
      TallSkinnyColumns<T> ca, cbc;
      ca.count = m;
      cbc.count = n;
      for (int j = 0; j < m; ++j) ca.cols[j] = A.get() + std::size_t(j) * N;
      for (int j = 0; j < n; ++j) cbc.cols[j] = B.get() + std::size_t(j) * N;
      const double t_c =
          time_median_ms([&] { gram_tall_skinny_async(ca, cbc, N, nullptr, Cd.get(), s, &ws); }, s);
      row("cols_dacc", t_c, 0.0);  // other data than the rows above: no error column
    }
    if (m * n > 1) {
      for (const TallSkinnyTuning& tu : tall_skinny_tunings()) {
        const std::string name = tall_skinny_tuning_name(tu);
        const double t_t = time_median_ms(
            [&] { gemm_atb_tall_skinny_tuned(tu, N, m, n, A.get(), B.get(), C.get(), s, &ws); }, s);
        row(("ours_" + name).c_str(), t_t, rel_fro(to_host(C.get(), std::size_t(m) * n, s), cdacc));
        const double t_d = time_median_ms(
            [&] { gram_tall_skinny_tuned_async(tu, A.get(), N, m, B.get(), n, Cd.get(), s, &ws); },
            s);
        row(("dacc_" + name).c_str(), t_d,
            rel_fro(to_host(Cd.get(), std::size_t(m) * n, s), cdacc));
      }
    }
  }
}

}  // namespace

GemmBenchResult run_gemm_benchmark(int max_size, const std::string& precision) {
  GemmBenchResult res;
  res.device = cuda_device_name();
  res.copy_gbs = measure_copy_bandwidth(std::size_t(1) << 30);
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  {
    Cublas cb(s);
    if (precision == "double") {
      bench_gemm<double>(max_size, precision, s, cb, res);
      bench_tall_skinny<double>(precision, s, cb, res);
    } else {
      bench_gemm<float>(max_size, precision, s, cb, res);
      bench_tall_skinny<float>(precision, s, cb, res);
    }
  }
  CUDA_CHECK(cudaStreamDestroy(s));
  return res;
}

}  // namespace heatsolve::cuda
