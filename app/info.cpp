#include "app/info.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <CLI/CLI.hpp>

#include "app/bench.hpp"
#include "app/bench_kernels.hpp"
#include "app/exit_codes.hpp"
#include "kernels/backend.hpp"

namespace heatsolve {

namespace {
const char* on_off(bool b) {
  return b ? "yes" : "no";
}
}  // namespace

int info_command() {
#ifdef HEATSOLVE_HAVE_CUDA
  constexpr bool cuda = true;
#else
  constexpr bool cuda = false;
#endif
#ifdef HEATSOLVE_HAVE_MPI
  constexpr bool mpi = true;
#else
  constexpr bool mpi = false;
#endif
#ifdef HEATSOLVE_HAVE_HDF5
  constexpr bool hdf5 = true;
#else
  constexpr bool hdf5 = false;
#endif
#ifdef HEATSOLVE_HAVE_PARALLEL_HDF5
  constexpr bool phdf5 = true;
#else
  constexpr bool phdf5 = false;
#endif
#ifdef HEATSOLVE_HAVE_VTK
  constexpr bool vtk = true;
#else
  constexpr bool vtk = false;
#endif
  fmt::print("heatsolve {}\n", HEATSOLVE_VERSION);
  fmt::print("  CUDA backend:    {}\n", on_off(cuda));
  fmt::print("  MPI:             {}\n", on_off(mpi));
  fmt::print("  HDF5 output:     {} (parallel: {})\n", on_off(hdf5), on_off(phdf5));
  fmt::print("  VTK output:      {}\n", on_off(vtk));
  fmt::print("  OpenMP threads:  {}\n", omp_get_max_threads());
  if (cuda_device_available()) {
    auto backend = make_backend<float>(BackendKind::Cuda, {});
    fmt::print("  GPU:             {}\n", backend->description());
  } else {
    fmt::print("  GPU:             none (runs use the CPU backend)\n");
  }
  return exit_code::kSuccess;
}

void add_bench_options(CLI::App* cmd, BenchOptions& o) {
  cmd->add_option("--size", o.size, "grid points per dimension (default 512 in 3D, 8192 in 2D)");
  cmd->add_option("--dims", o.dims, "2 or 3")->check(CLI::IsMember({2, 3}));
  cmd->add_option("--precision", o.precision, "float or double")
      ->check(CLI::IsMember({"float", "double"}));
  cmd->add_flag("--json", o.json, "machine-readable output");
  cmd->add_flag("--reductions", o.reductions, "benchmark the reduction ladder (and CUB)");
  cmd->add_flag("--gemm", o.gemm, "benchmark the GEMM ladder (and cuBLAS)");
  cmd->add_option("--elements", o.reduction_elements, "elements for --reductions");
  cmd->add_option("--gemm-max", o.gemm_max_size, "largest square GEMM size for --gemm");
}

int bench_command(const BenchOptions& o) {
  if (o.reductions) return run_reduction_bench(o.reduction_elements, o.precision, o.json);
  if (o.gemm) return run_gemm_bench(o.gemm_max_size, o.precision, o.json);
  const int size = o.size > 0 ? o.size : (o.dims == 3 ? 512 : 8192);
  return run_stencil_bench(size, o.dims, o.precision, o.json);
}

}  // namespace heatsolve
