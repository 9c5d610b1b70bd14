#include "kernels/cpu/cpu_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/stencil/separable_fill.hpp"

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

// Ghost value for one boundary cell given the adjacent interior value: the rules of
// kernels/stencil/cuda/ghost_rules.cuh with the same roundings (Robin: one fma).
template <typename T>
inline T ghost_value(const FaceBC& bc, T inner, T opposite, double h) {
  switch (bc.type) {
    case BoundaryType::Dirichlet:
      return static_cast<T>(2 * bc.value) - inner;  // face value is the mean of ghost and inner
    case BoundaryType::Neumann:
      return inner + static_cast<T>(bc.value * h);  // outward du/dn = value
    case BoundaryType::Robin:
      return std::fma(static_cast<T>(bc.coeff), inner, static_cast<T>(bc.value));
    case BoundaryType::Fixed:
      return static_cast<T>(bc.value);
    case BoundaryType::Periodic:
      return opposite;
    case BoundaryType::Exchange:
      break;
    case BoundaryType::Convective:
    case BoundaryType::HeatFlux:
      break;  // refused before the parallel loops (cpu_apply_boundary)
  }
  return inner;  // unreachable for Exchange (callers skip it)
}

}  // namespace

template <typename T>
void cpu_apply_boundary(T* u, const GridDesc& g, const BoundaryFaces& bc) {
  for (int f = 0; f < 2 * g.dims; ++f)
    if (bc[f].type == BoundaryType::Convective || bc[f].type == BoundaryType::HeatFlux)
      throw std::logic_error("apply_boundary: a deck face type reached the kernels unlowered");
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

namespace {

// Cells [i0, i1) of one row of stencil(u, f, c): ur, fr and outr point at the row's cell 0.
// The one expression of every CPU sweep (whole, by region, fused with a restriction or a norm),
// so all give the same bits.
template <typename T>
inline void stencil_row(const T* ur, const T* fr, T* outr, int i0, int i1, std::int64_t sy,
                        std::int64_t sz, bool three_d, const StencilCoeffs<T>& c) {
#pragma omp simd
  for (int i = i0; i < i1; ++i) {
    // Same association order as the CUDA kernels so results agree to the last bit
    // wherever the compilers contract the same way.
    T v = c.center * ur[i] + c.cx * (ur[i - 1] + ur[i + 1]) + c.cy * (ur[i - sy] + ur[i + sy]);
    if (three_d) v += c.cz * (ur[i - sz] + ur[i + sz]);
    if (fr) v += c.source * fr[i];
    outr[i] = v;
  }
}

}  // namespace

template <typename T>
void cpu_stencil(const T* u, T* out, const T* f, const GridDesc& g, const StencilCoeffs<T>& c) {
  const int nz = g.dims == 3 ? g.nz : 1;
  const std::int64_t sy = g.stride_y(), sz = g.stride_z();
  const bool three_d = g.dims == 3;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g.ny; ++j) {
      const std::int64_t row = g.index(0, j, three_d ? k : 0);
      stencil_row(u + row, f ? f + row : nullptr, out + row, 0, g.nx, sy, sz, three_d, c);
    }
}

