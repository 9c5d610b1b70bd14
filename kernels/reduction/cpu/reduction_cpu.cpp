#include "kernels/reduction/cpu/reduction_cpu.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace heatsolve::cpu {
namespace {

double transform(ReduceOp op, double x) {
  switch (op) {
    case ReduceOp::Sum:
      return x;
    case ReduceOp::SumSquares:
      return x * x;
    case ReduceOp::MaxAbs:
      return std::fabs(x);
  }
  return x;
}

double combine(ReduceOp op, double a, double b) {
  if (op == ReduceOp::MaxAbs) return (a > b || std::isnan(a)) ? a : b;
  return a + b;
}

// Reduces value(i) for i in [0, count): fixed chunks (independent of the thread count), each
// accumulated in order, then the chunk results in order.
template <class F>
double chunked(ReduceOp op, std::int64_t count, F&& value) {
  constexpr std::int64_t kChunk = 1 << 14;
  const std::int64_t nchunks = (count + kChunk - 1) / kChunk;
  std::vector<double> part(static_cast<std::size_t>(nchunks), 0.0);
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < nchunks; ++c) {
    double acc = 0.0;
    const std::int64_t end = std::min(count, (c + 1) * kChunk);
    for (std::int64_t i = c * kChunk; i < end; ++i) acc = combine(op, acc, transform(op, value(i)));
    part[static_cast<std::size_t>(c)] = acc;
  }
  double acc = 0.0;
  for (double p : part) acc = combine(op, acc, p);
  return acc;
}

// Visits interior cells as (row index, x) pairs; value(p) gets the padded linear index.
template <class F>
double interior(ReduceOp op, const GridDesc& g, F&& value) {
  const std::int64_t nz = g.dims == 3 ? g.nz : 1;
  const std::int64_t rows = static_cast<std::int64_t>(g.ny) * nz;
  const std::int64_t count = rows * g.nx;
  return chunked(op, count, [&](std::int64_t i) {
    const std::int64_t x = i % g.nx, r = i / g.nx;
    const std::int64_t y = r % g.ny, z = r / g.ny;
    return value(g.index(static_cast<int>(x), static_cast<int>(y), static_cast<int>(z)));
  });
}

}  // namespace

template <typename T>
double reduce_flat(ReduceOp op, const T* data, std::size_t n) {
  return chunked(op, static_cast<std::int64_t>(n),
                 [&](std::int64_t i) { return static_cast<double>(data[i]); });
}

template <typename T>
double reduce_interior(ReduceOp op, const T* u, const GridDesc& g) {
  return interior(op, g, [&](std::int64_t p) { return static_cast<double>(u[p]); });
}

template <typename T>
double reduce_diff_interior(ReduceOp op, const T* a, const T* b, const GridDesc& g) {
  return interior(
      op, g, [&](std::int64_t p) { return static_cast<double>(a[p]) - static_cast<double>(b[p]); });
}

template <typename T>
double reduce_residual_interior(ReduceOp op, const T* u, const T* f, const GridDesc& g) {
  const std::int64_t sy = g.stride_y(), sz = g.stride_z();
  const double ihx2 = 1.0 / (g.hx * g.hx), ihy2 = 1.0 / (g.hy * g.hy);
  const double ihz2 = g.dims == 3 ? 1.0 / (g.hz * g.hz) : 0.0;
  const bool three_d = g.dims == 3;
  return interior(op, g, [&](std::int64_t p) {
    const double c = u[p];
    double lap = (static_cast<double>(u[p - 1]) - 2.0 * c + static_cast<double>(u[p + 1])) * ihx2 +
                 (static_cast<double>(u[p - sy]) - 2.0 * c + static_cast<double>(u[p + sy])) * ihy2;
    if (three_d)
      lap += (static_cast<double>(u[p - sz]) - 2.0 * c + static_cast<double>(u[p + sz])) * ihz2;
    return f ? static_cast<double>(f[p]) + lap : lap;
  });
}

#define HS_INSTANTIATE(T)                                                                 \
  template double reduce_flat<T>(ReduceOp, const T*, std::size_t);                        \
  template double reduce_interior<T>(ReduceOp, const T*, const GridDesc&);                \
  template double reduce_diff_interior<T>(ReduceOp, const T*, const T*, const GridDesc&); \
  template double reduce_residual_interior<T>(ReduceOp, const T*, const T*, const GridDesc&);
HS_INSTANTIATE(float)
HS_INSTANTIATE(double)
#undef HS_INSTANTIATE

}  // namespace heatsolve::cpu
