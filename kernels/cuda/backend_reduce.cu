// Simple, correct deterministic reductions for the CudaBackend (see backend_reduce.cuh).
// Pass 1: a fixed grid of blocks strides over the interior, each thread accumulating in
// double; a fixed shared-memory tree per block writes one partial. Pass 2: one block
// combines the partials with the same tree.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/backend_reduce.cuh"
#include "kernels/cuda/cuda_check.cuh"

namespace heatsolve::cuda {

namespace {

__device__ __forceinline__ double combine(ReduceOp op, double acc, double v) {
  switch (op) {
    case ReduceOp::Sum:
      return acc + v;
    case ReduceOp::SumSquares:
      return acc + v * v;
    case ReduceOp::MaxAbs:
      return fmax(acc, fabs(v));
  }
  return acc;
}

__device__ __forceinline__ double merge(ReduceOp op, double a, double b) {
  return op == ReduceOp::MaxAbs ? fmax(a, b) : a + b;
}

// Fixed-order tree over blockDim.x (a power of two) values in shared memory.
template <int THREADS>
__device__ double block_tree(double v, ReduceOp op) {
  __shared__ double s[THREADS];
  s[threadIdx.x] = v;
  __syncthreads();
#pragma unroll
  for (int w = THREADS / 2; w > 0; w >>= 1) {
    if (int(threadIdx.x) < w) s[threadIdx.x] = merge(op, s[threadIdx.x], s[threadIdx.x + w]);
    __syncthreads();
  }
  return s[0];
}

template <typename T, typename I>
__global__ void __launch_bounds__(ReduceScratch::kThreads)
    reduce_pass1(ReduceInput in, const T* __restrict__ a, const T* __restrict__ b, GridDesc g,
                 ReduceOp op, double ix, double iy, double iz, double* __restrict__ partial) {
  const I nx = I(g.nx), ny = I(g.ny);
  const I n = I(g.interior_size());
  const std::int64_t sy = g.stride_y(), sz = g.dims == 3 ? g.stride_z() : 0;
  double acc = 0;
  for (I t = I(blockIdx.x) * ReduceScratch::kThreads + threadIdx.x; t < n;
       t += I(ReduceScratch::kBlocks) * ReduceScratch::kThreads) {
    const I row = t / nx;
    const int i = int(t - row * nx);
    const int j = int(row % ny);
    const int k = g.dims == 3 ? int(row / ny) : 0;
    const std::int64_t idx = g.index(i, j, k);
    double v;
    if (in == ReduceInput::Value) {
      v = double(a[idx]);
    } else if (in == ReduceInput::Diff) {
      v = double(a[idx]) - double(b[idx]);
    } else {
      const double c = a[idx];
      double lap = ix * (double(a[idx - 1]) - 2 * c + double(a[idx + 1])) +
                   iy * (double(a[idx - sy]) - 2 * c + double(a[idx + sy]));
      if (g.dims == 3) lap += iz * (double(a[idx - sz]) - 2 * c + double(a[idx + sz]));
      v = (b ? double(b[idx]) : 0.0) + lap;
    }
    acc = combine(op, acc, v);
  }
  const double r = block_tree<ReduceScratch::kThreads>(acc, op);
  if (threadIdx.x == 0) partial[blockIdx.x] = r;
}

__global__ void __launch_bounds__(ReduceScratch::kBlocks)
    reduce_pass2(ReduceOp op, double* __restrict__ partial) {
  const double r = block_tree<ReduceScratch::kBlocks>(partial[threadIdx.x], op);
  if (threadIdx.x == 0) partial[ReduceScratch::kBlocks] = r;
}

}  // namespace

ReduceScratch make_reduce_scratch() {
  ReduceScratch s;
  CUDA_CHECK(cudaMalloc(&s.partial, (ReduceScratch::kBlocks + 1) * sizeof(double)));
  return s;
}

void free_reduce_scratch(ReduceScratch& s) noexcept {
  if (s.partial) cudaFree(s.partial);
  s.partial = nullptr;
}

template <typename T>
double reduce_interior(ReduceInput in, const T* a, const T* b, const GridDesc& g, ReduceOp op,
                       const ReduceScratch& scratch, cudaStream_t stream) {
  if (g.interior_size() == 0) return 0.0;
  const double ix = 1.0 / (g.hx * g.hx), iy = 1.0 / (g.hy * g.hy);
  const double iz = g.dims == 3 ? 1.0 / (g.hz * g.hz) : 0.0;
  const dim3 grid(ReduceScratch::kBlocks), block(ReduceScratch::kThreads);
  if (g.interior_size() < (std::size_t(1) << 31))
    reduce_pass1<T, std::uint32_t>
        <<<grid, block, 0, stream>>>(in, a, b, g, op, ix, iy, iz, scratch.partial);
  else
    reduce_pass1<T, std::uint64_t>
        <<<grid, block, 0, stream>>>(in, a, b, g, op, ix, iy, iz, scratch.partial);
  CUDA_CHECK_LAUNCH();
  reduce_pass2<<<1, ReduceScratch::kBlocks, 0, stream>>>(op, scratch.partial);
  CUDA_CHECK_LAUNCH();
  double result = 0;
  CUDA_CHECK(cudaMemcpyAsync(&result, scratch.partial + ReduceScratch::kBlocks, sizeof(double),
                             cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return result;
}

template double reduce_interior<float>(ReduceInput, const float*, const float*, const GridDesc&,
                                       ReduceOp, const ReduceScratch&, cudaStream_t);
template double reduce_interior<double>(ReduceInput, const double*, const double*, const GridDesc&,
                                        ReduceOp, const ReduceScratch&, cudaStream_t);

}  // namespace heatsolve::cuda
