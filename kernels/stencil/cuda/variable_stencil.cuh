// The variable-coefficient sweep on the GPU (kernels/stencil/variable.hpp).
#pragma once

#include <cuda_runtime.h>

#include "kernels/backend.hpp"
#include "kernels/stencil/variable.hpp"

namespace heatsolve::cuda {

// out = form(u) on the cells of r (u's ghosts filled), on `stream`.
template <typename T>
void launch_stencil_variable(const T* u, T* out, const T* f, const GridDesc& g,
                             const VariableCoeffs<T>& c, const CellRange& r, cudaStream_t stream);

}  // namespace heatsolve::cuda
