#include "kernels/multigrid/cpu/transfer_cpu.hpp"

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

template <typename T>
void cpu_interpolate(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                     const std::array<int, 3>& ratio, Prolongation p) {
  const bool d3 = gf.dims == 3;
  const int nz = d3 ? gf.nz : 1;
  const int halved[3] = {ratio[0] == 2, ratio[1] == 2, d3 && ratio[2] == 2};
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
