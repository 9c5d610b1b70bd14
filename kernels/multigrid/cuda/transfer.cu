// Multigrid grid transfers: one thread per output cell, x fastest (coalesced), rows of the
// output grid over blockIdx.y / threadIdx.y (grid-stride). Each thread sums in double in the
// CPU reference's order (kernels/multigrid/cpu/transfer_cpu.cpp); the linear prolongation
// uses unfused multiplies and adds (__dmul_rn / __dadd_rn) as the host does, so both
// transfers give the CPU's bits.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_array.cuh"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/per_device.cuh"
#include "kernels/multigrid/cuda/transfer.cuh"
#include "kernels/multigrid/interpolation.hpp"
#include "kernels/stencil/cuda/ghost_rules.cuh"
#include "kernels/stencil/cuda/stencil_kernels.cuh"

namespace heatsolve::cuda {

namespace {

// Halving per axis: shift[a] = 0 (ratio 1) or 1 (ratio 2). Axis z is 0 in 2D.
struct Halving {
  int sx = 0, sy = 0, sz = 0;
};

// Checks the pair of grids and the ratio; returns the per-axis shifts.
Halving check_transfer(const GridDesc& gf, const GridDesc& gc, const std::array<int, 3>& ratio,
                       const char* what) {
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument(std::string(what) + ": " + why);
  };
  if (gf.dims != gc.dims || (gf.dims != 2 && gf.dims != 3)) fail("fine and coarse dims differ");
  const int nf[3] = {gf.nx, gf.ny, gf.nz}, nc[3] = {gc.nx, gc.ny, gc.nz};
  int shift[3] = {0, 0, 0};
  for (int a = 0; a < gf.dims; ++a) {
    if (ratio[a] != 1 && ratio[a] != 2) fail("ratio must be 1 or 2 per axis");
    if (nf[a] != ratio[a] * nc[a])
      fail("axis " + std::to_string(a) + ": fine " + std::to_string(nf[a]) + " != ratio " +
           std::to_string(ratio[a]) + " * coarse " + std::to_string(nc[a]));
    shift[a] = ratio[a] - 1;
  }
  return {shift[0], shift[1], shift[2]};
}

// The restriction's weight: one over the children of a coarse cell.
double scale_of(const Halving& h) {
  return 1.0 / double((1 << h.sx) * (1 << h.sy) * (1 << h.sz));
}

// Launch shape over the interior of g: blocks of 256 threads, x as wide as the rows need (a
// warp at least), the rest of the block over rows.
struct RowLaunch {
  dim3 grid, block;
};
RowLaunch row_launch(int nx, std::int64_t rows) {
  const int bx = std::min(256, (nx + 31) / 32 * 32), by = 256 / bx;
  const std::int64_t gy = std::min<std::int64_t>((rows + by - 1) / by, 65535);
  return {dim3(unsigned((nx + bx - 1) / bx), unsigned(gy)), dim3(unsigned(bx), unsigned(by))};
}
RowLaunch row_launch(const GridDesc& g) {
  return row_launch(g.nx, std::int64_t(g.ny) * (g.dims == 3 ? g.nz : 1));
}

// coarse(i, j, k) = mean of its children; the child loop order is the CPU's (z, y, x).
template <typename T>
__global__ void restrict_average_kernel(const T* __restrict__ fine, const GridDesc gf,
                                        T* __restrict__ coarse, const GridDesc gc, const Halving h,
                                        const double scale) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= gc.nx) return;
  const std::int64_t rows = std::int64_t(gc.ny) * (gc.dims == 3 ? gc.nz : 1);
  const int rx = 1 << h.sx, ry = 1 << h.sy, rz = 1 << h.sz;
  for (std::int64_t r = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += std::int64_t(gridDim.y) * blockDim.y) {
    const int j = int(r % gc.ny), k = int(r / gc.ny);  // k == 0 in 2D
    double acc = 0;
    for (int c = 0; c < rz; ++c)
      for (int b = 0; b < ry; ++b) {
        const T* child = fine + gf.index(i << h.sx, (j << h.sy) + b, (k << h.sz) + c);
        for (int a = 0; a < rx; ++a) acc += double(child[a]);
      }
    coarse[gc.index(i, j, k)] = static_cast<T>(acc * scale);
  }
}

