// One instance of W per host thread and CUDA device (the current one), made on first use and
// destroyed when the thread exits: the grow-only scratch workspaces of the kernel families
// (reductions, multigrid interpolation), which must not be shared between threads or devices.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/cuda/cuda_check.cuh"

namespace heatsolve::cuda {

template <class W>
W& per_thread_device_instance() {
  thread_local std::vector<std::unique_ptr<W>> pool;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  const std::size_t d = static_cast<std::size_t>(dev);
  if (pool.size() <= d) pool.resize(d + 1);
  if (!pool[d]) pool[d] = std::make_unique<W>();
  return *pool[d];
}

}  // namespace heatsolve::cuda
