// `heatsolve bench`: the stencil, reduction and GEMM ladders measured on this machine's GPU.
#include <CLI/CLI.hpp>

#include "app/bench.hpp"
#include "app/bench_kernels.hpp"
#include "app/info.hpp"

namespace heatsolve {

void add_bench_options(CLI::App* cmd, BenchOptions& o) {
  cmd->add_option("--size", o.size, "grid points per dimension (default 512 in 3D, 8192 in 2D)");
  cmd->add_option("--dims", o.dims, "2 or 3")->check(CLI::IsMember({2, 3}));
  cmd->add_option("--precision", o.precision, "float or double")
      ->check(CLI::IsMember({"float", "double"}));
  cmd->add_flag("--json", o.json, "machine-readable output");
  cmd->add_flag("--all-shapes", o.all_shapes,
                "stencils: time every compiled block shape (execution.block), not only defaults");
  cmd->add_flag("--reductions", o.reductions, "benchmark the reduction ladder (and CUB)");
  cmd->add_flag("--gemm", o.gemm, "benchmark the GEMM ladder (and cuBLAS)");
  cmd->add_option("--elements", o.reduction_elements, "elements for --reductions");
  cmd->add_option("--gemm-max", o.gemm_max_size, "largest square GEMM size for --gemm");
}

int bench_command(const BenchOptions& o) {
  if (o.reductions) return run_reduction_bench(o.reduction_elements, o.precision, o.json);
  if (o.gemm) return run_gemm_bench(o.gemm_max_size, o.precision, o.json);
  const int size = o.size > 0 ? o.size : (o.dims == 3 ? 512 : 8192);
  return run_stencil_bench(size, o.dims, o.precision, o.json, o.all_shapes);
}

}  // namespace heatsolve
