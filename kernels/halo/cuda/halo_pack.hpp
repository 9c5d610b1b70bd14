// Device-side halo packing for the MPI exchange (kernels in halo_pack.cu) and the pinned host
// buffers the staged exchange goes through. Host-compiler safe; only built with CUDA.
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

// Page-locked host memory for staging halo buffers (cudaMallocHost). Returns nullptr when it
// cannot be had (no device, out of pinned memory): callers fall back to pageable memory.
void* cuda_pinned_alloc(std::size_t bytes) noexcept;
void cuda_pinned_free(void* p) noexcept;

// CUDA IPC, for halo exchange between processes of one node: a process exports a device
// allocation as an opaque handle (sent to its neighbour through MPI), the neighbour maps it
// into its own address space and writes into it with ordinary device copies (over NVLink or
// PCIe, no host staging).
struct CudaIpcHandle {
  unsigned char bytes[64];
};
static_assert(sizeof(CudaIpcHandle) == sizeof(cudaIpcMemHandle_t), "IPC handle size");

// cudaMalloc may sub-allocate small requests from a larger block, and IPC shares the whole
// block: buffers meant for export are allocated in whole multiples of this (CUDA programming
// guide, interprocess communication), so each is a block of its own.
inline constexpr std::size_t kCudaIpcGranularity = std::size_t(2) << 20;

// Exports the allocation starting at `base` (a pointer returned by cudaMalloc). False when
// the device or driver cannot (the exchanger then stages through the host).
bool cuda_ipc_export(const void* base, CudaIpcHandle* out) noexcept;
// Maps a neighbour's exported allocation; nullptr when it cannot be mapped.
void* cuda_ipc_open(const CudaIpcHandle& handle) noexcept;
void cuda_ipc_close(void* mapped) noexcept;
// Probes that a mapping reaches the buffer it was exported from: the writer stores `value`
// in the first 8 bytes through the mapping, the owner reads them back (both synchronous).
// False on a CUDA error.
bool cuda_ipc_probe_write(void* mapped, std::uint64_t value) noexcept;
bool cuda_ipc_probe_read(const void* buffer, std::uint64_t* value) noexcept;

}  // namespace heatsolve