// coarse(i, j, k) = mean of stencil(u, f, c) over its children (Backend::stencil_restrict):
// each child's value with the point update every sweep uses and summed in restrict_average's
// order, so the bits of the two passes without storing the fine values. Faces in gr.active
// take their rule applied to the face cell (apply_boundary's value); other faces read u's
// ghosts.
template <typename T, int DIM>
__global__ void stencil_restrict_kernel(const T* __restrict__ u, const SourceRef<T> f,
                                        const GridDesc gf, const StencilCoeffs<T> c,
                                        const AffineGhostRules<T> gr, T* __restrict__ coarse,
                                        const GridDesc gc, const Halving h, const double scale,
                                        const int kb, const int ke) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= gc.nx) return;
  const std::int64_t rows = std::int64_t(gc.ny) * (DIM == 3 ? ke - kb : 1);
  const int rx = 1 << h.sx, ry = 1 << h.sy, rz = 1 << h.sz;
  const std::int64_t sy = gf.stride_y(), sz = DIM == 3 ? gf.stride_z() : 0;
  // Whether a neighbour at `at` is across face `face` with a rule.
  const auto ruled = [&](int face, int at, int n) {
    return ((gr.active >> face) & 1u) && at == ((face & 1) ? n - 1 : 0);
  };
  for (std::int64_t r = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += std::int64_t(gridDim.y) * blockDim.y) {
    const int j = int(r % gc.ny), k = kb + int(r / gc.ny);  // k == 0 in 2D
    double acc = 0;
    for (int cz = 0; cz < rz; ++cz)
      for (int b = 0; b < ry; ++b) {
        const int fj = (j << h.sy) + b, fk = (k << h.sz) + cz;
        for (int a = 0; a < rx; ++a) {
          const int fi = (i << h.sx) + a;
          const std::int64_t idx = gf.index(fi, fj, fk);
          const T u0 = __ldg(u + idx);
          const T xm = ruled(0, fi, gf.nx) ? ghost_rule(gr, 0, u0) : __ldg(u + idx - 1);
          const T xp = ruled(1, fi, gf.nx) ? ghost_rule(gr, 1, u0) : __ldg(u + idx + 1);
          const T ym = ruled(2, fj, gf.ny) ? ghost_rule(gr, 2, u0) : __ldg(u + idx - sy);
          const T yp = ruled(3, fj, gf.ny) ? ghost_rule(gr, 3, u0) : __ldg(u + idx + sy);
          T zm = 0, zp = 0;
          if constexpr (DIM == 3) {
            zm = ruled(4, fk, gf.nz) ? ghost_rule(gr, 4, u0) : __ldg(u + idx - sz);
            zp = ruled(5, fk, gf.nz) ? ghost_rule(gr, 5, u0) : __ldg(u + idx + sz);
          }
          acc += double(stencil_point<DIM>(c, u0, xm, xp, ym, yp, zm, zp, f, idx, fj, fk));
        }
      }
    coarse[gc.index(i, j, k)] = static_cast<T>(acc * scale);
  }
}

