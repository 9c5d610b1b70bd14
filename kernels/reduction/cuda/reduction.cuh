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
// fixed-order shuffles/trees and a separate, fixed-order combine of the block partials (a
// second launch, or -- "fused" -- the last block to finish; the counter that elects it never
// touches a value). Same input => bitwise identical result. The modern rung's grid depends on
// n and its (compile-time) configuration only, so it is bitwise reproducible across GPU models
// too; rung 7 sizes its grid by the SM count.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/grid.hpp"
#include "kernels/backend.hpp"  // ReduceOp

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

// ---- Tuning of the modern rung (r8) ---------------------------------------------------------
// Every knob is a template parameter of the kernels; each candidate below is compiled, timed
// by the bench (`heatsolve bench --reductions`, one row each) and checked by the tests.
struct ModernReductionConfig {
  int block = 256;        // threads per block (pass 1 and the combine of the partials)
  int unroll = 4;         // 16-byte vectors per thread per tile: independent loads in flight
  int max_blocks = 1024;  // grid = min(ceil(vectors / (block * unroll)), max_blocks): n only
  bool fused = false;     // true: the last block to finish combines the partials (one launch)
  constexpr bool operator==(const ModernReductionConfig& o) const {
    return block == o.block && unroll == o.unroll && max_blocks == o.max_blocks && fused == o.fused;
  }
  constexpr bool operator!=(const ModernReductionConfig& o) const { return !(*this == o); }
};

// THE solver's choice: the configuration of ReductionVariant::Modern and of the field norms
// (reduce_interior / _diff / _residual; `unroll` is then the vectors per lane per row step).
// Switch here after a bench run; any value works (it need not be a candidate below).
inline constexpr ModernReductionConfig kModernConfigFloat{256, 8, 4096, true};
inline constexpr ModernReductionConfig kModernConfigDouble{256, 8, 4096, true};

template <typename T>
constexpr ModernReductionConfig modern_config() {
  return sizeof(T) == sizeof(float) ? kModernConfigFloat : kModernConfigDouble;
}

// The configurations the bench times side by side (and the tests check). The first is the
// original r8 (256 threads, 4 vectors, 1024 blocks, separate combine kernel).
inline constexpr ModernReductionConfig kModernCandidates[] = {
    {256, 4, 1024, false},  // original r8
    {256, 4, 1024, true},   // + fused combine: one launch less
    {256, 4, 4096, false},  // ~4 waves of blocks: SMs that run ahead take more blocks
    {256, 4, 4096, true},   //
    {256, 8, 4096, true},   // twice the bytes in flight per thread (CUB: 64 B float, 128 B double)
    {256, 2, 8192, true},   // many short blocks
    {512, 4, 2048, true},   // 512 threads
    {256, 4, 8192, true},   //
};

// "r8_256t_x4_g4096_fused" / "..._2launch".
std::string modern_config_name(const ModernReductionConfig& c);
std::vector<ModernReductionConfig> modern_reduction_configs();  // kModernCandidates

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
  // Device: arrival counter of the fused combine; zero between launches (the last block
  // re-arms it).
  unsigned* d_counter() const { return reinterpret_cast<unsigned*>(d_result_ + 1); }
  double* h_result() const { return h_result_; }  // pinned host mirror
  int device() const { return device_; }
  int sm_count() const { return sm_count_; }
  // Host work for the next wait on a result (Backend::while_waiting): run by finish() once,
  // before it blocks.
  void before_wait(std::function<void()> work) { before_wait_ = std::move(work); }
  void run_before_wait() {
    if (!before_wait_) return;
    const std::function<void()> work = std::move(before_wait_);
    before_wait_ = nullptr;
    work();
  }

 private:
  std::function<void()> before_wait_;
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

// Modern rung with an explicit configuration, which must be one of kModernCandidates
// (std::invalid_argument otherwise). Bench and tests; the solver uses modern_config<T>().
template <typename T>
double reduce_modern(const ModernReductionConfig& cfg, ReduceOp op, const T* d_data, std::size_t n,
                     cudaStream_t stream, ReductionWorkspace* ws = nullptr);
template <typename T>
void reduce_modern_async(const ModernReductionConfig& cfg, ReduceOp op, const T* d_data,
                         std::size_t n, cudaStream_t stream, ReductionWorkspace& ws);

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
// sum a * b over the interior (products formed and summed in double): Backend::dot.
template <typename T>
double dot_interior(const T* d_a, const T* d_b, const GridDesc& g, cudaStream_t stream,
                    ReductionWorkspace* ws = nullptr);
// op applied to the Poisson residual r = f + lap(u) over the interior (f may be null). The
// ghosts of u must be filled. lap(u) = sum_d (u[-d] - 2u + u[+d]) / h_d^2, in double.
template <typename T>
double reduce_residual_interior(ReduceOp op, const T* d_u, const T* d_f, const GridDesc& g,
                                cudaStream_t stream, ReductionWorkspace* ws = nullptr);
// sum over the interior of stencil(u, f, c)^2 (each value the bits stencil() stores, squared
// and summed in double; f stored, generated or none): a residual's squared norm without
// storing it (Backend::stencil_square_sum). The ghosts of u must be filled.
template <typename T>
double stencil_square_sum_interior(const T* d_u, const SourceRef<T>& f, const GridDesc& g,
                                   const StencilCoeffs<T>& c, cudaStream_t stream,
                                   ReductionWorkspace* ws = nullptr);
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
template <typename T>
void dot_interior_async(const T* d_a, const T* d_b, const GridDesc& g, cudaStream_t stream,
                        ReductionWorkspace& ws);

namespace testing {
// Negative control for the tests only: rung 5 written the pre-Volta way (plain shared-memory
// pointer, no volatile, no __syncwarp in the last warp). It is WRONG by design; the tests use it
// to show that their data patterns (and compute-sanitizer racecheck) catch the bug.
template <typename T>
double reduce_r5_unsafe(ReduceOp op, const T* d_data, std::size_t n, cudaStream_t stream);
}  // namespace testing

}  // namespace heatsolve::cuda
