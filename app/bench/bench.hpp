// `heatsolve bench`: stencil ladder benchmark (CUDA builds; prints a message and returns 1
// otherwise), and the CPU backend's stencil against the CPU's copy bandwidth.
#pragma once

#include <string>

#include "app/bench/cuda/stencil_bench.hpp"

namespace heatsolve {

// Prints the table (or JSON with `json`) of the stencil variants of `opts` (each compiled
// block shape with all_shapes, else the defaults); returns the process exit code.
int run_stencil_bench(const StencilBenchOptions& opts, bool json);

// The CPU backend on a size^dims grid of `precision`: copy bandwidth over the grid's arrays,
// the stencil (ghost fill + sweep) in GPt/s and as a fraction of it. Table, or JSON with
// `json`; `why` (e.g. "no GPU") goes into the table's title. Returns the exit code.
int run_cpu_stencil_bench(int size, int dims, const std::string& precision, bool json,
                          const std::string& why = "");

}  // namespace heatsolve
