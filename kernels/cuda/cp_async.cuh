// cp.async (LDGSTS, sm_80+): global -> shared memory copies that do not pass through
// registers, committed in groups and waited for per thread. Used by the pipelined kernels
// (2.5d-async stencil ring, FP64 tensor-core GEMM slices). Include only from .cu files.
// On targets below sm_80 the copies trap: the kernels using them are sm_80+ designs.
#pragma once

#include <cstdint>

namespace heatsolve::cuda {

// Shared-state address of a pointer into shared memory (what cp.async takes as destination).
__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// Copies BYTES (4, 8 or 16) from global `src` to shared `dst`; 16-byte copies bypass L1
// (.cg), smaller ones must go through it (.ca).
template <int BYTES>
__device__ __forceinline__ void cp_async(std::uint32_t dst, const void* src) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const std::size_t g = __cvta_generic_to_global(src);
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(g) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(g), "n"(BYTES)
                 : "memory");
#else
  (void)dst, (void)src;
  __trap();
#endif
}

// The same, zero-filling `dst` instead when !valid (src is then not read: src-size 0).
template <int BYTES>
__device__ __forceinline__ void cp_async_zfill(std::uint32_t dst, const void* src, bool valid) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const std::size_t g = __cvta_generic_to_global(src);
  const int src_bytes = valid ? BYTES : 0;
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(g),
                 "r"(src_bytes)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(g), "n"(BYTES),
                 "r"(src_bytes)
                 : "memory");
#else
  (void)dst, (void)src, (void)valid;
  __trap();
#endif
}

// Closes the group of this thread's copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most N of this thread's most recent groups are pending (N = 0: all landed).
// Other threads' copies need a barrier after the wait before they are read.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

}  // namespace heatsolve::cuda
