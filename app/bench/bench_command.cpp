// `heatsolve bench`: the stencil, reduction and GEMM ladders measured on this machine's GPU;
// without one (or with --backend cpu) the CPU backend's stencil against the CPU's copy rate.
#include "app/bench/bench_command.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/bench/bench.hpp"
#include "app/bench/bench_kernels.hpp"
#include "app/bench/bench_multigrid.hpp"
#include "app/exit_codes.hpp"
#include "kernels/backend.hpp"

namespace heatsolve {

void add_bench_options(CLI::App* cmd, BenchOptions& o) {
  cmd->add_option("--size", o.size,
                  "grid points per dimension (default 512 in 3D, 8192 in 2D; on the CPU 256 and "
                  "4096)");
  cmd->add_option("--dims", o.dims, "2 or 3")->check(CLI::IsMember({2, 3}));
  cmd->add_option("--precision", o.precision, "float or double")
      ->each([&o](const std::string&) { o.precision_given = true; })
      ->check(CLI::IsMember({"float", "double"}));
  cmd->add_flag("--json", o.json, "machine-readable output");
  cmd->add_flag("--all-shapes", o.stencil.all_shapes,
                "stencils: time every compiled block shape (execution.block), not only defaults");
  cmd->add_option("--variants", o.stencil.variants,
                  "stencils: time only these variants (names of execution.kernel, or temporal)")
      ->delimiter(',');
  cmd->add_option("--chunks", o.stencil.chunks,
                  "stencils: also time each timed shape of the streaming rungs and of temporal "
                  "with these planes per block (the automatic choice is always timed)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  cmd->add_option("--sustain", o.stencil.sustain_s,
                  "stencils: time each measurement (copy and rows) over this many seconds after "
                  "as many untimed seconds, so power and clocks have settled (a long run's "
                  "rate); 0 (default): median of short repeats")
      ->check(CLI::Range(0.0, 600.0));
  cmd->add_flag("--reductions", o.reductions, "benchmark the reduction ladder (and CUB)");
  cmd->add_flag("--gemm", o.gemm, "benchmark the GEMM ladder (and cuBLAS)");
  cmd->add_flag("--multigrid", o.multigrid,
                "time to solution of 3D Poisson by multigrid and mg-cg against sweeps and Jacobi "
                "(--size, default 256; --precision float|double, both when not given; double "
                "adds mixed precision, full multigrid and one FMG pass to the discretisation "
                "error); under mpirun with P ranks: one device against P, strong and weak, "
                "multigrid, mg-cg, fmg and Crank-Nicolson steps, double");
  cmd->add_option("--backend", o.backend,
                  "stencils and --multigrid: auto (the GPU when there is one, else the CPU), cpu "
                  "or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--elements", o.reduction_elements, "elements for --reductions");
  cmd->add_option("--gemm-max", o.gemm_max_size, "largest square GEMM size for --gemm");
}

int bench_command(const BenchOptions& o) {
  if (o.ranks > 1) {
    // Under mpirun: one device against all the ranks', multigrid only (the other benches
    // time one device and would run once per rank).
    const char* refused =
        !o.multigrid ? "only --multigrid runs on several MPI ranks (one device against all of "
                       "them); run the other benches without mpirun"
        : o.precision_given && o.precision != "double"
            ? "--multigrid on several MPI ranks runs double precision only"
            : nullptr;
    if (refused) {
      if (o.rank == 0) fmt::print(stderr, "heatsolve bench: {}\n", refused);
      return exit_code::kInputError;
    }
    return run_multigrid_scaling_bench(o.size > 0 ? o.size : 256, o.backend, o.device, 3, o.json);
  }
  if (o.reductions) return run_reduction_bench(o.reduction_elements, o.precision, o.json);
  if (o.gemm) return run_gemm_bench(o.gemm_max_size, o.precision, o.json);
  if (o.multigrid)
    return run_multigrid_bench(o.size > 0 ? o.size : 256, o.precision_given ? o.precision : "both",
                               o.backend, o.json);
  // The CPU backend: asked for, or no GPU to run the ladder on (a CUDA build on a machine
  // without a device, or a build without CUDA). --backend cuda without one fails below.
  const bool gpu = cuda_device_available();
  if (o.backend == "cpu" || (o.backend == "auto" && !gpu)) {
    const StencilBenchOptions& g = o.stencil;
    if (!g.variants.empty() || !g.chunks.empty() || g.all_shapes || g.sustain_s > 0)
      fmt::print(stderr,
                 "heatsolve bench: --variants, --chunks, --all-shapes and --sustain time the GPU "
                 "ladder: ignored on the CPU\n");
    return run_cpu_stencil_bench(o.size > 0 ? o.size : (o.dims == 3 ? 256 : 4096), o.dims,
                                 o.precision, o.json,
                                 o.backend == "cpu" ? "--backend cpu"
#ifdef HEATSOLVE_HAVE_CUDA
                                                    : "no CUDA device");
#else
                                                    : "this build has no CUDA");
#endif
  }
  StencilBenchOptions s = o.stencil;
  s.size = o.size > 0 ? o.size : (o.dims == 3 ? 512 : 8192);
  s.dims = o.dims;
  s.precision = o.precision;
  return run_stencil_bench(s, o.json);
}

}  // namespace heatsolve
