// Host API of the CUDA reductions: the seven rungs of the classic reduction ladder (Harris,
// "Optimizing Parallel Reduction in CUDA") plus a modern fastest rung, all instances of one
// templated design (operation x precision x element loader; see reduction_kernels.cuh).
//
// This header is plain C++ (the host compiler includes it too, e.g. from the tests); the
// device templates live in reduction_kernels.cuh.
//
// Accumulation precision (a deliberate choice):
//   * ladder rungs 1..7 accumulate in the input type T (float in float, as in the classic
//     ladder; keeps the bytes per step and the shared-memory footprint of the originals);
//   * the modern rung (ReductionVariant::Modern) accumulates Sum / SumSquares in double, also
//     for float inputs (memory-bound, so the FP64 adds are free on H100/H200); MaxAbs compares
//     in the input type, which is exact. The solver's norms (reduce_interior,
//     reduce_diff_interior, reduce_residual_interior) use this rung; differences and residuals
//     are formed in double.
// Determinism: every variant uses a fixed grid, a fixed element-to-thread assignment,
// fixed-order shuffles/trees and a separate final pass; no atomics. Same input => bitwise
// identical result. The modern rung's grid depends on n only (at most 1024 blocks), so it is
// bitwise reproducible across GPU models too; rung 7 sizes its grid by the SM count.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/backend.hpp"  // ReduceOp
#include "kernels/grid.hpp"

namespace heatsolve::cuda {

enum class ReductionVariant {
  Interleaved = 1,          // r1: tid % (2s) == 0, divergent
  InterleavedNonDivergent,  // r2: index = 2*s*tid, bank conflicts
  Sequential,               // r3: sequential addressing, tid < s
  FirstAddDuringLoad,       // r4: two elements per thread on load, half the blocks
  UnrollLastWarp,           // r5: last warp without __syncthreads (made correct: __syncwarp)
  CompleteUnroll,           // r6: block size a template parameter, every step unrolled
  MultipleElements,         // r7: grid-stride, many elements per thread
  Modern,                   // r8: 16-byte loads, shuffles, fixed grid, deterministic two-pass
};

// "r1_interleaved", "r2_interleaved_nondivergent", "r3_sequential", "r4_first_add",
// "r5_unroll_last_warp", "r6_complete_unroll", "r7_multiple_elements", "r8_modern".
const char* reduction_variant_name(ReductionVariant v);
std::vector<ReductionVariant> all_reduction_variants();
// Accepts the names above (and the short forms "r1".."r8", "modern"); false if unknown.
bool parse_reduction_variant(const std::string& name, ReductionVariant* out);
const char* reduce_op_name(ReduceOp op);  // "sum", "sumsq", "maxabs"

// Device scratch for the reductions, allocated once and grown on demand (RAII). One workspace
// serves one stream at a time. The free functions below use a per-thread, per-device default
// workspace when none is passed.
class ReductionWorkspace {
 public:
  ReductionWorkspace();
  ~ReductionWorkspace();
  ReductionWorkspace(const ReductionWorkspace&) = delete;
  ReductionWorkspace& operator=(const ReductionWorkspace&) = delete;

  // Two ping-pong partial buffers of at least `bytes` each (grown, never shrunk).
  void reserve(std::size_t bytes);
  void* partials(int which) const { return which == 0 ? part_[0] : part_[1]; }
  double* d_result() const { return d_result_; }  // device: the last result (double)
  double* h_result() const { return h_result_; }  // pinned host mirror
  int device() const { return device_; }
  int sm_count() const { return sm_count_; }

 private:
  void* part_[2] = {nullptr, nullptr};
  std::size_t part_bytes_ = 0;
  double* d_result_ = nullptr;
  double* h_result_ = nullptr;
  int device_ = 0;
  int sm_count_ = 1;
};

// The per-thread default workspace of the current device.
ReductionWorkspace& default_reduction_workspace();

// ---- Flat arrays ----------------------------------------------------------------------
// Reduces d_data[0..n) (device memory) with rung v; synchronises the stream and returns the
// result. n == 0 gives the identity (0). MaxAbs propagates NaN.
template <typename T>
double reduce(ReductionVariant v, ReduceOp op, const T* d_data, std::size_t n, cudaStream_t stream,
              ReductionWorkspace* ws = nullptr);
// Same, but asynchronous: the result (double) is left in ws.d_result(); nothing is synced.
template <typename T>
void reduce_async(ReductionVariant v, ReduceOp op, const T* d_data, std::size_t n,
                  cudaStream_t stream, ReductionWorkspace& ws);

// ---- Padded GridDesc fields (interior cells only), modern rung, double accumulation ------
// Work items are segments of interior x-rows (ghost rows are never read); a warp reads the
// 16-byte-aligned vectors covering its segment and masks the few elements outside it (about
// one extra vector per row, mostly cache hits). No copies, no per-element integer division.
// Sum / SumSquares accumulate in double; MaxAbs of a field in T (exact either way).
template <typename T>
double reduce_interior(ReduceOp op, const T* d_u, const GridDesc& g, cudaStream_t stream,
                       ReductionWorkspace* ws = nullptr);
// op applied to a - b over the interior (the difference is formed in double).
template <typename T>
double reduce_diff_interior(ReduceOp op, const T* d_a, const T* d_b, const GridDesc& g,
                            cudaStream_t stream, ReductionWorkspace* ws = nullptr);
// op applied to the Poisson residual r = f + lap(u) over the interior (f may be null). The
// ghosts of u must be filled. lap(u) = sum_d (u[-d] - 2u + u[+d]) / h_d^2, in double.
template <typename T>
double reduce_residual_interior(ReduceOp op, const T* d_u, const T* d_f, const GridDesc& g,
                                cudaStream_t stream, ReductionWorkspace* ws = nullptr);
// Asynchronous forms: result in ws.d_result().
template <typename T>
void reduce_interior_async(ReduceOp op, const T* d_u, const GridDesc& g, cudaStream_t stream,
                           ReductionWorkspace& ws);
template <typename T>
void reduce_diff_interior_async(ReduceOp op, const T* d_a, const T* d_b, const GridDesc& g,
                                cudaStream_t stream, ReductionWorkspace& ws);
template <typename T>
void reduce_residual_interior_async(ReduceOp op, const T* d_u, const T* d_f, const GridDesc& g,
                                    cudaStream_t stream, ReductionWorkspace& ws);

namespace testing {
// Negative control for the tests only: rung 5 written the pre-Volta way (plain shared-memory
// pointer, no volatile, no __syncwarp in the last warp). It is WRONG by design; the tests use it
// to show that their data patterns (and compute-sanitizer racecheck) catch the bug.
template <typename T>
double reduce_r5_unsafe(ReduceOp op, const T* d_data, std::size_t n, cudaStream_t stream);
}  // namespace testing

}  // namespace heatsolve::cuda
