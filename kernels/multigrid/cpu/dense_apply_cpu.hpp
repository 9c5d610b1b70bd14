// A dense matrix applied to the interior of a small grid on host memory (contract:
// Backend::dense_apply_add; the CUDA kernel sums in the same order, so both give the same bits).
#pragma once

#include "core/grid.hpp"

namespace heatsolve {

// x += M r over the n interior cells of g (cells numbered x fastest), M column-major n x n.
template <typename T>
void cpu_dense_apply_add(const T* m, const T* r, T* x, const GridDesc& g);

}  // namespace heatsolve