template <typename T>
void cpu_stencil_restrict(const T* u, const T* f, const GridDesc& gf, const StencilCoeffs<T>& c,
                          T* coarse, const GridDesc& gc, const std::array<int, 3>& ratio, int p0,
                          int p1) {
  const bool d3 = gc.dims == 3;
  const int k0 = d3 ? std::clamp(p0, 0, gc.nz) : 0;
  const int nz = d3 ? (p1 < 0 ? gc.nz : std::clamp(p1, k0, gc.nz)) - k0 : 1;
  const int rx = ratio[0], ry = ratio[1], rz = d3 ? ratio[2] : 1;
  const double scale = 1.0 / double(rx * ry * rz);
  const std::int64_t sy = gf.stride_y(), sz = gf.stride_z();
#pragma omp parallel
  {
    std::vector<T> rows(std::size_t(4) * std::size_t(gf.nx));  // the children's rows
#pragma omp for collapse(2) schedule(static)
    for (int q = 0; q < nz; ++q)
      for (int j = 0; j < gc.ny; ++j) {
        const int k = k0 + q;
        for (int cz = 0; cz < rz; ++cz)
          for (int b = 0; b < ry; ++b) {
            const std::int64_t row = gf.index(0, ry * j + b, d3 ? rz * k + cz : 0);
            stencil_row(u + row, f ? f + row : nullptr, rows.data() + (cz * 2 + b) * gf.nx, 0,
                        gf.nx, sy, sz, d3, c);
          }
        // cpu_restrict_average's order: z, y, x.
        for (int i = 0; i < gc.nx; ++i) {
          double acc = 0;
          for (int cz = 0; cz < rz; ++cz)
            for (int b = 0; b < ry; ++b)
              for (int a = 0; a < rx; ++a)
                acc += double(rows[std::size_t((cz * 2 + b) * gf.nx + rx * i + a)]);
          coarse[gc.index(i, j, d3 ? k : 0)] = static_cast<T>(acc * scale);
        }
      }
  }
}

template <typename T>
double cpu_stencil_square_sum(const T* u, const T* f, const GridDesc& g,
                              const StencilCoeffs<T>& c) {
  const int nz = g.dims == 3 ? g.nz : 1;
  const std::int64_t rows = std::int64_t(g.ny) * nz;
  const std::int64_t sy = g.stride_y(), sz = g.stride_z();
  const bool three_d = g.dims == 3;
  std::vector<double> partial(static_cast<std::size_t>(rows));
#pragma omp parallel
  {
    std::vector<T> r(static_cast<std::size_t>(g.nx));
#pragma omp for schedule(static)
    for (std::int64_t q = 0; q < rows; ++q) {
      const std::int64_t row = g.index(0, int(q % g.ny), three_d ? int(q / g.ny) : 0);
      stencil_row(u + row, f ? f + row : nullptr, r.data(), 0, g.nx, sy, sz, three_d, c);
      // cpu_dot's order: per row, then the rows in order.
      double acc = 0;
      for (int i = 0; i < g.nx; ++i) acc += double(r[std::size_t(i)]) * double(r[std::size_t(i)]);
      partial[std::size_t(q)] = acc;
    }
  }
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

template <typename T>
void cpu_stencil_region(const T* u, T* out, const T* f, const GridDesc& g,
                        const StencilCoeffs<T>& c, const CellRange& r) {
  if (r.empty()) return;
  const std::int64_t sy = g.stride_y(), sz = g.stride_z();
  const bool three_d = g.dims == 3;
  const int k0 = three_d ? r.lo[2] : 0, k1 = three_d ? r.hi[2] : 1;
  const int i0 = r.lo[0], i1 = r.hi[0];
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = k0; k < k1; ++k)
    for (int j = r.lo[1]; j < r.hi[1]; ++j) {
      const std::int64_t row = g.index(0, j, k);
      stencil_row(u + row, f ? f + row : nullptr, out + row, i0, i1, sy, sz, three_d, c);
    }
}

