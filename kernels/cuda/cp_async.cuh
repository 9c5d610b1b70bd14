// Asynchronous global -> shared memory copies that do not pass through registers:
//   - cp.async (LDGSTS, sm_80+): 4/8/16 bytes per thread, committed in groups and waited
//     for per thread (2.5d-async stencil ring, FP64 tensor-core GEMM slices);
//   - cp.async.bulk (the Hopper copy engine, sm_90+): one thread copies a whole 16-byte
//     aligned range, completion counted in bytes on an mbarrier (2.5d-tma stencil ring).
// Include only from .cu files. Below the required target the copies trap: the kernels using
// them are sm_80+ / sm_90+ designs.
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

// ---- bulk copies and mbarriers (sm_90) -------------------------------------------------
// An mbarrier phase completes when `count` arrivals have happened and the bytes announced
// with arrive_expect_tx have all landed; waiters poll the phase parity.
__device__ __forceinline__ void mbarrier_init(std::uint32_t bar, std::uint32_t count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#else
  (void)bar, (void)count;
  __trap();
#endif
}

// Makes initialised mbarriers visible to the copy engine (then a block barrier for threads).
__device__ __forceinline__ void mbarrier_init_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

// One arrival that also announces `bytes` more to land in the current phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
#else
  (void)bar, (void)bytes;
  __trap();
#endif
}

// One plain arrival (release: this thread's earlier shared-memory reads are done).
__device__ __forceinline__ void mbarrier_arrive(std::uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#else
  (void)bar;
  __trap();
#endif
}

// Waits until the phase with parity `parity` has completed.
__device__ __forceinline__ void mbarrier_wait_parity(std::uint32_t bar, std::uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#else
  (void)bar, (void)parity;
  __trap();
#endif
}

// Copies `bytes` (a multiple of 16) from global `src` to shared `dst` (both 16-byte aligned)
// with the copy engine; completion is counted on mbarrier `bar`.
__device__ __forceinline__ void bulk_copy_to_shared(std::uint32_t dst, const void* src,
                                                    std::uint32_t bytes, std::uint32_t bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const std::size_t g = __cvta_generic_to_global(src);
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(dst),
      "l"(g), "r"(bytes), "r"(bar)
      : "memory");
#else
  (void)dst, (void)src, (void)bytes, (void)bar;
  __trap();
#endif
}

}  // namespace heatsolve::cuda
