// CPU equivalents of the CUDA reductions (kernels/reduction/cuda/reduction.cuh): double accumulation,
// deterministic for any OpenMP thread count (fixed chunks summed in order).
#pragma once

#include <cstddef>

#include "kernels/backend.hpp"  // ReduceOp
#include "core/grid.hpp"

namespace heatsolve::cpu {

// op over data[0..n); 0 for n == 0. MaxAbs propagates NaN.
template <typename T>
double reduce_flat(ReduceOp op, const T* data, std::size_t n);
// op over the interior cells of a padded field.
template <typename T>
double reduce_interior(ReduceOp op, const T* u, const GridDesc& g);
// op over a - b (formed in double) on the interior.
template <typename T>
double reduce_diff_interior(ReduceOp op, const T* a, const T* b, const GridDesc& g);
// op over r = f + lap u on the interior (f may be null; ghosts of u must be filled);
// lap u = sum_d (u[-d] - 2u + u[+d]) / h_d^2 in double, as on the GPU.
template <typename T>
double reduce_residual_interior(ReduceOp op, const T* u, const T* f, const GridDesc& g);

}  // namespace heatsolve::cpu
