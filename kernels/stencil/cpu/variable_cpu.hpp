// The variable-coefficient sweep on the CPU (kernels/stencil/variable.hpp).
#pragma once

#include "kernels/backend.hpp"
#include "kernels/stencil/variable.hpp"

namespace heatsolve {

// out = form(u) on the cells of r (u's ghosts filled).
template <typename T>
void cpu_stencil_variable(const T* u, T* out, const T* f, const GridDesc& g,
                          const VariableCoeffs<T>& c, const CellRange& r);

}  // namespace heatsolve
