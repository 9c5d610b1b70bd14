// `heatsolve bench`: stencil ladder benchmark (CUDA builds; prints a message and returns 1
// otherwise).
#pragma once

#include <string>

#include "app/bench/cuda/stencil_bench.hpp"

namespace heatsolve {

// Prints the table (or JSON with `json`) of the stencil variants of `opts` (each compiled
// block shape with all_shapes, else the defaults); returns the process exit code.
int run_stencil_bench(const StencilBenchOptions& opts, bool json);

}  // namespace heatsolve