namespace {

// Calls fn(padded_index, buffer_index) for every cell of the layer `layer` (an index along the
// face's normal axis, -1..n) over the face's interior extent, in face-buffer order.
template <typename Fn>
void for_face_layer(const GridDesc& g, int face, int layer, Fn fn) {
  if (face < 0 || face >= 2 * g.dims)
    throw std::invalid_argument("halo face " + std::to_string(face) + " out of range for a " +
                                std::to_string(g.dims) + "D grid");
  const int nz = g.dims == 3 ? g.nz : 1;
  const int axis = face / 2;
  // (fast, slow) extents of the face; rows of the slow axis are independent.
  const int n_fast = axis == 0 ? g.ny : g.nx;
  const int n_slow = axis == 2 ? g.ny : nz;
  const std::int64_t cells = std::int64_t(n_fast) * n_slow;
#pragma omp parallel for schedule(static) if (cells > 65536)
  for (int s = 0; s < n_slow; ++s)
    for (int f = 0; f < n_fast; ++f) {
      std::int64_t idx = 0;
      switch (axis) {
        case 0:
          idx = g.index(layer, f, g.dims == 3 ? s : 0);
          break;
        case 1:
          idx = g.index(f, layer, g.dims == 3 ? s : 0);
          break;
        default:
          idx = g.index(f, s, layer);
          break;
      }
      fn(idx, std::int64_t(s) * n_fast + f);
    }
}

int face_extent(const GridDesc& g, int face) {
  const int axis = face / 2;
  return axis == 0 ? g.nx : axis == 1 ? g.ny : g.nz;
}

}  // namespace

template <typename T>
void cpu_pack_face(const T* u, const GridDesc& g, int face, T* buffer) {
  const int layer = face % 2 == 0 ? 0 : face_extent(g, face) - 1;
  for_face_layer(g, face, layer, [=](std::int64_t i, std::int64_t b) { buffer[b] = u[i]; });
}

