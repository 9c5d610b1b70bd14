// Pointwise field operations on padded GridDesc fields (Anderson mixing; mixed precision).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "core/grid.hpp"

namespace heatsolve::cuda {

// Most fields one combine() reads: Anderson with depth m mixes 2 + 2m of them.
inline constexpr int kMaxCombineInputs = 40;

// out = sum_j coeffs[j] * in[j] over interior cells (ghosts of out untouched). Pointwise, so
// out may alias an input.
template <typename T>
void launch_combine(T* out, const T* const* in, const double* coeffs, int count, const GridDesc& g,
                    cudaStream_t stream);

// The interior of `out` (ghosts untouched) from a separable source's form: at the cell idx of
// stream plane k (z in 3D, y in 2D; ss that axis' stride)
//   out[idx] = offset + scale * (plane[idx - (k + 1) ss] * column[k]),
// each operation rounded (no FMA): separable_value()'s bits, as the sweeps generate it.
template <typename T>
void launch_fill_separable(T* out, const GridDesc& g, T offset, T scale, const T* plane,
                           const T* column, cudaStream_t stream);
// dst = float(scale * src) over n values (Backend::to_float). Asynchronous on `stream`.
template <typename T>
void launch_to_float(const T* src, float* dst, std::size_t n, double scale, cudaStream_t stream);
// dst = a dst + b src over n values (a == 0: dst not read; Backend::add_float).
template <typename T>
void launch_add_float(T* dst, double a, const float* src, double b, std::size_t n,
                      cudaStream_t stream);

}  // namespace heatsolve::cuda
