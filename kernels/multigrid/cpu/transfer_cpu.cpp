#include "kernels/multigrid/cpu/transfer_cpu.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/multigrid/interpolation.hpp"

namespace heatsolve {

template <typename T>
void cpu_restrict_average(const T* fine, const GridDesc& gf, T* coarse, const GridDesc& gc,
                          const std::array<int, 3>& ratio) {
  const bool d3 = gc.dims == 3;
  const int nz = d3 ? gc.nz : 1;
  const int rz = d3 ? ratio[2] : 1;
  const double scale = 1.0 / double(ratio[0] * ratio[1] * rz);
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < gc.ny; ++j)
      for (int i = 0; i < gc.nx; ++i) {
        double acc = 0;
        for (int c = 0; c < rz; ++c)
          for (int b = 0; b < ratio[1]; ++b)
            for (int a = 0; a < ratio[0]; ++a)
              acc +=
                  double(fine[gf.index(ratio[0] * i + a, ratio[1] * j + b, d3 ? rz * k + c : 0)]);
        coarse[gc.index(i, j, d3 ? k : 0)] = static_cast<T>(acc * scale);
      }
}

template <typename T>
void cpu_prolong_add(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                     const std::array<int, 3>& ratio, Prolongation p) {
  const bool d3 = gf.dims == 3;
  const int nz = d3 ? gf.nz : 1;
  const int rz = d3 ? ratio[2] : 1;
  const bool linear = p == Prolongation::Linear;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < gf.ny; ++j)
      for (int i = 0; i < gf.nx; ++i) {
        const int I = i / ratio[0], J = j / ratio[1], K = d3 ? k / rz : 0;
        double v;
        if (!linear) {
          v = coarse[gc.index(I, J, K)];
        } else {
          // Parent plus a quarter of the difference to the neighbour on the child's side,
          // per halved axis: exact for linear fields, and reads face neighbours only.
          const double parent = coarse[gc.index(I, J, K)];
          v = parent;
          if (ratio[0] == 2)
            v += 0.25 * (double(coarse[gc.index(I + (i % 2 ? 1 : -1), J, K)]) - parent);
          if (ratio[1] == 2)
            v += 0.25 * (double(coarse[gc.index(I, J + (j % 2 ? 1 : -1), K)]) - parent);
          if (rz == 2) v += 0.25 * (double(coarse[gc.index(I, J, K + (k % 2 ? 1 : -1))]) - parent);
        }
        T& out = fine[gf.index(i, j, d3 ? k : 0)];
        out = static_cast<T>(double(out) + v);
      }
}

namespace {

// The cubic interpolation (full multigrid's) as three passes of one axis each: mg::interpolated's
// tensor product with the same products and sums in the same order, so the same bits, but a
// coarse row is interpolated along x once for every fine cell that reads it (and an x-y plane
// along y once per coarse plane) instead of 64 coarse reads per fine cell. Each thread keeps
// rings of interpolated rows (along x) and planes (along y), keyed by the coarse row / plane.
template <typename T>
class SeparableInterpolation {
 public:
  SeparableInterpolation(const T* coarse, const GridDesc& gc, const GridDesc& gf,
                         const int halved[3], Prolongation p)
      : c_(coarse), gc_(gc), gf_(gf), p_(p), h_{halved[0], halved[1], halved[2]} {
    sx_.resize(std::size_t(gf.nx));
    sy_.resize(std::size_t(gf.ny));
    for (int i = 0; i < gf.nx; ++i) sx_[std::size_t(i)] = stencil(0, i, gc.nx);
    for (int j = 0; j < gf.ny; ++j) sy_[std::size_t(j)] = stencil(1, j, gc.ny);
  }

  mg::AxisStencil stencil(int axis, int f, int n) const {
    return h_[axis] ? mg::axis_stencil(p_, f & 1, f >> 1, n) : mg::AxisStencil{};
  }

  // Coarse plane K (3D) interpolated along x and y onto every fine (i, j): y[j * nx + i].
  void plane(int K, double* y, std::vector<double>& rows, std::vector<int>& row_of) const {
    const int nx = gf_.nx;
    std::fill(row_of.begin(), row_of.end(), kNone);
    for (int j = 0; j < gf_.ny; ++j) {
      const mg::AxisStencil& s = sy_[std::size_t(j)];
      const int J = j >> h_[1];
      double* out = y + std::size_t(j) * nx;
      for (int i = 0; i < nx; ++i) out[i] = 0;
      for (int b = 0; b < s.count; ++b) {
        const double* x = row(J + s.first + b, K, rows, row_of);
        for (int i = 0; i < nx; ++i) out[i] = mg::add_rn(out[i], mg::mul_rn(s.w[b], x[i]));
      }
    }
  }

  // Coarse row (J, K) interpolated along x onto every fine i, from the ring (computed once).
  const double* row(int J, int K, std::vector<double>& rows, std::vector<int>& row_of) const {
    const std::size_t slot = std::size_t(J + kRing) % kRing;
    double* x = rows.data() + slot * std::size_t(gf_.nx);
    if (row_of[slot] == J) return x;
    row_of[slot] = J;
    for (int i = 0; i < gf_.nx; ++i) {
      const mg::AxisStencil& s = sx_[std::size_t(i)];
      const int I = i >> h_[0];
      double acc = 0;
      for (int a = 0; a < s.count; ++a)
        acc = mg::add_rn(acc, mg::mul_rn(s.w[a], mg::coarse_value(c_, gc_, I + s.first + a, J, K)));
      x[i] = acc;
    }
    return x;
  }

