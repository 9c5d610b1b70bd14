// The CudaBackend's reductions (reduce / reduce_diff / reduce_residual) in one place, so the
// reduction ladder (kernels/cuda/reduction*.cuh) can replace this simple version by switching
// the body of reduce_interior() in backend_reduce.cu.
//
// Contract: op over the interior cells, accumulated in double, deterministic (fixed grid,
// fixed combination order, two passes, no floating-point atomics); the only host-device copy
// is the final double.
#pragma once

#include <cuda_runtime.h>

#include "kernels/backend.hpp"
#include "kernels/grid.hpp"

namespace heatsolve::cuda {

enum class ReduceInput {
  Value,     // a
  Diff,      // a - b
  Residual,  // b + lap(a) (b = source f, may be null); ghosts of a must be filled
};

// Device scratch for the two passes, allocated once by the backend.
struct ReduceScratch {
  static constexpr int kBlocks =
      1024;  // pass-1 grid: fixed, so results do not depend on the device
  static constexpr int kThreads = 256;
  double* partial = nullptr;  // kBlocks doubles + 1 for the result
};

ReduceScratch make_reduce_scratch();
void free_reduce_scratch(ReduceScratch& s) noexcept;

template <typename T>
double reduce_interior(ReduceInput in, const T* a, const T* b, const GridDesc& g, ReduceOp op,
                       const ReduceScratch& scratch, cudaStream_t stream);

}  // namespace heatsolve::cuda
