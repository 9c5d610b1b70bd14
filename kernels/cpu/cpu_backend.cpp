#include "kernels/cpu/cpu_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace heatsolve {

template <typename T>
void CpuArray<T>::copy_from_host(const T* src) {
  std::memcpy(data_.data(), src, data_.size() * sizeof(T));
}
template <typename T>
void CpuArray<T>::copy_to_host(T* dst) const {
  std::memcpy(dst, data_.data(), data_.size() * sizeof(T));
}
template <typename T>
void CpuArray<T>::copy_from(const Array<T>& other) {
  if (other.size() != size()) throw std::invalid_argument("CpuArray::copy_from: size mismatch");
  std::memcpy(data_.data(), other.data(), data_.size() * sizeof(T));
}

namespace {

// Ghost value for one boundary cell given the adjacent interior value.
template <typename T>
inline T ghost_value(const FaceBC& bc, T inner, T opposite, double h) {
  switch (bc.type) {
    case BoundaryType::Dirichlet:
      return static_cast<T>(2 * bc.value) - inner;  // face value is the mean of ghost and inner
    case BoundaryType::Neumann:
      return inner + static_cast<T>(bc.value * h);  // outward du/dn = value
    case BoundaryType::Periodic:
      return opposite;
    case BoundaryType::Exchange:
      break;
  }
  return inner;  // unreachable for Exchange (callers skip it)
}

}  // namespace

template <typename T>
void cpu_apply_boundary(T* u, const GridDesc& g, const BoundaryFaces& bc) {
  const int nz = g.dims == 3 ? g.nz : 1;
  // x faces: loop over (j, k)
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g.ny; ++j) {
      const int kk = g.dims == 3 ? k : 0;
      if (bc[0].type != BoundaryType::Exchange)
        u[g.index(-1, j, kk)] =
            ghost_value(bc[0], u[g.index(0, j, kk)], u[g.index(g.nx - 1, j, kk)], g.hx);
      if (bc[1].type != BoundaryType::Exchange)
        u[g.index(g.nx, j, kk)] =
            ghost_value(bc[1], u[g.index(g.nx - 1, j, kk)], u[g.index(0, j, kk)], g.hx);
    }
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k)
    for (int i = 0; i < g.nx; ++i) {
      const int kk = g.dims == 3 ? k : 0;
      if (bc[2].type != BoundaryType::Exchange)
        u[g.index(i, -1, kk)] =
            ghost_value(bc[2], u[g.index(i, 0, kk)], u[g.index(i, g.ny - 1, kk)], g.hy);
      if (bc[3].type != BoundaryType::Exchange)
        u[g.index(i, g.ny, kk)] =
            ghost_value(bc[3], u[g.index(i, g.ny - 1, kk)], u[g.index(i, 0, kk)], g.hy);
    }
  if (g.dims != 3) return;
#pragma omp parallel for collapse(2) schedule(static)
  for (int j = 0; j < g.ny; ++j)
    for (int i = 0; i < g.nx; ++i) {
      if (bc[4].type != BoundaryType::Exchange)
        u[g.index(i, j, -1)] =
            ghost_value(bc[4], u[g.index(i, j, 0)], u[g.index(i, j, g.nz - 1)], g.hz);
      if (bc[5].type != BoundaryType::Exchange)
        u[g.index(i, j, g.nz)] =
            ghost_value(bc[5], u[g.index(i, j, g.nz - 1)], u[g.index(i, j, 0)], g.hz);
    }
}

