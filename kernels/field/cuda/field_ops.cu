#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/rounding.cuh"
#include "kernels/field/cuda/field_ops.cuh"

namespace heatsolve::cuda {

namespace {

template <typename T>
struct CombineArgs {
  const T* in[kMaxCombineInputs];
  double coeff[kMaxCombineInputs];
  int count;
};

// One thread per interior x position of a row, grid-stride over rows: coalesced, no division
// per element.
template <typename T>
__global__ void combine_kernel(T* __restrict__ out, const CombineArgs<T> args, GridDesc g) {
  const int nz = g.dims == 3 ? g.nz : 1;
  const std::int64_t rows = std::int64_t(g.ny) * nz;
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int j = int(r % g.ny), k = g.dims == 3 ? int(r / g.ny) : 0;
    const std::int64_t row = g.index(0, j, k);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < g.nx; i += gridDim.x * blockDim.x) {
      double acc = 0;
      for (int c = 0; c < args.count; ++c) acc += args.coeff[c] * double(args.in[c][row + i]);
      out[row + i] = static_cast<T>(acc);
    }
  }
}

// combine_kernel's layout: one thread per x position of a row, grid-stride over rows.
template <typename T>
__global__ void fill_separable_kernel(T* __restrict__ out, GridDesc g, T offset, T scale,
                                      const T* __restrict__ plane, const T* __restrict__ column) {
  const int nz = g.dims == 3 ? g.nz : 1;
  const std::int64_t rows = std::int64_t(g.ny) * nz;
  const std::int64_t ss = g.dims == 3 ? g.stride_z() : g.stride_y();
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int j = int(r % g.ny), k = g.dims == 3 ? int(r / g.ny) : 0;
    const int p = g.dims == 3 ? k : j;  // the stream plane
    const std::int64_t row = g.index(0, j, k);
    const T c = column[p];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < g.nx; i += gridDim.x * blockDim.x) {
      const std::int64_t idx = row + i;
      out[idx] = add_rn(offset, mul_rn(scale, mul_rn(plane[idx - (p + 1) * ss], c)));
    }
  }
}

// Mixed precision: flat loops over padded arrays, grid-stride, the arithmetic in double
// (unfused, as the CPU reference does it: the same bits).
template <typename T>
__global__ void to_float_kernel(const T* __restrict__ src, float* __restrict__ dst, std::size_t n,
                                double scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = __double2float_rn(__dmul_rn(scale, double(src[i])));
}

template <typename T>
__global__ void add_float_kernel(T* __restrict__ dst, double a, const float* __restrict__ src,
                                 double b, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const double v = __dmul_rn(b, double(src[i]));
    dst[i] = static_cast<T>(a == 0.0 ? v : __dadd_rn(__dmul_rn(a, double(dst[i])), v));
  }
}

unsigned flat_blocks(std::size_t n) {
  return unsigned(std::min<std::size_t>((n + 255) / 256, 65535));
}

}  // namespace

template <typename T>
void launch_fill_separable(T* out, const GridDesc& g, T offset, T scale, const T* plane,
                           const T* column, cudaStream_t stream) {
  const int nz = g.dims == 3 ? g.nz : 1;
  const dim3 block(256);
  const dim3 grid((g.nx + 255) / 256,
                  unsigned(std::min<std::int64_t>(std::int64_t(g.ny) * nz, 65535)));
  fill_separable_kernel<T><<<grid, block, 0, stream>>>(out, g, offset, scale, plane, column);
  CUDA_CHECK_LAUNCH();
}

template void launch_fill_separable<float>(float*, const GridDesc&, float, float, const float*,
                                           const float*, cudaStream_t);
template void launch_fill_separable<double>(double*, const GridDesc&, double, double, const double*,
                                            const double*, cudaStream_t);

template <typename T>
void launch_to_float(const T* src, float* dst, std::size_t n, double scale, cudaStream_t stream) {
  if (n == 0) return;
  to_float_kernel<T><<<flat_blocks(n), 256, 0, stream>>>(src, dst, n, scale);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_add_float(T* dst, double a, const float* src, double b, std::size_t n,
                      cudaStream_t stream) {
  if (n == 0) return;
  add_float_kernel<T><<<flat_blocks(n), 256, 0, stream>>>(dst, a, src, b, n);
  CUDA_CHECK_LAUNCH();
}

template void launch_to_float<float>(const float*, float*, std::size_t, double, cudaStream_t);
template void launch_to_float<double>(const double*, float*, std::size_t, double, cudaStream_t);
template void launch_add_float<float>(float*, double, const float*, double, std::size_t,
                                      cudaStream_t);
template void launch_add_float<double>(double*, double, const float*, double, std::size_t,
                                       cudaStream_t);

template <typename T>
void launch_combine(T* out, const T* const* in, const double* coeffs, int count, const GridDesc& g,
                    cudaStream_t stream) {
  if (count < 0 || count > kMaxCombineInputs)
    throw std::invalid_argument("launch_combine: " + std::to_string(count) + " inputs (0.." +
                                std::to_string(kMaxCombineInputs) + " supported)");
  CombineArgs<T> args{};
  for (int c = 0; c < count; ++c) {
    args.in[c] = in[c];
    args.coeff[c] = coeffs[c];
  }
  args.count = count;
  const int nz = g.dims == 3 ? g.nz : 1;
  const dim3 block(256);
  const dim3 grid((g.nx + 255) / 256,
                  unsigned(std::min<std::int64_t>(std::int64_t(g.ny) * nz, 65535)));
  combine_kernel<T><<<grid, block, 0, stream>>>(out, args, g);
  CUDA_CHECK_LAUNCH();
}

template void launch_combine<float>(float*, const float* const*, const double*, int,
                                    const GridDesc&, cudaStream_t);
template void launch_combine<double>(double*, const double* const*, const double*, int,
                                     const GridDesc&, cudaStream_t);

}  // namespace heatsolve::cuda
