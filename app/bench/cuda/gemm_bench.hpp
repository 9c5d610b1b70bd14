// GEMM ladder benchmark vs cuBLAS (pedantic FP32 / DGEMM) and tall-skinny A^T B vs cuBLAS,
// all in the same run. Plain C++ header; implemented in gemm_bench.cu.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace heatsolve::cuda {

struct GemmBenchRow {
  std::string kernel;  // naive .. register_tiled, tensor_core (double only), cublas
  std::string precision;
  int M = 0, N = 0, K = 0;
  double ms = 0;          // median
  double gflops = 0;      // 2 M N K / time
  double pct_cublas = 0;  // 100 * gflops / cuBLAS gflops at the same size
  double rel_err = 0;     // ||C - C_cublas||_F / ||C_cublas||_F
};

struct TallSkinnyBenchRow {
  std::string kernel;  // ours (T accumulation), ours_dacc (double accumulation), cublas
  std::string precision;
  std::int64_t N = 0;
  int m = 0, n = 0;
  double ms = 0;
  double gbs = 0;       // N (m + n) sizeof(T) / time: A and B read once
  double pct_copy = 0;  // of the copy kernel's (read + write) GB/s
  double rel_err = 0;   // ||C - C_dacc||_F / ||C_dacc||_F (ours_dacc: vs cuBLAS)
};

struct GemmBenchResult {
  std::string device;
  double copy_gbs = 0;
  std::vector<GemmBenchRow> gemm;
  std::vector<TallSkinnyBenchRow> tall_skinny;
};

// Square sizes 1024, 2048, 4096, 8192 up to max_size; precision "float" or "double".
GemmBenchResult run_gemm_benchmark(int max_size, const std::string& precision);

}  // namespace heatsolve::cuda
