#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>

#include "app/bench/bench_kernels.hpp"
#include "kernels/backend.hpp"
#ifdef HEATSOLVE_HAVE_CUDA
#include "app/bench/cuda/gemm_bench.hpp"
#include "app/bench/cuda/reduction_bench.hpp"
#endif

namespace heatsolve {

namespace {
bool check_available() {
#ifdef HEATSOLVE_HAVE_CUDA
  if (cuda_device_available()) return true;
  std::fprintf(stderr, "heatsolve bench: no CUDA device available on this machine\n");
#else
  std::fprintf(stderr,
               "heatsolve bench: this build has no CUDA support (the reduction and GEMM "
               "benchmarks need a GPU)\n");
#endif
  return false;
}
}  // namespace

int run_reduction_bench(std::size_t n, const std::string& precision, bool json) {
  if (!check_available()) return 1;
#ifdef HEATSOLVE_HAVE_CUDA
  try {
    const auto res = cuda::run_reduction_benchmark(n, precision);
    if (json) {
      nlohmann::json j;
      j["device"] = res.device;
      j["copy_gbs"] = res.copy_gbs;
      j["memcpy_gbs"] = res.memcpy_gbs;
      j["rows"] = nlohmann::json::array();
      for (const auto& r : res.rows)
        j["rows"].push_back({{"kernel", r.kernel},
                             {"op", r.op},
                             {"precision", r.precision},
                             {"n", r.n},
                             {"bytes", r.bytes},
                             {"ms", r.ms},
                             {"gbs", r.gbs},
                             {"pct_copy", r.pct_copy},
                             {"speedup_vs_r1", r.speedup_vs_r1},
                             {"value", r.value},
                             {"rel_err", r.rel_err},
                             {"deterministic", r.deterministic}});
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print(
        "Reductions on {} ({}, n = {}): copy kernel {:.0f} GB/s, cudaMemcpy D2D {:.0f} GB/s "
        "(read + write)\n",
        res.device, precision, n, res.copy_gbs, res.memcpy_gbs);
    fmt::print("{:<28} {:<7} {:>12} {:>10} {:>9} {:>7} {:>9} {:>10} {:>5}\n", "kernel", "op",
               "elements", "ms", "GB/s", "%copy", "vs r1", "rel.err", "det");
    for (const auto& r : res.rows)
      fmt::print("{:<28} {:<7} {:>12} {:>10.4f} {:>9.1f} {:>7.1f} {:>9} {:>10.2e} {:>5}\n",
                 r.kernel, r.op, r.n, r.ms, r.gbs, r.pct_copy,
                 r.speedup_vs_r1 > 0 ? fmt::format("{:.2f}x", r.speedup_vs_r1) : "-", r.rel_err,
                 r.deterministic ? "yes" : "NO");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heatsolve bench --reductions: %s\n", e.what());
    return 1;
  }
#else
  (void)n, (void)precision, (void)json;
  return 1;
#endif
}

int run_gemm_bench(int max_size, const std::string& precision, bool json) {
  if (!check_available()) return 1;
#ifdef HEATSOLVE_HAVE_CUDA
  try {
    const auto res = cuda::run_gemm_benchmark(max_size, precision);
    if (json) {
      nlohmann::json j;
      j["device"] = res.device;
      j["copy_gbs"] = res.copy_gbs;
      j["gemm"] = nlohmann::json::array();
      for (const auto& r : res.gemm)
        j["gemm"].push_back({{"kernel", r.kernel},
                             {"precision", r.precision},
                             {"M", r.M},
                             {"N", r.N},
                             {"K", r.K},
                             {"ms", r.ms},
                             {"gflops", r.gflops},
                             {"pct_cublas", r.pct_cublas},
                             {"rel_err", r.rel_err}});
      j["tall_skinny"] = nlohmann::json::array();
      for (const auto& r : res.tall_skinny)
        j["tall_skinny"].push_back({{"kernel", r.kernel},
                                    {"precision", r.precision},
                                    {"N", r.N},
                                    {"m", r.m},
                                    {"n", r.n},
                                    {"ms", r.ms},
                                    {"gbs", r.gbs},
                                    {"pct_copy", r.pct_copy},
                                    {"rel_err", r.rel_err}});
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("GEMM on {} ({}), C = A B row-major square; cuBLAS pedantic math\n", res.device,
               precision);
    fmt::print("{:<16} {:>6} {:>10} {:>10} {:>9} {:>10}\n", "kernel", "size", "ms", "GFLOP/s",
               "%cuBLAS", "rel.err");
    for (const auto& r : res.gemm)
      fmt::print("{:<16} {:>6} {:>10.3f} {:>10.0f} {:>9.1f} {:>10.2e}\n", r.kernel, r.M, r.ms,
                 r.gflops, r.pct_cublas, r.rel_err);
    fmt::print("\nTall-skinny C = A^T B (A: N x m, B: N x n); copy kernel {:.0f} GB/s\n",
               res.copy_gbs);
    fmt::print("{:<10} {:>11} {:>3} {:>3} {:>9} {:>9} {:>7} {:>10}\n", "kernel", "N", "m", "n",
               "ms", "GB/s", "%copy", "rel.err");
    for (const auto& r : res.tall_skinny)
      fmt::print("{:<10} {:>11} {:>3} {:>3} {:>9.4f} {:>9.1f} {:>7.1f} {:>10.2e}\n", r.kernel, r.N,
                 r.m, r.n, r.ms, r.gbs, r.pct_copy, r.rel_err);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heatsolve bench --gemm: %s\n", e.what());
    return 1;
  }
#else
  (void)max_size, (void)precision, (void)json;
  return 1;
#endif
}

}  // namespace heatsolve
