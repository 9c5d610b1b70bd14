// Full multigrid's interpolation of a coarse solution to a fine cell (Backend::interpolate),
// shared by the CPU and CUDA kernels (kernels/multigrid/{cpu,cuda}/): the same arithmetic in
// the same order, products and sums rounded one by one (__dmul_rn / __dadd_rn on the device,
// where nvcc would otherwise contract them to FMA), so both give the same bits.
#pragma once

#include <cstddef>

#include "core/grid.hpp"
#include "core/multigrid.hpp"

namespace heatsolve::mg {

HS_HOST_DEVICE inline double mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
HS_HOST_DEVICE inline double add_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// The coarse value at (i, j, k), each index at most one cell outside the interior: a face
// ghost or an interior cell is read; an edge or corner ghost (which no kernel fills) is the
// linear extrapolation from the cell inside: the sum of the face ghosts next to it minus
// (outside axes - 1) times that cell.
template <typename T>
HS_HOST_DEVICE double coarse_value(const T* c, const GridDesc& g, int i, int j, int k) {
  const int n[3] = {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
  const int at[3] = {i, j, k};
  int in[3];
  int outside = 0;
  for (int a = 0; a < 3; ++a) {
    in[a] = at[a] < 0 ? 0 : at[a] >= n[a] ? n[a] - 1 : at[a];
    outside += in[a] != at[a];
  }
  if (outside <= 1) return double(c[g.index(i, j, k)]);
  double sum = 0;
  for (int a = 0; a < 3; ++a) {
    if (in[a] == at[a]) continue;
    int q[3] = {in[0], in[1], in[2]};
    q[a] = at[a];
    sum = add_rn(sum, double(c[g.index(q[0], q[1], q[2])]));
  }
  return add_rn(sum, mul_rn(-double(outside - 1), double(c[g.index(in[0], in[1], in[2])])));
}

// One axis of the interpolation to a child: `count` coarse nodes from the parent's offset
// `first`, with their weights.
struct AxisStencil {
  int first = 0, count = 1;
  double w[4] = {1, 0, 0, 0};
};

// The stencil along an axis for the child of parity `odd` (its centre a quarter of a coarse cell
// below the parent's for an even child, above for an odd one) of parent I on an axis of n
// coarse cells. Cubic: the 4-point Lagrange interpolant on the nodes around the child
// (-2..1 for an even child, -1..2 for an odd one), shifted inward by one where that would read
// a second ghost layer (the one-sided cubic: still exact for cubics); its error is even in the
// child's offset, so it leaves no parity pattern for the restriction to turn into a smooth
// error. Linear: the parent and a quarter of the difference to the neighbour on the child's
// side; constant: the parent.
HS_HOST_DEVICE inline AxisStencil axis_stencil(Prolongation p, bool odd, int I, int n) {
  AxisStencil s;
  if (p == Prolongation::Constant) return s;
  if (p == Prolongation::Linear) {
    s.count = 2;
    s.first = odd ? 0 : -1;
    s.w[0] = odd ? 0.75 : 0.25;
    s.w[1] = odd ? 0.25 : 0.75;
    return s;
  }
  // Cubic. Centred stencils (nodes -2, -1, 0, 1 at x = -1/4; mirrored for x = +1/4) and the
  // one-sided ones (nodes -1, 0, 1, 2 at x = -1/4; mirrored), in 384ths.
  constexpr double kCentred[4] = {-15.0 / 384, 105.0 / 384, 315.0 / 384, -21.0 / 384};
  constexpr double kOneSided[4] = {45.0 / 384, 405.0 / 384, -81.0 / 384, 15.0 / 384};
  s.count = 4;
  const bool shifted = odd ? I + 2 > n : I - 2 < -1;
  const double* w = shifted ? kOneSided : kCentred;
  if (!odd) {
    s.first = shifted ? -1 : -2;
    for (int q = 0; q < 4; ++q) s.w[q] = w[q];
  } else {
    s.first = shifted ? -2 : -1;
    for (int q = 0; q < 4; ++q) s.w[q] = w[3 - q];
  }
  return s;
}

// (P coarse) at fine cell (i, j, k): the tensor product of the axis stencils over the halved
// axes (shift 1 in `halved`; a kept axis takes the parent's index), summed x innermost, then
// y, then z. Constant and Linear read face neighbours only (Linear's tensor product would read
// edges: it is the sum of per-axis differences instead, as prolong_add's).
template <typename T>
HS_HOST_DEVICE double interpolated(const T* coarse, const GridDesc& gc, int i, int j, int k,
                                   const int halved[3], Prolongation p) {
  const int I = i >> halved[0], J = j >> halved[1], K = k >> halved[2];
  if (p == Prolongation::Constant) return double(coarse[gc.index(I, J, K)]);
  if (p == Prolongation::Linear) {
    const double parent = double(coarse[gc.index(I, J, K)]);
    double v = parent;
    const int child[3] = {i, j, k};
    for (int a = 0; a < 3; ++a) {
      if (!halved[a]) continue;
      int q[3] = {I, J, K};
      q[a] += (child[a] & 1) ? 1 : -1;
      v = add_rn(v, mul_rn(0.25, add_rn(double(coarse[gc.index(q[0], q[1], q[2])]), -parent)));
    }
    return v;
  }
  const AxisStencil sx = halved[0] ? axis_stencil(p, i & 1, I, gc.nx) : AxisStencil{};
  const AxisStencil sy = halved[1] ? axis_stencil(p, j & 1, J, gc.ny) : AxisStencil{};
  const AxisStencil sz = halved[2] ? axis_stencil(p, k & 1, K, gc.nz) : AxisStencil{};
  double acc_z = 0;
  for (int c = 0; c < sz.count; ++c) {
    double acc_y = 0;
    for (int b = 0; b < sy.count; ++b) {
      double acc_x = 0;
      for (int a = 0; a < sx.count; ++a)
        acc_x = add_rn(acc_x, mul_rn(sx.w[a], coarse_value(coarse, gc, I + sx.first + a,
                                                           J + sy.first + b, K + sz.first + c)));
      acc_y = add_rn(acc_y, mul_rn(sy.w[b], acc_x));
    }
    acc_z = add_rn(acc_z, mul_rn(sz.w[c], acc_y));
  }
  return acc_z;
}

// The device's cubic interpolation (kernels/multigrid/cuda/transfer.cu) runs as three one-axis
// passes over chunks of coarse planes x coarse rows with double intermediates in a scratch:
// at most `planes` planes a chunk, then fewer planes, then fewer rows, until the scratch fits
// `cap` doubles where it can. The chunk and the doubles it needs, for the kernel and for the
// memory preflight. hy / hz: whether y / z are halved.
struct CubicChunks {
  int planes = 1, rows = 1;
  std::size_t doubles = 0;
};
inline constexpr int kCubicChunkPlanes = 64;
inline constexpr std::size_t kCubicScratchCap = std::size_t(64) << 20;  // 512 MiB
inline CubicChunks cubic_chunks(const GridDesc& gc, int fine_nx, int hy, int hz,
                                int planes = kCubicChunkPlanes,
                                std::size_t cap = kCubicScratchCap) {
  const int nz = gc.dims == 3 ? gc.nz : 1;
  CubicChunks c;
  c.planes = planes < nz ? (planes > 1 ? planes : 1) : nz;
  c.rows = gc.ny;
  // A chunk's stencils read at most two coarse nodes past it on each side of a halved axis:
  // pass x's rows (the chunk's and its margins) and pass y's (the fine rows).
  const auto need = [&] {
    return (std::size_t(c.planes) + 4 * std::size_t(hz)) *
           (std::size_t(c.rows) + 4 * std::size_t(hy) + (std::size_t(c.rows) << hy)) *
           std::size_t(fine_nx);
  };
  while (need() > cap && c.planes > 1) c.planes = (c.planes + 1) / 2;
  while (need() > cap && c.rows > 1) c.rows = (c.rows + 1) / 2;
  c.doubles = need();
  return c;
}

}  // namespace heatsolve::mg
