// A dense matrix applied to the interior of a small grid on device memory (contract:
// Backend::dense_apply_add; reference: kernels/multigrid/cpu/dense_apply_cpu.hpp, same order
// of the double sums, so the results match the CPU bit for bit).
//
// Plain C++ header (the host compiler includes it too); the kernel lives in dense_apply.cu.
#pragma once

#include <cuda_runtime_api.h>

#include "core/grid.hpp"

namespace heatsolve::cuda {

// Largest grid (interior cells) launch_dense_apply_add takes: its one block keeps r in shared
// memory.
inline constexpr int kDenseApplyMaxCells = 4096;

// x += M r over the n interior cells of g (x fastest), M column-major n x n on the device.
// One block; std::invalid_argument beyond kDenseApplyMaxCells. Asynchronous on `stream`.
template <typename T>
void launch_dense_apply_add(const T* m, const T* r, T* x, const GridDesc& g, cudaStream_t stream);

}  // namespace heatsolve::cuda
