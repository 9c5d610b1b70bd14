// `heatsolve bench --reductions` and `heatsolve bench --gemm`: the reduction and GEMM ladders
// against CUB / cuBLAS in the same run (CUDA builds; without CUDA or a device they print a
// message and return 1).
#pragma once

#include <cstddef>
#include <string>

namespace heatsolve {

// Every reduction rung and op on n random elements of `precision` (float | double), CUB, the
// copy-bandwidth yardstick and the solver norms on a padded 3D grid. Table or JSON on stdout.
int run_reduction_bench(std::size_t n, const std::string& precision, bool json);

// GEMM ladder vs cuBLAS (pedantic) at square sizes 1024 .. max_size (doubling), and the
// tall-skinny A^T B vs cuBLAS. Table or JSON on stdout.
int run_gemm_bench(int max_size, const std::string& precision, bool json);

// 3D Poisson n^3 by multigrid and mg-cg (float and double, or one of them: `precision`
// float | double | both) on `backend` (auto | cpu | cuda): iterations, convergence factor,
// time to solution, time per iteration in sweeps of the same grid, and Jacobi's time
// extrapolated from a timed prefix. Table or JSON on stdout.
int run_multigrid_bench(int n, const std::string& precision, const std::string& backend, bool json);

}  // namespace heatsolve
