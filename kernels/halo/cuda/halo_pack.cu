// Halo face pack/unpack kernels (contract: Backend::pack_face / unpack_face).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/halo/cuda/halo_pack.hpp"

namespace heatsolve {

namespace {

// Padded index of the face cell (f, s) (fast, slow face coordinates) on layer `layer` of the
// face's normal axis.
__device__ __forceinline__ std::int64_t face_index(const GridDesc& g, int axis, int layer, int f,
                                                   int s) {
  switch (axis) {
    case 0:
      return g.index(layer, f, g.dims == 3 ? s : 0);
    case 1:
      return g.index(f, layer, g.dims == 3 ? s : 0);
    default:
      return g.index(f, s, layer);
  }
}

// One thread per face cell; 2D launch: x over the fast face axis, y over the slow one.
template <typename T, bool Pack>
__global__ void face_copy_kernel(T* __restrict__ u, GridDesc g, int axis, int layer, int n_fast,
                                 int n_slow, T* __restrict__ buffer) {
  const int f = blockIdx.x * blockDim.x + threadIdx.x;
  const int s = blockIdx.y * blockDim.y + threadIdx.y;
  if (f >= n_fast || s >= n_slow) return;
  const std::int64_t i = face_index(g, axis, layer, f, s);
  const std::int64_t b = std::int64_t(s) * n_fast + f;
  if (Pack)
    buffer[b] = u[i];
  else
    u[i] = buffer[b];
}

template <typename T, bool Pack>
void launch_face_copy(T* u, const GridDesc& g, int face, T* buffer, cudaStream_t stream) {
  if (face < 0 || face >= 2 * g.dims)
    throw std::invalid_argument("halo face " + std::to_string(face) + " out of range for a " +
                                std::to_string(g.dims) + "D grid");
  const int axis = face / 2;
  const int nz = g.dims == 3 ? g.nz : 1;
  const int n_axis = axis == 0 ? g.nx : axis == 1 ? g.ny : g.nz;
  const int layer = Pack ? (face % 2 == 0 ? 0 : n_axis - 1) : (face % 2 == 0 ? -1 : n_axis);
  const int n_fast = axis == 0 ? g.ny : g.nx;
  const int n_slow = axis == 2 ? g.ny : nz;
  if (n_fast <= 0 || n_slow <= 0) return;
  // x faces are strided by a whole row; the others read rows contiguously.
  const dim3 block(32, 8);
  const dim3 grid((n_fast + block.x - 1) / block.x, (n_slow + block.y - 1) / block.y);
  face_copy_kernel<T, Pack><<<grid, block, 0, stream>>>(u, g, axis, layer, n_fast, n_slow, buffer);
  CUDA_CHECK_LAUNCH();
}

// One thread per cell of a row segment; blocks over (x, y), planes looped in z so that any
// depth fits the grid's z limit.
template <typename T>
__global__ void box_copy_kernel(T* __restrict__ dst, std::int64_t dsy, std::int64_t dsz,
                                const T* __restrict__ src, std::int64_t ssy, std::int64_t ssz,
                                int ex, int ey, int ez) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= ex || j >= ey) return;
  for (int k = blockIdx.z; k < ez; k += gridDim.z)
    dst[k * dsz + j * dsy + i] = src[k * ssz + j * ssy + i];
}

}  // namespace

template <typename T>
void cuda_pack_face(const T* u, const GridDesc& g, int face, T* buffer, cudaStream_t stream) {
  // The kernel only reads u when packing.
  launch_face_copy<T, true>(const_cast<T*>(u), g, face, buffer, stream);
}

template <typename T>
void cuda_unpack_face(T* u, const GridDesc& g, int face, const T* buffer, cudaStream_t stream) {
  // The kernel only reads buffer when unpacking.
  launch_face_copy<T, false>(u, g, face, const_cast<T*>(buffer), stream);
}

template <typename T>
void cuda_copy_box(T* dst, std::int64_t dst_stride_y, std::int64_t dst_stride_z, const T* src,
                   std::int64_t src_stride_y, std::int64_t src_stride_z, const int extent[3],
                   cudaStream_t stream) {
  if (extent[0] <= 0 || extent[1] <= 0 || extent[2] <= 0) return;
  const dim3 block(64, 4);
  const dim3 grid((extent[0] + block.x - 1) / block.x, (extent[1] + block.y - 1) / block.y,
                  std::min(extent[2], 1024));
  box_copy_kernel<T><<<grid, block, 0, stream>>>(dst, dst_stride_y, dst_stride_z, src, src_stride_y,
                                                 src_stride_z, extent[0], extent[1], extent[2]);
  CUDA_CHECK_LAUNCH();
}

template void cuda_pack_face<float>(const float*, const GridDesc&, int, float*, cudaStream_t);
template void cuda_pack_face<double>(const double*, const GridDesc&, int, double*, cudaStream_t);
template void cuda_unpack_face<float>(float*, const GridDesc&, int, const float*, cudaStream_t);
template void cuda_unpack_face<double>(double*, const GridDesc&, int, const double*, cudaStream_t);
template void cuda_copy_box<float>(float*, std::int64_t, std::int64_t, const float*, std::int64_t,
                                   std::int64_t, const int[3], cudaStream_t);
template void cuda_copy_box<double>(double*, std::int64_t, std::int64_t, const double*,
                                    std::int64_t, std::int64_t, const int[3], cudaStream_t);

}  // namespace heatsolve