// The same for 3D grids halved on every axis, streaming along z: a thread owns a coarse column
// (i, j) over a chunk of coarse planes and keeps its 2 x 2 fine columns of the four fine planes
// 2k-1 .. 2k+2 in registers, so that each fine plane is loaded once as centres and z
// neighbours. Each fine row of a thread is two aligned pairs of the padded row (columns
// 2i-1, 2i and 2i+1, 2i+2: the row stride and the plane stride are even), so the x neighbours
// come with the centres in two vector loads; the y neighbours (rows 2j-1 and 2j+2) are scalar
// loads. Each coarse plane issues the loads of both its new fine planes at once, two blocks per
// SM (128 registers): loading the next coarse plane's values ahead needs more registers, and was
// slower with one block per SM or with spills (docs/kernels.md). The source SRC (kSource*): none,
// the stored field, or generated from its separable form (the thread's plane factors loaded once).
// Faces in gr.active take their rule applied to the face cell, as apply_boundary stores it (u's
// ghosts there are not read); other faces read u's ghosts. Same children, same point update, same
// order of the double sum as stencil_restrict_kernel.
template <typename T, int SRC>
__global__ void __launch_bounds__(256, 2)
    stencil_restrict_stream_kernel(const T* __restrict__ u, const SourceRef<T> f, const GridDesc gf,
                                   const StencilCoeffs<T> c, const AffineGhostRules<T> gr,
                                   T* __restrict__ coarse, const GridDesc gc, const int chunk,
                                   const int kb, const int ke) {
  constexpr bool SOURCE = SRC != kSourceNone;
  using V2 = typename Vec2<T>::type;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= gc.nx || j >= gc.ny) return;
  const int k0 = kb + blockIdx.z * chunk, k1 = min(k0 + chunk, ke);
  const int sy = int(gf.stride_y());
  const std::int64_t sz = gf.stride_z();
  // Fine cell (2i, 2j, z) is at cell + z * sz (plane z may be a ghost plane, -1 or nz).
  const std::int64_t cell = gf.index(2 * i, 2 * j, 0);
  // The faces this thread's children touch that apply a rule.
  const bool xlo = i == 0 && (gr.active & 1u), xhi = i == gc.nx - 1 && (gr.active & 2u);
  const bool ylo = j == 0 && (gr.active & 4u), yhi = j == gc.ny - 1 && (gr.active & 8u);
  // Plane z of the 2 x 2 columns: W[b] = columns 2i-1 .. 2i+2 of row 2j+b.
  const auto load_rows = [&](T(&W)[2][4], int z) {
    const T* const p = u + (cell - 1 + z * sz);
#pragma unroll
    for (int b = 0; b < 2; ++b) {
      const V2 lo = __ldg(reinterpret_cast<const V2*>(p + b * sy));
      const V2 hi = __ldg(reinterpret_cast<const V2*>(p + b * sy + 2));
      W[b][0] = lo.x;
      W[b][1] = lo.y;
      W[b][2] = hi.x;
      W[b][3] = hi.y;
    }
  };
  // Plane z's y neighbours: Y[0] = row 2j-1, Y[1] = row 2j+2 (columns 2i, 2i+1).
  const auto load_ynb = [&](T(&Y)[2][2], int z) {
    const T* const p = u + (cell + z * sz);
#pragma unroll
    for (int a = 0; a < 2; ++a) {
      Y[0][a] = __ldg(p - sy + a);
      Y[1][a] = __ldg(p + 2 * sy + a);
    }
  };
  // The stored source of plane z's 2 x 2 cells.
  const auto load_source = [&](T(&F)[2][2], int z) {
    if constexpr (SRC == kSourceStaged) {
      const T* const p = f.field + (cell + z * sz);
#pragma unroll
      for (int b = 0; b < 2; ++b)
#pragma unroll
        for (int a = 0; a < 2; ++a) F[b][a] = __ldg(p + b * sy + a);
    }
  };
  T PF[2][2];  // kSourceGenerated: the children's plane factors (source_at's)
  if constexpr (SRC == kSourceGenerated) {
#pragma unroll
    for (int b = 0; b < 2; ++b)
#pragma unroll
      for (int a = 0; a < 2; ++a) PF[b][a] = __ldg(f.plane + (cell - sz + b * sy + a));
  }

  T P[4][2][4];    // fine planes 2k-1, 2k, 2k+1, 2k+2
  T Y[2][2][2];    // y neighbours of planes 2k and 2k+1
  T F[2][2][2]{};  // the stored source of planes 2k and 2k+1
  load_rows(P[0], 2 * k0 - 1);
  load_rows(P[1], 2 * k0);
  for (int k = k0; k < k1; ++k) {
    // Coarse plane k's new values: fine planes 2k+1 and 2k+2, and the y neighbours and the
    // source of its children's planes 2k and 2k+1.
    load_rows(P[2], 2 * k + 1);
    load_rows(P[3], 2 * k + 2);
    load_ynb(Y[0], 2 * k);
    load_ynb(Y[1], 2 * k + 1);
    load_source(F[0], 2 * k);
    load_source(F[1], 2 * k + 1);
    double acc = 0;
#pragma unroll
    for (int cz = 0; cz < 2; ++cz) {
      const int fk = 2 * k + cz;
      T column = 0;
      if constexpr (SRC == kSourceGenerated) column = __ldg(f.column + fk);
      const bool zlo = cz == 0 && k == 0 && (gr.active & 16u);
      const bool zhi = cz == 1 && k == gc.nz - 1 && (gr.active & 32u);
#pragma unroll
      for (int b = 0; b < 2; ++b)
#pragma unroll
        for (int a = 0; a < 2; ++a) {
          const T* const row = P[1 + cz][b];
          const T u0 = row[1 + a];
          T xm = row[a], xp = row[2 + a];
          T ym = b == 0 ? Y[cz][0][a] : P[1 + cz][0][1 + a];
          T yp = b == 1 ? Y[cz][1][a] : P[1 + cz][1][1 + a];
          T zm = P[cz][b][1 + a], zp = P[2 + cz][b][1 + a];
          if (a == 0 && xlo) xm = ghost_rule(gr, 0, u0);
          if (a == 1 && xhi) xp = ghost_rule(gr, 1, u0);
          if (b == 0 && ylo) ym = ghost_rule(gr, 2, u0);
          if (b == 1 && yhi) yp = ghost_rule(gr, 3, u0);
          if (zlo) zm = ghost_rule(gr, 4, u0);
          if (zhi) zp = ghost_rule(gr, 5, u0);
          T fv = 0;
          if constexpr (SRC == kSourceStaged) fv = F[cz][b][a];
          if constexpr (SRC == kSourceGenerated)
            fv = add_rn(f.offset, mul_rn(f.scale, mul_rn(PF[b][a], column)));
          acc +=
              double(point_finish<3>(c, point_part<3, SOURCE>(c, u0, xm, xp, ym, yp, zm, fv), zp));
        }
    }
    coarse[gc.index(i, j, k)] = static_cast<T>(acc * 0.125);
#pragma unroll
    for (int b = 0; b < 2; ++b)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        P[0][b][x] = P[2][b][x];
        P[1][b][x] = P[3][b][x];
      }
  }
}

