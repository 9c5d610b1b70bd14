// Multigrid grid transfers: one thread per output cell, x fastest (coalesced), rows of the
// output grid over blockIdx.y / threadIdx.y (grid-stride). Each thread sums in double in the
// CPU reference's order (kernels/multigrid/cpu/transfer_cpu.cpp); the linear prolongation
// uses unfused multiplies and adds (__dmul_rn / __dadd_rn) as the host does, so both
// transfers give the CPU's bits.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/multigrid/cuda/transfer.cuh"
#include "kernels/multigrid/interpolation.hpp"

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

// Launch shape over the interior of g: blocks of 256 threads, x as wide as the rows need (a
// warp at least), the rest of the block over rows.
struct RowLaunch {
  dim3 grid, block;
};
RowLaunch row_launch(const GridDesc& g) {
  const int bx = std::min(256, (g.nx + 31) / 32 * 32), by = 256 / bx;
  const std::int64_t rows = std::int64_t(g.ny) * (g.dims == 3 ? g.nz : 1);
  const std::int64_t gy = std::min<std::int64_t>((rows + by - 1) / by, 65535);
  return {dim3(unsigned((g.nx + bx - 1) / bx), unsigned(gy)), dim3(unsigned(bx), unsigned(by))};
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

// fine(i, j, k) += P coarse (Backend::prolong_add). Linear: the parent plus, per halved
// axis, a quarter of the difference to the parent's neighbour on the child's side (even
// child: -1, odd child: +1); reads face neighbours only.
template <typename T>
__global__ void prolong_add_kernel(const T* __restrict__ coarse, const GridDesc gc,
                                   T* __restrict__ fine, const GridDesc gf, const Halving h,
                                   const bool linear) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= gf.nx) return;
  const std::int64_t rows = std::int64_t(gf.ny) * (gf.dims == 3 ? gf.nz : 1);
  const int I = i >> h.sx;
  const int si = h.sx ? ((i & 1) ? 1 : -1) : 0;
  for (std::int64_t r = std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += std::int64_t(gridDim.y) * blockDim.y) {
    const int j = int(r % gf.ny), k = int(r / gf.ny);  // k == 0 in 2D
    const int J = j >> h.sy, K = k >> h.sz;
    double v;
    if (!linear) {
      v = double(coarse[gc.index(I, J, K)]);
    } else {
      // The parent plus a quarter of the difference to its neighbour on the child's side, per
      // halved axis (the CPU's order and rounding: _rn keeps nvcc from contracting to FMA).
      const double parent = double(coarse[gc.index(I, J, K)]);
      v = parent;
      if (si)
        v = __dadd_rn(v,
                      __dmul_rn(0.25, __dsub_rn(double(coarse[gc.index(I + si, J, K)]), parent)));
      if (h.sy) {
        const int sj = (j & 1) ? 1 : -1;
        v = __dadd_rn(v,
                      __dmul_rn(0.25, __dsub_rn(double(coarse[gc.index(I, J + sj, K)]), parent)));
      }
      if (h.sz) {
        const int sk = (k & 1) ? 1 : -1;
        v = __dadd_rn(v,
                      __dmul_rn(0.25, __dsub_rn(double(coarse[gc.index(I, J, K + sk)]), parent)));
      }
    }
    T& out = fine[gf.index(i, j, k)];
    out = static_cast<T>(__dadd_rn(double(out), v));
  }
}

// fine(i, j, k) = P coarse (Backend::interpolate; kernels/multigrid/interpolation.hpp, the
// CPU's arithmetic).
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

}  // namespace

template <typename T>
void launch_interpolate(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                        const std::array<int, 3>& ratio, Prolongation p, cudaStream_t stream) {
  const Halving h = check_transfer(gf, gc, ratio, "interpolate");
  if (gf.interior_size() == 0) return;
  const RowLaunch l = row_launch(gf);
  interpolate_kernel<T><<<l.grid, l.block, 0, stream>>>(coarse, gc, fine, gf, h, p);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_restrict_average(const T* fine, const GridDesc& gf, T* coarse, const GridDesc& gc,
                             const std::array<int, 3>& ratio, cudaStream_t stream) {
  const Halving h = check_transfer(gf, gc, ratio, "restrict_average");
  if (gc.interior_size() == 0) return;
  const double scale = 1.0 / double((1 << h.sx) * (1 << h.sy) * (1 << h.sz));
  const RowLaunch l = row_launch(gc);
  restrict_average_kernel<T><<<l.grid, l.block, 0, stream>>>(fine, gf, coarse, gc, h, scale);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_prolong_add(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                        const std::array<int, 3>& ratio, Prolongation p, cudaStream_t stream) {
  const Halving h = check_transfer(gf, gc, ratio, "prolong_add");
  if (gf.interior_size() == 0) return;
  const RowLaunch l = row_launch(gf);
  prolong_add_kernel<T>
      <<<l.grid, l.block, 0, stream>>>(coarse, gc, fine, gf, h, p == Prolongation::Linear);
  CUDA_CHECK_LAUNCH();
}

#define HS_INSTANTIATE(T)                                                                     \
  template void launch_restrict_average<T>(const T*, const GridDesc&, T*, const GridDesc&,    \
                                           const std::array<int, 3>&, cudaStream_t);          \
  template void launch_prolong_add<T>(const T*, const GridDesc&, T*, const GridDesc&,         \
                                      const std::array<int, 3>&, Prolongation, cudaStream_t); \
  template void launch_interpolate<T>(const T*, const GridDesc&, T*, const GridDesc&,         \
                                      const std::array<int, 3>&, Prolongation, cudaStream_t);
HS_INSTANTIATE(float)
HS_INSTANTIATE(double)
#undef HS_INSTANTIATE

}  // namespace heatsolve::cuda