template <typename T>
void cpu_stencil(const T* u, T* out, const T* f, const GridDesc& g, const StencilCoeffs<T>& c) {
  const int nz = g.dims == 3 ? g.nz : 1;
  const std::int64_t sy = g.stride_y(), sz = g.stride_z();
  const bool three_d = g.dims == 3;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g.ny; ++j) {
      const std::int64_t row = g.index(0, j, three_d ? k : 0);
      const T* ur = u + row;
      T* outr = out + row;
      const T* fr = f ? f + row : nullptr;
#pragma omp simd
      for (int i = 0; i < g.nx; ++i) {
        // Same association order as the CUDA kernels so results agree to the last bit
        // wherever the compilers contract the same way.
        T v = c.center * ur[i] + c.cx * (ur[i - 1] + ur[i + 1]) + c.cy * (ur[i - sy] + ur[i + sy]);
        if (three_d) v += c.cz * (ur[i - sz] + ur[i + sz]);
        if (fr) v += c.source * fr[i];
        outr[i] = v;
      }
    }
}

namespace {

// Reduces op(value(i,j,k)) over the interior in double. Per-row partials combined in a
// fixed order so the result does not depend on the thread count.
template <typename T, typename Value>
double reduce_interior(const GridDesc& g, ReduceOp op, Value value) {
  const int nz = g.dims == 3 ? g.nz : 1;
  const std::int64_t rows = std::int64_t(g.ny) * nz;
  std::vector<double> partial(rows);
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const int j = int(r % g.ny), k = g.dims == 3 ? int(r / g.ny) : 0;
    const std::int64_t row = g.index(0, j, k);
    double acc = 0;
    for (int i = 0; i < g.nx; ++i) {
      const double v = value(row + i);
      switch (op) {
        case ReduceOp::Sum:
          acc += v;
          break;
        case ReduceOp::SumSquares:
          acc += v * v;
          break;
        case ReduceOp::MaxAbs:
          acc = std::max(acc, std::abs(v));
          break;
      }
    }
    partial[r] = acc;
  }
  double total = 0;
  for (double p : partial) total = op == ReduceOp::MaxAbs ? std::max(total, p) : total + p;
  return total;
}

}  // namespace

template <typename T>
std::string CpuBackend<T>::description() const {
  return "CPU, OpenMP " + std::to_string(omp_get_max_threads()) + " threads";
}

template <typename T>
double CpuBackend<T>::reduce(const T* u, const GridDesc& g, ReduceOp op) {
  return reduce_interior<T>(g, op, [u](std::int64_t i) { return double(u[i]); });
}

template <typename T>
double CpuBackend<T>::reduce_diff(const T* a, const T* b, const GridDesc& g, ReduceOp op) {
  return reduce_interior<T>(g, op, [a, b](std::int64_t i) { return double(a[i]) - double(b[i]); });
}

template <typename T>
double CpuBackend<T>::reduce_residual(const T* u, const T* f, const GridDesc& g, ReduceOp op) {
  const double ix = 1.0 / (g.hx * g.hx), iy = 1.0 / (g.hy * g.hy);
  const double iz = g.dims == 3 ? 1.0 / (g.hz * g.hz) : 0.0;
  const std::int64_t sy = g.stride_y(), sz = g.stride_z();
  const bool three_d = g.dims == 3;
  return reduce_interior<T>(g, op, [=](std::int64_t i) {
    const double c = u[i];
    double lap = ix * (double(u[i - 1]) - 2 * c + double(u[i + 1])) +
                 iy * (double(u[i - sy]) - 2 * c + double(u[i + sy]));
    if (three_d) lap += iz * (double(u[i - sz]) - 2 * c + double(u[i + sz]));
    return (f ? double(f[i]) : 0.0) + lap;
  });
}

#define HEATSOLVE_INSTANTIATE(T)                                                  \
  template class CpuArray<T>;                                                     \
  template class CpuBackend<T>;                                                   \
  template void cpu_apply_boundary<T>(T*, const GridDesc&, const BoundaryFaces&); \
  template void cpu_stencil<T>(const T*, T*, const T*, const GridDesc&, const StencilCoeffs<T>&);
HEATSOLVE_INSTANTIATE(float)
HEATSOLVE_INSTANTIATE(double)
#undef HEATSOLVE_INSTANTIATE

}  // namespace heatsolve
