// One block: its threads gather r's interior into shared memory (double), then each takes
// rows i and sums M(i, j) r(j) over the columns in order with unfused multiplies and adds
// (the CPU reference's arithmetic). M is column-major, so a warp's threads read consecutive
// rows of one column: coalesced.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/multigrid/cuda/dense_apply.cuh"

namespace heatsolve::cuda {

namespace {

constexpr int kDenseApplyThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kDenseApplyThreads)
    dense_apply_add_kernel(const T* __restrict__ m, const T* __restrict__ r, T* __restrict__ x,
                           GridDesc g, int n) {
  extern __shared__ double rc[];
  for (int j = threadIdx.x; j < n; j += blockDim.x) rc[j] = double(r[g.interior_index(j)]);
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    double acc = 0;
    for (int j = 0; j < n; ++j)
      acc = __dadd_rn(acc, __dmul_rn(double(m[std::size_t(j) * n + i]), rc[j]));
    const std::int64_t p = g.interior_index(i);
    x[p] = T(__dadd_rn(double(x[p]), acc));
  }
}

}  // namespace

template <typename T>
void launch_dense_apply_add(const T* m, const T* r, T* x, const GridDesc& g, cudaStream_t stream) {
  const std::size_t n = g.interior_size();
  if (n == 0) return;
  if (n > std::size_t(kDenseApplyMaxCells))
    throw std::invalid_argument("dense_apply_add: " + std::to_string(n) + " cells, at most " +
                                std::to_string(kDenseApplyMaxCells));
  dense_apply_add_kernel<T>
      <<<1, kDenseApplyThreads, n * sizeof(double), stream>>>(m, r, x, g, int(n));
  CUDA_CHECK_LAUNCH();
}

template void launch_dense_apply_add<float>(const float*, const float*, float*, const GridDesc&,
                                            cudaStream_t);
template void launch_dense_apply_add<double>(const double*, const double*, double*, const GridDesc&,
                                             cudaStream_t);

}  // namespace heatsolve::cuda