template <typename T>
void cpu_unpack_face(T* u, const GridDesc& g, int face, const T* buffer) {
  const int layer = face % 2 == 0 ? -1 : face_extent(g, face);
  for_face_layer(g, face, layer, [=](std::int64_t i, std::int64_t b) { u[i] = buffer[b]; });
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
bool CpuBackend<T>::stencil_steps_planes(const T* u, T* out, const T* f, const GridDesc& g,
                                         const StencilCoeffs<T>& c, const BoundaryFaces& bc,
                                         int steps, int p0, int p1) {
  static const bool emulate = std::getenv("HEATSOLVE_TEST_CPU_PLANE_PASSES") != nullptr;
  if (!emulate || steps < 1) return false;
  const int axis = g.dims - 1;  // the stream axis
  const int ns = axis == 2 ? g.nz : g.ny;
  p0 = std::max(p0, 0);
  p1 = std::min(p1, ns);
  if (p1 <= p0) return true;
  // Step s must be right on the planes within steps - s of the range (step s + 1 reads one
  // plane further), so the swept range shrinks to [p0, p1) at the last step; u stays as it is.
  std::vector<T> a(u, u + g.padded_size()), b(g.padded_size());
  CellRange r;
  r.hi = {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
  for (int s = 1; s <= steps; ++s) {
    r.lo[axis] = std::max(0, p0 - (steps - s));
    r.hi[axis] = std::min(ns, p1 + (steps - s));
    cpu_apply_boundary(a.data(), g, bc);
    cpu_stencil_region(a.data(), s == steps ? out : b.data(), f, g, c, r);
    std::swap(a, b);
  }
  return true;
}

template <typename T>
std::string CpuBackend<T>::description() const {
  return "CPU, OpenMP " + std::to_string(omp_get_max_threads()) + " threads";
}

template <typename T>
void CpuBackend<T>::describe_source(const T* field, const GridDesc& g,
                                    const SeparableSource<T>* form) {
  described_.erase(std::remove_if(described_.begin(), described_.end(),
                                  [&](const Described& d) { return d.field == field; }),
                   described_.end());
  if (!form || !field) return;
  described_.push_back(Described{field, g, form->plane, form->column});
}

template <typename T>
bool CpuBackend<T>::rescale_source(T* field, const GridDesc& g, T offset, T scale) {
  for (const Described& d : described_) {
    if (d.field != field || d.g.dims != g.dims || d.g.nx != g.nx || d.g.ny != g.ny ||
        (g.dims == 3 && d.g.nz != g.nz))
      continue;
    fill_separable_interior(field, g, offset, scale, d.plane.data(), d.column.data());
    return true;
  }
  return false;
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

template <typename T>
void CpuBackend<T>::combine(T* out, const T* const* in, const double* coeffs, int count,
                            const GridDesc& g) {
  const int nz = g.dims == 3 ? g.nz : 1;
  // Row by row, input by input: the loop over a row vectorises, and each cell still sums its
  // inputs in order c = 0, 1, ... (the same bits as a per-cell loop).
#pragma omp parallel
  {
    std::vector<double> acc(g.nx);
#pragma omp for collapse(2) schedule(static)
    for (int k = 0; k < nz; ++k)
      for (int j = 0; j < g.ny; ++j) {
        const std::int64_t row = g.index(0, j, g.dims == 3 ? k : 0);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int c = 0; c < count; ++c) {
          const T* src = in[c] + row;
          const double w = coeffs[c];
          for (int i = 0; i < g.nx; ++i) acc[i] += w * double(src[i]);
        }
        for (int i = 0; i < g.nx; ++i) out[row + i] = static_cast<T>(acc[i]);
      }
  }
}

template <typename T>
void CpuBackend<T>::gram(const T* a, int na, const T* b, int nb, std::size_t ld, std::size_t n,
                         double* c_host) {
  // Fixed-size chunks summed in order: deterministic whatever the thread count.
  constexpr std::size_t kChunk = 4096;
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  const std::size_t entries = std::size_t(na) * nb;
  std::vector<double> partial(chunks * entries, 0.0);
#pragma omp parallel for schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) {
    double* p = partial.data() + c * entries;
    const std::size_t begin = c * kChunk, end = std::min(n, (c + 1) * kChunk);
    // A^T A (Anderson's Gram matrix) is symmetric: the upper triangle, mirrored.
    const bool symmetric = a == b && na == nb;
    for (int r = 0; r < na; ++r)
      for (int s = symmetric ? r : 0; s < nb; ++s) {
        const T* ar = a + r * ld;
        const T* bs = b + s * ld;
        // Four independent partial sums: the adds pipeline (one accumulator is bound by the
        // add latency, the compiler may not reorder floating-point sums).
        double acc[4] = {0, 0, 0, 0};
        std::size_t i = begin;
        for (; i + 4 <= end; i += 4)
          for (int q = 0; q < 4; ++q) acc[q] += double(ar[i + q]) * double(bs[i + q]);
        for (; i < end; ++i) acc[0] += double(ar[i]) * double(bs[i]);
        p[r * nb + s] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        if (symmetric) p[s * nb + r] = p[r * nb + s];
      }
  }
  for (std::size_t e = 0; e < entries; ++e) c_host[e] = 0;
  for (std::size_t c = 0; c < chunks; ++c)
    for (std::size_t e = 0; e < entries; ++e) c_host[e] += partial[c * entries + e];
}

#define HEATSOLVE_INSTANTIATE(T)                                                                  \
  template class CpuArray<T>;                                                                     \
  template class CpuBackend<T>;                                                                   \
  template void cpu_apply_boundary<T>(T*, const GridDesc&, const BoundaryFaces&);                 \
  template void cpu_stencil<T>(const T*, T*, const T*, const GridDesc&, const StencilCoeffs<T>&); \
  template void cpu_stencil_restrict<T>(const T*, const T*, const GridDesc&,                      \
                                        const StencilCoeffs<T>&, T*, const GridDesc&,             \
                                        const std::array<int, 3>&, int, int);                     \
  template double cpu_stencil_square_sum<T>(const T*, const T*, const GridDesc&,                  \
                                            const StencilCoeffs<T>&);                             \
  template void cpu_stencil_region<T>(const T*, T*, const T*, const GridDesc&,                    \
                                      const StencilCoeffs<T>&, const CellRange&);                 \
  template void cpu_pack_face<T>(const T*, const GridDesc&, int, T*);                             \
  template void cpu_unpack_face<T>(T*, const GridDesc&, int, const T*);
HEATSOLVE_INSTANTIATE(float)
HEATSOLVE_INSTANTIATE(double)
#undef HEATSOLVE_INSTANTIATE

}  // namespace heatsolve