// fine(i, j, k) += P coarse (Backend::prolong_add). Linear: the parent plus, per halved
// axis, a quarter of the difference to the parent's neighbour on the child's side (even
// child: -1, odd child: +1); reads face neighbours only. A thread owns fine column i of one
// coarse row (J, K) and updates the (up to 2 x 2) fine rows of its children together: their
// loads are in flight at once (one load at a time per thread left the kernel waiting on
// memory at half its traffic's bandwidth) and the coarse values are read once for all four.
// Each child's sum is the same as alone: ((parent + x term) + y term) + z term.
template <typename T>
__global__ void prolong_add_kernel(const T* __restrict__ coarse, const GridDesc gc,
                                   T* __restrict__ fine, const GridDesc gf, const Halving h,
                                   const bool linear) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= gf.nx) return;
  const bool d3 = gf.dims == 3;
  const std::int64_t rows = std::int64_t(gc.ny) * (d3 ? gc.nz : 1);
  const std::int64_t fy = gf.stride_y(), fz = d3 ? gf.stride_z() : 0;
  const std::int64_t cy = gc.stride_y(), cz = d3 ? gc.stride_z() : 0;
  const int I = i >> h.sx;
  const int si = h.sx ? ((i & 1) ? 1 : -1) : 0;
  // The quarter differences (the CPU's order and rounding: _rn keeps nvcc from contracting).
  const auto quarter = [&](std::int64_t at, double parent) {
    return __dmul_rn(0.25, __dsub_rn(double(coarse[at]), parent));
  };
  for (std::int64_t r = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += std::int64_t(gridDim.y) * blockDim.y) {
    const int J = int(r % gc.ny), K = int(r / gc.ny);  // K == 0 in 2D
    const std::int64_t pc = gc.index(I, J, K);
    const std::int64_t f0 = gf.index(i, J << h.sy, K << h.sz);
    T old[2][2];  // [z child][y child]
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int b = 0; b < 2; ++b)
        if (c <= h.sz && b <= h.sy) old[c][b] = fine[f0 + b * fy + c * fz];
    const double parent = double(coarse[pc]);
    double v0 = parent, ty[2] = {0, 0}, tz[2] = {0, 0};
    if (linear) {
      if (si) v0 = __dadd_rn(v0, quarter(pc + si, parent));
      if (h.sy) ty[0] = quarter(pc - cy, parent), ty[1] = quarter(pc + cy, parent);
      if (h.sz) tz[0] = quarter(pc - cz, parent), tz[1] = quarter(pc + cz, parent);
    }
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        if (c > h.sz || b > h.sy) continue;
        double v = v0;
        if (linear && h.sy) v = __dadd_rn(v, ty[b]);
        if (linear && h.sz) v = __dadd_rn(v, tz[c]);
        fine[f0 + b * fy + c * fz] = static_cast<T>(__dadd_rn(double(old[c][b]), v));
      }
  }
}

