// Small helpers shared by the reduction and GEMM benchmarks (include from .cu files only):
// an RAII device buffer, a deterministic random fill, the copy-bandwidth yardstick and a
// median-of-repeats event timer.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.cuh"

namespace heatsolve::cuda {

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    CUDA_CHECK(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(T)));
  }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

namespace bench_detail {
__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
template <class T>
__global__ void fill_uniform_kernel(T* p, std::size_t n, double lo, double hi, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const double u = double(splitmix64(i ^ (seed << 40)) >> 11) * 0x1.0p-53;
    p[i] = static_cast<T>(lo + (hi - lo) * u);
  }
}
template <class T>
__global__ void copy_kernel(const T* __restrict__ in, T* __restrict__ out, std::size_t nvec) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < nvec;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}
}  // namespace bench_detail

template <class T>
inline void fill_uniform(T* p, std::size_t n, double lo, double hi, std::uint64_t seed,
                         cudaStream_t s) {
  bench_detail::fill_uniform_kernel<T><<<2048, 256, 0, s>>>(p, n, lo, hi, seed);
  CUDA_CHECK_LAUNCH();
}

// Median time (ms) of `fn` enqueued on stream s: one warm-up, then enough repeats for about
// `budget_ms` (between min_reps and max_reps), each timed with its own event pair.
template <class F>
double time_median_ms(F&& fn, cudaStream_t s, double budget_ms = 200.0, int min_reps = 3,
                      int max_reps = 50) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  fn();  // warm-up
  CUDA_CHECK(cudaEventRecord(a, s));
  fn();
  CUDA_CHECK(cudaEventRecord(b, s));
  CUDA_CHECK(cudaEventSynchronize(b));
  float first = 0;
  CUDA_CHECK(cudaEventElapsedTime(&first, a, b));
  const int reps =
      std::clamp(static_cast<int>(budget_ms / std::max(first, 1e-3f)), min_reps, max_reps);
  std::vector<float> t(reps);
  for (int r = 0; r < reps; ++r) {
    CUDA_CHECK(cudaEventRecord(a, s));
    fn();
    CUDA_CHECK(cudaEventRecord(b, s));
    CUDA_CHECK(cudaEventSynchronize(b));
    CUDA_CHECK(cudaEventElapsedTime(&t[r], a, b));
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[reps / 2];
}

}  // namespace heatsolve::cuda
