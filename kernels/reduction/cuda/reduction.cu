// Reduction ladder (rungs 1-7) and the modern rung over flat device arrays; the workspace.
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/per_device.cuh"
#include "kernels/reduction/cuda/reduction_launch.cuh"

namespace heatsolve::cuda {

// ---- Names ----------------------------------------------------------------------------------
const char* reduction_variant_name(ReductionVariant v) {
  switch (v) {
    case ReductionVariant::Interleaved:
      return "r1_interleaved";
    case ReductionVariant::InterleavedNonDivergent:
      return "r2_interleaved_nondivergent";
    case ReductionVariant::Sequential:
      return "r3_sequential";
    case ReductionVariant::FirstAddDuringLoad:
      return "r4_first_add";
    case ReductionVariant::UnrollLastWarp:
      return "r5_unroll_last_warp";
    case ReductionVariant::CompleteUnroll:
      return "r6_complete_unroll";
    case ReductionVariant::MultipleElements:
      return "r7_multiple_elements";
    case ReductionVariant::Modern:
      return "r8_modern";
  }
  return "unknown";
}

std::vector<ReductionVariant> all_reduction_variants() {
  return {ReductionVariant::Interleaved,      ReductionVariant::InterleavedNonDivergent,
          ReductionVariant::Sequential,       ReductionVariant::FirstAddDuringLoad,
          ReductionVariant::UnrollLastWarp,   ReductionVariant::CompleteUnroll,
          ReductionVariant::MultipleElements, ReductionVariant::Modern};
}

bool parse_reduction_variant(const std::string& name, ReductionVariant* out) {
  for (ReductionVariant v : all_reduction_variants()) {
    const std::string full = reduction_variant_name(v);
    if (name == full || name == full.substr(0, 2)) {
      *out = v;
      return true;
    }
  }
  if (name == "modern" || name == "fastest") {
    *out = ReductionVariant::Modern;
    return true;
  }
  return false;
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::SumSquares:
      return "sumsq";
    case ReduceOp::MaxAbs:
      return "maxabs";
  }
  return "unknown";
}

// ---- Workspace ------------------------------------------------------------------------------
ReductionWorkspace::ReductionWorkspace() {
  CUDA_CHECK(cudaGetDevice(&device_));
  CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
  // d_result_[0]: the result; d_result_[1]: the fused combine's arrival counter, which must
  // start at zero (the memset is ordered before any later launch on any stream by the sync).
  CUDA_CHECK(cudaMalloc(&d_result_, 2 * sizeof(double)));
  CUDA_CHECK(cudaMemset(d_result_, 0, 2 * sizeof(double)));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMallocHost(&h_result_, sizeof(double)));
  reserve(64 * 1024);
}

ReductionWorkspace::~ReductionWorkspace() {
  // Errors ignored: this may run after the CUDA runtime shut down (thread_local at exit).
  cudaFree(part_[0]);
  cudaFree(part_[1]);
  cudaFree(d_result_);
  cudaFreeHost(h_result_);
}

void ReductionWorkspace::reserve(std::size_t bytes) {
  if (bytes <= part_bytes_) return;
  bytes = std::max(bytes, 2 * part_bytes_);
  for (void*& p : part_) {
    if (p) CUDA_CHECK(cudaFree(p));  // implicit device sync: no kernel still reads it
    p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, bytes));
  }
  part_bytes_ = bytes;
}

ReductionWorkspace& default_reduction_workspace() {
  return per_thread_device_instance<ReductionWorkspace>();
}

namespace detail {

constexpr int kLadderBlock = 256;

// One ladder pass of rung v (0 = the unsafe rung-5 control) over n positions of ld; returns the
// number of partials written to out.
template <class Op, class A, class L>
std::size_t ladder_pass(int rung, const L& ld, std::size_t n, A* out, int sm_count,
                        cudaStream_t s) {
  constexpr int B = kLadderBlock;
  const std::size_t smem = B * sizeof(A);
  const std::size_t one = (n + B - 1) / B, two = (n + 2 * B - 1) / B / 2;
  std::size_t blocks = 0;
  switch (rung) {
    case 1:
      blocks = one;
      reduce_r1<Op, A><<<blocks, B, smem, s>>>(ld, n, out);
      break;
    case 2:
      blocks = one;
      reduce_r2<Op, A><<<blocks, B, smem, s>>>(ld, n, out);
      break;
    case 3:
      blocks = one;
      reduce_r3<Op, A><<<blocks, B, smem, s>>>(ld, n, out);
      break;
    case 4:
      blocks = two;
      reduce_r4<Op, A><<<blocks, B, smem, s>>>(ld, n, out);
      break;
    case 5:
      blocks = two;
      reduce_r5<Op, A><<<blocks, B, smem, s>>>(ld, n, out);
      break;
    case 0:
      blocks = two;
      reduce_r5_unsafe<Op, A><<<blocks, B, smem, s>>>(ld, n, out);
      break;
    case 6:
      blocks = two;
      reduce_r6<B, Op, A><<<blocks, B, 0, s>>>(ld, n, out);
      break;
    case 7: {
      auto* k = reduce_r7<B, Op, A, L>;
      static const int resident = blocks_per_sm(k, B);
      blocks = std::min<std::size_t>(two, std::size_t(sm_count) * resident);
      k<<<blocks, B, 0, s>>>(ld, n, out);
      break;
    }
    default:
      throw std::invalid_argument("bad reduction rung");
  }
  CUDA_CHECK_LAUNCH();
  return blocks;
}

// Classic driver: re-launch the same rung on the partials until one value remains.
template <class T, class Op>
void ladder(int rung, const T* d, std::size_t n, cudaStream_t s, ReductionWorkspace& ws) {
  using A = T;  // ladder rungs accumulate in the input precision
  ws.reserve(((n + kLadderBlock - 1) / kLadderBlock + 1) * sizeof(A));
  A* buf[2] = {static_cast<A*>(ws.partials(0)), static_cast<A*>(ws.partials(1))};
  std::size_t cnt = ladder_pass<Op, A>(rung, FlatLoader<T, 1>{d}, n, buf[0], ws.sm_count(), s);
  int cur = 0;
  while (cnt > 1) {
    cnt = ladder_pass<Op, A>(rung, PartialLoader<A>{buf[cur]}, cnt, buf[cur ^ 1], ws.sm_count(), s);
    cur ^= 1;
  }
  store_result<A><<<1, 1, 0, s>>>(buf[cur], ws.d_result());
  CUDA_CHECK_LAUNCH();
}

template <class Tu, class T, class Op>
void modern_flat(const T* d, std::size_t n, cudaStream_t s, ReductionWorkspace& ws) {
  constexpr int V = 16 / sizeof(T);
  const std::size_t head = align_head(d, n);
  const std::size_t nvec = (n - head) / V;
  launch_modern<Tu, Op, ModernAcc<Op, T>>(FlatLoader<T, V>{d}, head, nvec, n, s, ws);
}

}  // namespace detail