// fine(i, j, k) = P coarse (Backend::interpolate; kernels/multigrid/interpolation.hpp, the
// CPU's arithmetic): the constant and linear orders (the cubic one is separable, below).
template <typename T>
__global__ void interpolate_kernel(const T* __restrict__ coarse, const GridDesc gc,
                                   T* __restrict__ fine, const GridDesc gf, const Halving h,
                                   const Prolongation p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= gf.nx) return;
  const std::int64_t rows = std::int64_t(gf.ny) * (gf.dims == 3 ? gf.nz : 1);
  const int halved[3] = {h.sx, h.sy, h.sz};
  for (std::int64_t r = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += std::int64_t(gridDim.y) * blockDim.y) {
    const int j = int(r % gf.ny), k = int(r / gf.ny);  // k == 0 in 2D
    fine[gf.index(i, j, k)] = static_cast<T>(mg::interpolated(coarse, gc, i, j, k, halved, p));
  }
}

// The cubic interpolation as three one-axis passes (x along the coarse rows, then y, then z),
// the CPU's SeparableInterpolation (kernels/multigrid/cpu/transfer_cpu.cpp). Why: the tensor
// product per fine cell (mg::interpolated) reads 64 coarse values through coarse_value's ghost
// logic and dominates a full-multigrid pass at 512^3; the passes read 4 values per output and
// interpolate each coarse row / plane once. Same products and sums in the same order
// (accumulators from 0, x innermost, then y, then z; a kept axis is the stencil {1}, so 2D is
// the z factor 1), so mg::interpolated's bits. The passes run over chunks: fine rows
// [j0, j0 + nj) x planes [k0, k0 + nk) (one plane in 2D), from the coarse rows [rj, rj + mj)
// x planes [rk, rk + mk) their stencils read (ghosts included; edges and corners synthesised).
// Intermediates in double: xs[K - rk][J - rj][i] (pass x), ys[K - rk][j - j0][i] (pass y).
struct Chunk {
  int j0, nj, k0, nk;
  int rj, mj, rk, mk;
};

// The stencil of fine index f along an axis of n coarse cells, halved (shift 1) or kept.
HS_HOST_DEVICE inline mg::AxisStencil cubic_stencil(int shift, int f, int n) {
  return shift ? mg::axis_stencil(Prolongation::Cubic, f & 1, f >> 1, n) : mg::AxisStencil{};
}

// sum over the stencil's nodes q of w[q] * at(q), rounded one by one from 0 (unrolled: the
// weights stay in registers).
template <class At>
__device__ double accumulate(const mg::AxisStencil& s, At&& at) {
  double acc = 0;
#pragma unroll
  for (int q = 0; q < 4; ++q)
    if (q < s.count) acc = mg::add_rn(acc, mg::mul_rn(s.w[q], at(q)));
  return acc;
}

// Launch shape of a pass: x over the nx fine cells of a row (coalesced), y over `na` indices
// (in passes y and z those the stencil depends on: a thread builds it once per index, a costly
// step, axis_stencil's weight tables in local memory), z over shares of the `nb` others: some
// 4096 blocks, enough to fill the device.
RowLaunch pass_launch(int nx, int na, int nb) {
  const int bx = std::min(256, (nx + 31) / 32 * 32), by = 256 / bx;
  const int gx = (nx + bx - 1) / bx, gy = std::min((na + by - 1) / by, 65535);
  const std::int64_t per_z = std::int64_t(gx) * gy;
  const int gz = int(std::max<std::int64_t>(1, std::min<std::int64_t>({4096 / per_z, nb, 65535})));
  return {dim3(unsigned(gx), unsigned(gy), unsigned(gz)), dim3(unsigned(bx), unsigned(by))};
}

