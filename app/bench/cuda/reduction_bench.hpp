// Reduction ladder benchmark: every rung and op, CUB in the same run, and a copy kernel as the
// bandwidth yardstick. Plain C++ header; implemented in reduction_bench.cu.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace heatsolve::cuda {

struct ReductionBenchRow {
  std::string kernel;         // r1_interleaved .. r8_modern, cub, interior/diff/residual (r8)
  std::string op;             // sum | sumsq | maxabs
  std::string precision;      // float | double
  std::size_t n = 0;          // elements (padded cells for the grid rows)
  double bytes = 0;           // bytes read per call
  double ms = 0;              // median time per call (all passes)
  double gbs = 0;             // bytes / time
  double pct_copy = 0;        // 100 * gbs / copy_gbs
  double speedup_vs_r1 = 0;   // time(r1, same op) / time; 0 where not applicable
  double value = 0;           // result
  double rel_err = 0;         // |value - ref| / max(|ref|, tiny), ref = CPU double (chunked)
  bool deterministic = true;  // two calls bitwise equal
};

struct ReductionBenchResult {
  std::string device;
  double copy_gbs = 0;    // copy kernel, (read + write bytes) / time
  double memcpy_gbs = 0;  // cudaMemcpyAsync device-to-device, same counting
  std::vector<ReductionBenchRow> rows;
};

// n elements of `precision` ("float" or "double"), random in [-1, 1). Also times the solver
// norms (reduce_interior / diff / residual) on a 3D grid of about n cells.
ReductionBenchResult run_reduction_benchmark(std::size_t n, const std::string& precision);

// Copy-kernel bandwidth over `bytes` (read + write counted), median of several runs, GB/s.
double measure_copy_bandwidth(std::size_t bytes);
double measure_memcpy_bandwidth(std::size_t bytes);

std::string cuda_device_name();

}  // namespace heatsolve::cuda