template <typename T>
void reduce_async(ReductionVariant v, ReduceOp op, const T* d_data, std::size_t n,
                  cudaStream_t stream, ReductionWorkspace& ws) {
  if (n == 0) {
    CUDA_CHECK(cudaMemsetAsync(ws.d_result(), 0, sizeof(double), stream));  // identity: 0.0
    return;
  }
  detail::dispatch_op(op, [&](auto o) {
    using Op = decltype(o);
    if (v == ReductionVariant::Modern)
      detail::modern_flat<detail::SolverTuning<T>, T, Op>(d_data, n, stream, ws);
    else
      detail::ladder<T, Op>(static_cast<int>(v), d_data, n, stream, ws);
  });
}

template <typename T>
double reduce(ReductionVariant v, ReduceOp op, const T* d_data, std::size_t n, cudaStream_t stream,
              ReductionWorkspace* ws) {
  ReductionWorkspace& w = ws ? *ws : default_reduction_workspace();
  reduce_async(v, op, d_data, n, stream, w);
  return detail::finish(stream, w);
}

std::string modern_config_name(const ModernReductionConfig& c) {
  return "r8_" + std::to_string(c.block) + "t_x" + std::to_string(c.unroll) + "_g" +
         std::to_string(c.max_blocks) + (c.fused ? "_fused" : "_2launch");
}

std::vector<ModernReductionConfig> modern_reduction_configs() {
  return {std::begin(kModernCandidates), std::end(kModernCandidates)};
}

template <typename T>
void reduce_modern_async(const ModernReductionConfig& cfg, ReduceOp op, const T* d_data,
                         std::size_t n, cudaStream_t stream, ReductionWorkspace& ws) {
  detail::with_candidate(cfg, [&](auto tu) {
    if (n == 0) {
      CUDA_CHECK(cudaMemsetAsync(ws.d_result(), 0, sizeof(double), stream));
      return;
    }
    detail::dispatch_op(op, [&](auto o) {
      detail::modern_flat<decltype(tu), T, decltype(o)>(d_data, n, stream, ws);
    });
  });
}

template <typename T>
double reduce_modern(const ModernReductionConfig& cfg, ReduceOp op, const T* d_data, std::size_t n,
                     cudaStream_t stream, ReductionWorkspace* ws) {
  ReductionWorkspace& w = ws ? *ws : default_reduction_workspace();
  reduce_modern_async(cfg, op, d_data, n, stream, w);
  return detail::finish(stream, w);
}

namespace testing {
template <typename T>
double reduce_r5_unsafe(ReduceOp op, const T* d_data, std::size_t n, cudaStream_t stream) {
  ReductionWorkspace& w = default_reduction_workspace();
  if (n == 0) return 0.0;
  detail::dispatch_op(op, [&](auto o) { detail::ladder<T, decltype(o)>(0, d_data, n, stream, w); });
  return detail::finish(stream, w);
}
template double reduce_r5_unsafe<float>(ReduceOp, const float*, std::size_t, cudaStream_t);
template double reduce_r5_unsafe<double>(ReduceOp, const double*, std::size_t, cudaStream_t);
}  // namespace testing

template double reduce<float>(ReductionVariant, ReduceOp, const float*, std::size_t, cudaStream_t,
                              ReductionWorkspace*);
template double reduce<double>(ReductionVariant, ReduceOp, const double*, std::size_t, cudaStream_t,
                               ReductionWorkspace*);
template void reduce_async<float>(ReductionVariant, ReduceOp, const float*, std::size_t,
                                  cudaStream_t, ReductionWorkspace&);
template void reduce_async<double>(ReductionVariant, ReduceOp, const double*, std::size_t,
                                   cudaStream_t, ReductionWorkspace&);
template double reduce_modern<float>(const ModernReductionConfig&, ReduceOp, const float*,
                                     std::size_t, cudaStream_t, ReductionWorkspace*);
template double reduce_modern<double>(const ModernReductionConfig&, ReduceOp, const double*,
                                      std::size_t, cudaStream_t, ReductionWorkspace*);
template void reduce_modern_async<float>(const ModernReductionConfig&, ReduceOp, const float*,
                                         std::size_t, cudaStream_t, ReductionWorkspace&);
template void reduce_modern_async<double>(const ModernReductionConfig&, ReduceOp, const double*,
                                          std::size_t, cudaStream_t, ReductionWorkspace&);

}  // namespace heatsolve::cuda
