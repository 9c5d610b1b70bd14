// `heatsolve bench`: stencil ladder benchmark (CUDA builds; prints a message and returns 1
// otherwise).
#pragma once

#include <string>

namespace heatsolve {

// Prints the table (or JSON with `json`) of every stencil variant at size^dims (each compiled
// block shape with `all_shapes`, else the defaults); returns the process exit code.
int run_stencil_bench(int size, int dims, const std::string& precision, bool json,
                      bool all_shapes = false);

}  // namespace heatsolve