// Pass x: the coarse rows (rj + a, rk + b) of the chunk interpolated along x at every fine i.
template <typename T>
__global__ void cubic_x_kernel(const T* __restrict__ coarse, const GridDesc gc, const int nx,
                               const Halving h, const Chunk c, double* __restrict__ xs) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nx) return;
  const mg::AxisStencil s = cubic_stencil(h.sx, i, gc.nx);
  const int I = (i >> h.sx) + s.first;
  for (int a = blockIdx.y * blockDim.y + threadIdx.y; a < c.mj; a += gridDim.y * blockDim.y)
    for (int b = blockIdx.z; b < c.mk; b += gridDim.z)
      xs[(std::int64_t(b) * c.mj + a) * nx + i] = accumulate(
          s, [&](int q) { return mg::coarse_value(coarse, gc, I + q, c.rj + a, c.rk + b); });
}

// Pass y: the chunk's fine rows j0 + a of every coarse plane rk + b, along y from pass x.
__global__ void cubic_y_kernel(const double* __restrict__ xs, const int nx, const int ny,
                               const Halving h, const Chunk c, double* __restrict__ ys) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nx) return;
  for (int a = blockIdx.y * blockDim.y + threadIdx.y; a < c.nj; a += gridDim.y * blockDim.y) {
    const int j = c.j0 + a;
    const mg::AxisStencil s = cubic_stencil(h.sy, j, ny);
    const double* x = xs + std::int64_t((j >> h.sy) + s.first - c.rj) * nx + i;
    for (int b = blockIdx.z; b < c.mk; b += gridDim.z) {
      const double* xb = x + std::int64_t(b) * c.mj * nx;
      ys[(std::int64_t(b) * c.nj + a) * nx + i] =
          accumulate(s, [&](int q) { return xb[std::int64_t(q) * nx]; });
    }
  }
}

// Pass z: fine(i, j0 + b, k0 + a) over the chunk, along z from pass y (a == 0 in 2D).
template <typename T>
__global__ void cubic_z_kernel(const double* __restrict__ ys, const int nz, const Halving h,
                               const Chunk c, T* __restrict__ fine, const GridDesc gf) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= gf.nx) return;
  const std::int64_t plane = std::int64_t(c.nj) * gf.nx;
  for (int a = blockIdx.y * blockDim.y + threadIdx.y; a < c.nk; a += gridDim.y * blockDim.y) {
    const int k = c.k0 + a;
    const mg::AxisStencil s = cubic_stencil(h.sz, k, nz);
    const double* y = ys + ((k >> h.sz) + s.first - c.rk) * plane + i;
    for (int b = blockIdx.z; b < c.nj; b += gridDim.z) {
      const double* yb = y + std::int64_t(b) * gf.nx;
      fine[gf.index(i, c.j0 + b, k)] =
          static_cast<T>(accumulate(s, [&](int q) { return yb[q * plane]; }));
    }
  }
}

// The coarse nodes [*lo, *lo + *count) that the stencils of the children of the parents
// [c0, c1) read along an axis of n coarse cells (within one ghost layer where n >= 2).
void stencil_reads(int c0, int c1, int shift, int n, int* lo, int* count) {
  int a = INT_MAX, b = INT_MIN;
  for (int f = c0 << shift; f < c1 << shift; ++f) {
    const mg::AxisStencil s = cubic_stencil(shift, f, n);
    a = std::min(a, (f >> shift) + s.first);
    b = std::max(b, (f >> shift) + s.first + s.count - 1);
  }
  *lo = a;
  *count = b - a + 1;
}

// The passes' scratch, grow-only, one per host thread and device
// (per_thread_device_instance), freed at the thread's exit. An event marks its last use: a call on
// another stream waits for it, and growing waits for it before freeing.
class InterpolateScratch {
 public:
  InterpolateScratch() { CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming)); }
  ~InterpolateScratch() { cudaEventDestroy(done_); }  // errors ignored: may run at exit
  InterpolateScratch(const InterpolateScratch&) = delete;
  InterpolateScratch& operator=(const InterpolateScratch&) = delete;

  double* acquire(std::size_t n, cudaStream_t stream) {
    if (n > buf_.size()) {
      CUDA_CHECK(cudaEventSynchronize(done_));
      buf_ = CudaBuffer<double>();  // freed before the larger one is allocated
      buf_ = CudaBuffer<double>(n);
    } else {
      CUDA_CHECK(cudaStreamWaitEvent(stream, done_, 0));
    }
    return buf_.get();
  }
  void release(cudaStream_t stream) { CUDA_CHECK(cudaEventRecord(done_, stream)); }

 private:
  CudaBuffer<double> buf_;
  cudaEvent_t done_ = nullptr;
};

