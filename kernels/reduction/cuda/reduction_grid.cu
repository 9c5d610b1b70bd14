// Solver norms over padded GridDesc fields: the modern rung with interior-masking loaders.
#include "kernels/reduction/cuda/reduction_launch.cuh"
#include "kernels/stencil/cuda/stencil_kernels.cuh"

namespace heatsolve::cuda {
namespace detail {

bool empty_grid(const GridDesc& g, cudaStream_t s, ReductionWorkspace& ws) {
  if (g.interior_size() > 0) return false;
  CUDA_CHECK(cudaMemsetAsync(ws.d_result(), 0, sizeof(double), s));
  return true;
}

// Leading elements before the pointer is 16-byte aligned (0..V-1).
template <class T>
std::int64_t head_of(const T* p) {
  return static_cast<std::int64_t>(align_head(p, 16));
}

// op over Pair::apply(a, b) (formed in double) over the interior: 16-byte vectors when a and b
// share the 16-byte phase, else scalar loads (they can never both be aligned).
template <class Pair, class Op, class T>
void launch_pair_rows(const T* a, const T* b, const GridDesc& g, cudaStream_t s,
                      ReductionWorkspace& ws) {
  if (empty_grid(g, s, ws)) return;
  using Tu = SolverTuning<T>;
  constexpr int V = 16 / sizeof(T), U = Tu::kUnroll;
  if (head_of(a) == head_of(b))
    launch_rows<Tu, Op, double>(PairRows<T, V, U, Pair>{a, b, head_of(a)},
                                row_geometry(g, 32 * V * U * 2), s, ws);
  else
    launch_rows<Tu, Op, double>(PairRows<T, 1, U, Pair>{a, b, 0}, row_geometry(g, 32 * U * 2), s,
                                ws);
}

// The squares of stencil(u, f, c) over a row segment: each value with the point update every
// sweep uses (the bits stencil() stores), squared and summed in double. A generated source needs
// the plane of the stream axis, the same for the whole segment (one row).
template <class T>
struct StencilSquareRows {
  const T* u;
  SourceRef<T> src;  // stored, generated, or none
  StencilCoeffs<T> c;
  std::int64_t sy = 0, sz = 0, off0 = 0;
  bool three_d = false;
  template <class Op, class A>
  __device__ A fold(std::int64_t start, std::int64_t end, int lane, A acc) const {
    const int plane = int((start - off0) / (three_d ? sz : sy));
    for (std::int64_t i = start + lane; i < end; i += 32) {
      const T zm = three_d ? __ldg(u + i - sz) : T(0), zp = three_d ? __ldg(u + i + sz) : T(0);
      const T r = three_d ? stencil_point<3>(c, __ldg(u + i), __ldg(u + i - 1), __ldg(u + i + 1),
                                             __ldg(u + i - sy), __ldg(u + i + sy), zm, zp, src, i,
                                             plane, plane)
                          : stencil_point<2>(c, __ldg(u + i), __ldg(u + i - 1), __ldg(u + i + 1),
                                             __ldg(u + i - sy), __ldg(u + i + sy), zm, zp, src, i,
                                             plane, plane);
      acc = Op::combine(acc, A(r) * A(r));
    }
    return acc;
  }
};

}  // namespace detail

template <typename T>
double stencil_square_sum_interior(const T* d_u, const SourceRef<T>& f, const GridDesc& g,
                                   const StencilCoeffs<T>& c, cudaStream_t stream,
                                   ReductionWorkspace* ws) {
  using namespace detail;
  ReductionWorkspace& w = ws ? *ws : default_reduction_workspace();
  if (!empty_grid(g, stream, w)) {
    const StencilSquareRows<T> ld{d_u,        f, c, g.stride_y(), g.stride_z(), g.interior_offset(),
                                  g.dims == 3};
    launch_rows<SolverTuning<T>, SumOp, double>(ld, row_geometry(g, 32 * 16), stream, w);
  }
  return finish(stream, w);
}

template <typename T>
void reduce_interior_async(ReduceOp op, const T* d_u, const GridDesc& g, cudaStream_t stream,
                           ReductionWorkspace& ws) {
  using namespace detail;
  if (empty_grid(g, stream, ws)) return;
  using Tu = SolverTuning<T>;
  constexpr int V = 16 / sizeof(T), U = Tu::kUnroll;
  const RowGeom geo = row_geometry(g, 32 * V * U * 2);
  dispatch_op(op, [&](auto o) {
    using Op = decltype(o);
    launch_rows<Tu, Op, ModernAcc<Op, T>>(FieldRows<T, V, U>{d_u, head_of(d_u)}, geo, stream, ws);
  });
}

template <typename T>
void reduce_diff_interior_async(ReduceOp op, const T* d_a, const T* d_b, const GridDesc& g,
                                cudaStream_t stream, ReductionWorkspace& ws) {
  detail::dispatch_op(op, [&](auto o) {
    detail::launch_pair_rows<detail::MinusPair, decltype(o)>(d_a, d_b, g, stream, ws);
  });
}

template <typename T>
void dot_interior_async(const T* d_a, const T* d_b, const GridDesc& g, cudaStream_t stream,
                        ReductionWorkspace& ws) {
  detail::launch_pair_rows<detail::TimesPair, detail::SumOp>(d_a, d_b, g, stream, ws);
}

template <typename T>
void reduce_residual_interior_async(ReduceOp op, const T* d_u, const T* d_f, const GridDesc& g,
                                    cudaStream_t stream, ReductionWorkspace& ws) {
  using namespace detail;
  if (empty_grid(g, stream, ws)) return;
  ResidualRows<T> ld{d_u,
                     d_f,
                     g.stride_y(),
                     g.stride_z(),
                     g.dims == 3,
                     1.0 / (g.hx * g.hx),
                     1.0 / (g.hy * g.hy),
                     g.dims == 3 ? 1.0 / (g.hz * g.hz) : 0.0};
  dispatch_op(op, [&](auto o) {
    launch_rows<SolverTuning<T>, decltype(o), double>(ld, row_geometry(g, 32 * 16), stream, ws);
  });
}

template <typename T>
double reduce_interior(ReduceOp op, const T* d_u, const GridDesc& g, cudaStream_t stream,
                       ReductionWorkspace* ws) {
  ReductionWorkspace& w = ws ? *ws : default_reduction_workspace();
  reduce_interior_async(op, d_u, g, stream, w);
  return detail::finish(stream, w);
}

template <typename T>
double reduce_diff_interior(ReduceOp op, const T* d_a, const T* d_b, const GridDesc& g,
                            cudaStream_t stream, ReductionWorkspace* ws) {
  ReductionWorkspace& w = ws ? *ws : default_reduction_workspace();
  reduce_diff_interior_async(op, d_a, d_b, g, stream, w);
  return detail::finish(stream, w);
}

template <typename T>
double dot_interior(const T* d_a, const T* d_b, const GridDesc& g, cudaStream_t stream,
                    ReductionWorkspace* ws) {
  ReductionWorkspace& w = ws ? *ws : default_reduction_workspace();
  dot_interior_async(d_a, d_b, g, stream, w);
  return detail::finish(stream, w);
}

template <typename T>
double reduce_residual_interior(ReduceOp op, const T* d_u, const T* d_f, const GridDesc& g,
                                cudaStream_t stream, ReductionWorkspace* ws) {
  ReductionWorkspace& w = ws ? *ws : default_reduction_workspace();
  reduce_residual_interior_async(op, d_u, d_f, g, stream, w);
  return detail::finish(stream, w);
}

#define HS_INSTANTIATE(T)                                                                        \
  template double reduce_interior<T>(ReduceOp, const T*, const GridDesc&, cudaStream_t,          \
                                     ReductionWorkspace*);                                       \
  template double reduce_diff_interior<T>(ReduceOp, const T*, const T*, const GridDesc&,         \
                                          cudaStream_t, ReductionWorkspace*);                    \
  template double reduce_residual_interior<T>(ReduceOp, const T*, const T*, const GridDesc&,     \
                                              cudaStream_t, ReductionWorkspace*);                \
  template void reduce_interior_async<T>(ReduceOp, const T*, const GridDesc&, cudaStream_t,      \
                                         ReductionWorkspace&);                                   \
  template void reduce_diff_interior_async<T>(ReduceOp, const T*, const T*, const GridDesc&,     \
                                              cudaStream_t, ReductionWorkspace&);                \
  template void reduce_residual_interior_async<T>(ReduceOp, const T*, const T*, const GridDesc&, \
                                                  cudaStream_t, ReductionWorkspace&);            \
  template double dot_interior<T>(const T*, const T*, const GridDesc&, cudaStream_t,             \
                                  ReductionWorkspace*);                                          \
  template void dot_interior_async<T>(const T*, const T*, const GridDesc&, cudaStream_t,         \
                                      ReductionWorkspace&);                                      \
  template double stencil_square_sum_interior<T>(const T*, const SourceRef<T>&, const GridDesc&, \
                                                 const StencilCoeffs<T>&, cudaStream_t,          \
                                                 ReductionWorkspace*);
HS_INSTANTIATE(float)
HS_INSTANTIATE(double)
#undef HS_INSTANTIATE

}  // namespace heatsolve::cuda
