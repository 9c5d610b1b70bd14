// `heatsolve info` and `heatsolve bench` front ends.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

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
  bool all_shapes = false;  // stencil bench: every compiled block shape, not only the defaults
  std::vector<std::string> variants;  // stencil bench: only these (empty: all)
  std::vector<int> chunks;            // stencil bench: planes per block to time besides auto
  double sustain_s = 0;  // stencil bench: seconds untimed + timed per measurement (0: burst)
  std::size_t reduction_elements = std::size_t(1) << 28;
  int gemm_max_size = 8192;
};

void add_bench_options(CLI::App* cmd, BenchOptions& opts);
int bench_command(const BenchOptions& opts);
int info_command();

}  // namespace heatsolve