template <typename T>
void interpolate_cubic(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                       const Halving h, const InterpolateChunking& chunking, cudaStream_t stream) {
  const int nx = gf.nx, nz = gc.dims == 3 ? gc.nz : 1;
  // Chunks of ck coarse planes x cj coarse rows (mg::cubic_chunks).
  const mg::CubicChunks chunks =
      mg::cubic_chunks(gc, nx, h.sy, h.sz, chunking.planes, chunking.doubles);
  const int ck = chunks.planes, cj = chunks.rows;
  InterpolateScratch& ws = per_thread_device_instance<InterpolateScratch>();
  double* const xs = ws.acquire(chunks.doubles, stream);
  for (int K0 = 0; K0 < nz; K0 += ck)
    for (int J0 = 0; J0 < gc.ny; J0 += cj) {
      const int K1 = std::min(K0 + ck, nz), J1 = std::min(J0 + cj, gc.ny);
      Chunk c;
      c.j0 = J0 << h.sy;
      c.nj = (J1 - J0) << h.sy;
      c.k0 = K0 << h.sz;
      c.nk = (K1 - K0) << h.sz;
      stencil_reads(J0, J1, h.sy, gc.ny, &c.rj, &c.mj);
      stencil_reads(K0, K1, h.sz, nz, &c.rk, &c.mk);
      double* const ys = xs + std::size_t(c.mj) * std::size_t(c.mk) * std::size_t(nx);
      RowLaunch l = pass_launch(nx, c.mj, c.mk);
      cubic_x_kernel<T><<<l.grid, l.block, 0, stream>>>(coarse, gc, nx, h, c, xs);
      CUDA_CHECK_LAUNCH();
      l = pass_launch(nx, c.nj, c.mk);
      cubic_y_kernel<<<l.grid, l.block, 0, stream>>>(xs, nx, gc.ny, h, c, ys);
      CUDA_CHECK_LAUNCH();
      l = pass_launch(nx, c.nk, c.nj);
      cubic_z_kernel<T><<<l.grid, l.block, 0, stream>>>(ys, nz, h, c, fine, gf);
      CUDA_CHECK_LAUNCH();
    }
  ws.release(stream);
}

}  // namespace

