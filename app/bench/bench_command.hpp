// `heatsolve bench` front end: options and the command.
#pragma once

#include <cstddef>
#include <string>

#include "app/bench/cuda/stencil_bench.hpp"

namespace CLI {
class App;
}

namespace heatsolve {

struct BenchOptions {
  int size = 0;  // 0: a default per dimension (512^3, 8192^2)
  int dims = 3;
  std::string precision = "float";
  bool json = false;
  bool reductions = false;
  bool gemm = false;
  bool multigrid = false;
  bool precision_given = false;
  std::string backend = "auto";  // --multigrid only
  // The MPI job (set by main): more than one rank runs the multigrid scaling bench, `device`
  // this rank's GPU (-1: the current one).
  int ranks = 1, rank = 0, device = -1;
  // Stencil bench only (all_shapes, variants, chunks, sustain_s are bound to the CLI; size,
  // dims and precision come from the fields above).
  StencilBenchOptions stencil;
  std::size_t reduction_elements = std::size_t(1) << 28;
  int gemm_max_size = 8192;
};

void add_bench_options(CLI::App* cmd, BenchOptions& opts);
int bench_command(const BenchOptions& opts);

}  // namespace heatsolve