  static constexpr int kRing = 8;  // a stencil spans 4 consecutive rows / planes
  static constexpr int kNone = -1000;

 private:
  const T* c_;
  GridDesc gc_, gf_;
  Prolongation p_;
  int h_[3];
  std::vector<mg::AxisStencil> sx_, sy_;
};

template <typename T>
void cpu_interpolate_separable(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                               const int halved[3], Prolongation p) {
  using S = SeparableInterpolation<T>;
  const S interp(coarse, gc, gf, halved, p);
  const std::size_t nx = std::size_t(gf.nx), plane = nx * std::size_t(gf.ny);
  if (gf.dims != 3) {
    // One plane: the rows along x, then y straight into the field (the z factor is 1).
#pragma omp parallel
    {
      std::vector<double> rows(S::kRing * nx), y(nx);
      std::vector<int> row_of(S::kRing, S::kNone);
#pragma omp for schedule(static)
      for (int j = 0; j < gf.ny; ++j) {
        const mg::AxisStencil& s = interp.stencil(1, j, gc.ny);
        const int J = j >> halved[1];
        std::fill(y.begin(), y.end(), 0.0);
        for (int b = 0; b < s.count; ++b) {
          const double* x = interp.row(J + s.first + b, 0, rows, row_of);
          for (std::size_t i = 0; i < nx; ++i) y[i] = mg::add_rn(y[i], mg::mul_rn(s.w[b], x[i]));
        }
        T* out = fine + gf.index(0, j, 0);
        for (std::size_t i = 0; i < nx; ++i)
          out[i] = static_cast<T>(mg::add_rn(0.0, mg::mul_rn(1.0, y[i])));
      }
    }
    return;
  }
  const int rz = halved[2] ? 2 : 1;
#pragma omp parallel
  {
    // Contiguous coarse planes per thread, so that the ring of planes carries over.
    const int threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int K0 = int(std::int64_t(gc.nz) * t / threads);
    const int K1 = int(std::int64_t(gc.nz) * (t + 1) / threads);
    std::vector<double> rows(S::kRing * nx), planes(K1 > K0 ? S::kRing * plane : 0);
    std::vector<int> row_of(S::kRing, S::kNone), plane_of(S::kRing, S::kNone);
    for (int K = K0; K < K1; ++K)
      for (int c0 = 0; c0 < rz; ++c0) {
        const int k = rz * K + c0;
        const mg::AxisStencil s = interp.stencil(2, k, gc.nz);
        const double* y[4] = {};
        for (int c = 0; c < s.count; ++c) {
          const int Kc = K + s.first + c;
          const std::size_t slot = std::size_t(Kc + S::kRing) % S::kRing;
          double* buf = planes.data() + slot * plane;
          if (plane_of[slot] != Kc) {
            interp.plane(Kc, buf, rows, row_of);
            plane_of[slot] = Kc;
          }
          y[c] = buf;
        }
        for (int j = 0; j < gf.ny; ++j) {
          T* out = fine + gf.index(0, j, k);
          const std::size_t at = std::size_t(j) * nx;
          for (std::size_t i = 0; i < nx; ++i) {
            double acc = 0;
            for (int c = 0; c < s.count; ++c)
              acc = mg::add_rn(acc, mg::mul_rn(s.w[c], y[c][at + i]));
            out[i] = static_cast<T>(acc);
          }
        }
      }
  }
}

}  // namespace

template <typename T>
void cpu_interpolate(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                     const std::array<int, 3>& ratio, Prolongation p) {
  const bool d3 = gf.dims == 3;
  const int nz = d3 ? gf.nz : 1;
  const int halved[3] = {ratio[0] == 2, ratio[1] == 2, d3 && ratio[2] == 2};
  if (p == Prolongation::Cubic) {
    cpu_interpolate_separable(coarse, gc, fine, gf, halved, p);
    return;
  }
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < gf.ny; ++j)
      for (int i = 0; i < gf.nx; ++i)
        fine[gf.index(i, j, k)] = static_cast<T>(mg::interpolated(coarse, gc, i, j, k, halved, p));
}

template <typename T>
double cpu_dot(const T* a, const T* b, const GridDesc& g) {
  const int nz = g.dims == 3 ? g.nz : 1;
  const std::int64_t rows = std::int64_t(g.ny) * nz;
  std::vector<double> partial(rows);
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t row = g.index(0, int(r % g.ny), g.dims == 3 ? int(r / g.ny) : 0);
    double acc = 0;
    for (int i = 0; i < g.nx; ++i) acc += double(a[row + i]) * double(b[row + i]);
    partial[r] = acc;
  }
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

#define HEATSOLVE_INSTANTIATE(T)                                                        \
  template void cpu_restrict_average<T>(const T*, const GridDesc&, T*, const GridDesc&, \
                                        const std::array<int, 3>&);                     \
  template void cpu_prolong_add<T>(const T*, const GridDesc&, T*, const GridDesc&,      \
                                   const std::array<int, 3>&, Prolongation);            \
  template void cpu_interpolate<T>(const T*, const GridDesc&, T*, const GridDesc&,      \
                                   const std::array<int, 3>&, Prolongation);            \
  template double cpu_dot<T>(const T*, const T*, const GridDesc&);
HEATSOLVE_INSTANTIATE(float)
HEATSOLVE_INSTANTIATE(double)
#undef HEATSOLVE_INSTANTIATE

}  // namespace heatsolve
