// Error checking for every CUDA runtime call and kernel launch (shared by all CUDA code).
//   CUDA_CHECK(cudaMalloc(&p, n));      throws std::runtime_error("file:line: cudaMalloc(...):
//   msg") kernel<<<g, b>>>(...); CUDA_CHECK_LAUNCH();
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace heatsolve::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* expr, const char* file,
                                          int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + expr +
                           " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                           ")");
}

}  // namespace heatsolve::cuda

#define CUDA_CHECK(expr)                                                            \
  do {                                                                              \
    const cudaError_t hs_cuda_err_ = (expr);                                        \
    if (hs_cuda_err_ != cudaSuccess)                                                \
      ::heatsolve::cuda::throw_cuda_error(hs_cuda_err_, #expr, __FILE__, __LINE__); \
  } while (0)

// After a launch: configuration errors (bad grid/block/shared size) show up here.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
