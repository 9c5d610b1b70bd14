// Reproducible pseudo-random device fills (cuda_array.cuh): benchmark and tuning inputs.
#include <algorithm>
#include <cstddef>

#include "kernels/cuda/cuda_array.cuh"
#include "kernels/cuda/cuda_check.cuh"

namespace heatsolve::cuda {

template <typename T>
__global__ void fill_random_kernel(T* p, std::size_t n, unsigned long long seed, double lo,
                                   double hi) {
  for (std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; t < n;
       t += std::size_t(gridDim.x) * blockDim.x) {
    unsigned long long z = (t + 1) * 0x9E3779B97F4A7C15ull ^ seed;  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[t] = T(lo + (hi - lo) * (double(z >> 11) * (1.0 / 9007199254740992.0)));
  }
}

template <typename T>
void fill_random_device(T* p, std::size_t n, unsigned long long seed, double lo, double hi,
                        cudaStream_t stream) {
  if (n == 0) return;
  const int blocks = int(std::min<std::size_t>((n + 255) / 256, 8192));
  fill_random_kernel<T><<<blocks, 256, 0, stream>>>(p, n, seed, lo, hi);
  CUDA_CHECK_LAUNCH();
}
template void fill_random_device<float>(float*, std::size_t, unsigned long long, double, double,
                                        cudaStream_t);
template void fill_random_device<double>(double*, std::size_t, unsigned long long, double, double,
                                         cudaStream_t);

}  // namespace heatsolve::cuda
