// Device-side halo packing for the MPI exchange (kernels in halo_pack.cu). Host-compiler safe;
// only built with CUDA. The pinned host buffers and CUDA IPC of the exchange: kernels/device.hpp.
//
// Face numbering and buffer layout follow Backend::pack_face / unpack_face
// (kernels/backend.hpp): faces 0..5 = x-, x+, y-, y+, z-, z+; x faces (j, k) with j fastest,
// y faces (i, k) with i fastest, z faces (i, j) with i fastest; face_cells(g, face) values.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/grid.hpp"

namespace heatsolve {

// Copies the interior layer adjacent to `face` of the device array `u` into the device
// buffer `buffer`; asynchronous on `stream` (synchronize before MPI or the host reads it).
// Throws std::runtime_error on a launch error or a face out of range.
template <typename T>
void cuda_pack_face(const T* u, const GridDesc& g, int face, T* buffer, cudaStream_t stream = 0);

// Writes the device buffer `buffer` into the ghost layer of `face` of `u`; asynchronous on
// `stream`.
template <typename T>
void cuda_unpack_face(T* u, const GridDesc& g, int face, const T* buffer, cudaStream_t stream = 0);

// Backend::copy_box on the device: a strided box copy (deep halos, block <-> extended grid);
// asynchronous on `stream`.
template <typename T>
void cuda_copy_box(T* dst, std::int64_t dst_stride_y, std::int64_t dst_stride_z, const T* src,
                   std::int64_t src_stride_y, std::int64_t src_stride_z, const int extent[3],
                   cudaStream_t stream = 0);

}  // namespace heatsolve