template <typename T>
void launch_interpolate(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                        const std::array<int, 3>& ratio, Prolongation p, cudaStream_t stream,
                        const InterpolateChunking& chunking) {
  const Halving h = check_transfer(gf, gc, ratio, "interpolate");
  if (gf.interior_size() == 0) return;
  if (p == Prolongation::Cubic) {
    interpolate_cubic(coarse, gc, fine, gf, h, chunking, stream);
    return;
  }
  const RowLaunch l = row_launch(gf);
  interpolate_kernel<T><<<l.grid, l.block, 0, stream>>>(coarse, gc, fine, gf, h, p);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_restrict_average(const T* fine, const GridDesc& gf, T* coarse, const GridDesc& gc,
                             const std::array<int, 3>& ratio, cudaStream_t stream) {
  const Halving h = check_transfer(gf, gc, ratio, "restrict_average");
  if (gc.interior_size() == 0) return;
  const RowLaunch l = row_launch(gc);
  restrict_average_kernel<T><<<l.grid, l.block, 0, stream>>>(fine, gf, coarse, gc, h, scale_of(h));
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_stencil_restrict(const T* u, const SourceRef<T>& f, const GridDesc& gf,
                             const StencilCoeffs<T>& c, const AffineGhostRules<T>& rules, T* coarse,
                             const GridDesc& gc, const std::array<int, 3>& ratio,
                             cudaStream_t stream, int kb, int ke) {
  const Halving h = check_transfer(gf, gc, ratio, "stencil_restrict");
  if (gc.interior_size() == 0) return;
  if (rules.periodic != 0)
    throw std::invalid_argument("stencil_restrict: periodic faces are read from u's ghosts");
  const int nz = gc.dims == 3 ? gc.nz : 1;
  kb = gc.dims == 3 ? std::max(kb, 0) : 0;
  ke = gc.dims == 3 && ke >= 0 ? std::min(ke, nz) : nz;
  if (ke <= kb) return;
  const int planes = ke - kb;
  if (gf.dims == 3 && h.sx && h.sy && h.sz && gc.nx * gc.ny >= 4096) {
    // Streaming pays where there are enough coarse columns (below, a thread per coarse cell is
    // faster); chunks of coarse planes: enough blocks to fill the device, 8 planes or more each.
    // Its pair loads need u 2-value aligned (the strides are even: every axis halved).
    if (reinterpret_cast<std::uintptr_t>(u) % (2 * sizeof(T)) != 0)
      throw std::invalid_argument("stencil_restrict: u is not aligned to two values");
    const dim3 block(32, 8);
    const int bx = (gc.nx + 31) / 32, by = (gc.ny + 7) / 8;
    const int chunks = std::max(1, std::min(planes / 8, 2048 / std::max(1, bx * by)));
    const int chunk = (planes + chunks - 1) / chunks;
    const dim3 grid(bx, by, (planes + chunk - 1) / chunk);
    if (f.plane)
      stencil_restrict_stream_kernel<T, kSourceGenerated>
          <<<grid, block, 0, stream>>>(u, f, gf, c, rules, coarse, gc, chunk, kb, ke);
    else if (f.field)
      stencil_restrict_stream_kernel<T, kSourceStaged>
          <<<grid, block, 0, stream>>>(u, f, gf, c, rules, coarse, gc, chunk, kb, ke);
    else
      stencil_restrict_stream_kernel<T, kSourceNone>
          <<<grid, block, 0, stream>>>(u, f, gf, c, rules, coarse, gc, chunk, kb, ke);
    CUDA_CHECK_LAUNCH();
    return;
  }
  const RowLaunch l = row_launch(gc.nx, std::int64_t(gc.ny) * planes);
  if (gf.dims == 3)
    stencil_restrict_kernel<T, 3>
        <<<l.grid, l.block, 0, stream>>>(u, f, gf, c, rules, coarse, gc, h, scale_of(h), kb, ke);
  else
    stencil_restrict_kernel<T, 2>
        <<<l.grid, l.block, 0, stream>>>(u, f, gf, c, rules, coarse, gc, h, scale_of(h), kb, ke);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_prolong_add(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                        const std::array<int, 3>& ratio, Prolongation p, cudaStream_t stream) {
  const Halving h = check_transfer(gf, gc, ratio, "prolong_add");
  if (gf.interior_size() == 0) return;
  // Fine columns over the coarse rows (prolong_add_kernel).
  const RowLaunch l = row_launch(gf.nx, std::int64_t(gc.ny) * (gc.dims == 3 ? gc.nz : 1));
  prolong_add_kernel<T>
      <<<l.grid, l.block, 0, stream>>>(coarse, gc, fine, gf, h, p == Prolongation::Linear);
  CUDA_CHECK_LAUNCH();
}

#define HS_INSTANTIATE(T)                                                                       \
  template void launch_restrict_average<T>(const T*, const GridDesc&, T*, const GridDesc&,      \
                                           const std::array<int, 3>&, cudaStream_t);            \
  template void launch_prolong_add<T>(const T*, const GridDesc&, T*, const GridDesc&,           \
                                      const std::array<int, 3>&, Prolongation, cudaStream_t);   \
  template void launch_interpolate<T>(const T*, const GridDesc&, T*, const GridDesc&,           \
                                      const std::array<int, 3>&, Prolongation, cudaStream_t,    \
                                      const InterpolateChunking&);                              \
  template void launch_stencil_restrict<T>(const T*, const SourceRef<T>&, const GridDesc&,      \
                                           const StencilCoeffs<T>&, const AffineGhostRules<T>&, \
                                           T*, const GridDesc&, const std::array<int, 3>&,      \
                                           cudaStream_t, int, int);
HS_INSTANTIATE(float)
HS_INSTANTIATE(double)
#undef HS_INSTANTIATE

}  // namespace heatsolve::cuda
