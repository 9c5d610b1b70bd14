// The stencil ladder's rung 6 (stencil_kernels.cuh): 2.5d-register.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/stencil/cuda/stencil_point.cuh"

namespace heatsolve::cuda {

// ---- rung 6 (ours): 2.5d-register ---------------------------------------------------------
// No shared memory and no barriers. Warps lie along x (BX is a multiple of 32); each thread
// owns VX consecutive x columns (VX = 1 or 2) of RY consecutive rows (3D; one row in 2D) and
// walks `chunk` planes along the stream axis, keeping a ring of PD + 2 plane columns in
// registers (planes k-1 .. k+PD):
//   - x neighbours come from the thread's own columns and the neighbouring lanes by warp
//     shuffles; lanes 0 and 31 load the one value outside the warp (prefetched with the plane);
//   - in-plane y neighbours are the thread's own column (plus one row above and below);
//   - stream neighbours are the previous / next plane's column;
//   - plane k+PD is loaded before plane k is computed (software prefetch). The plane loop is
//     unrolled by the ring size so ring slots are compile-time registers and nothing waits
//     on a prefetched value until it is used: each thread keeps PD*(RY+2) loads in flight.
// VX = 2: with `xshift` = 1 the block's columns start one cell left of a multiple of 2*BX, so
// that (for an even row stride and an odd interior offset: nx even) each thread's two columns
// are one aligned 8-byte (float) / 16-byte (double) vector load and store; with xshift = 0
// (odd nx) they are two scalar loads. MINB: minimum resident blocks (register cap).
// Threads past the x extent load clamped columns (they take part in the shuffles) and store
// nothing. (Overlapping warps instead, 30 outputs per 32 lanes and no edge loads, are slower
// in 3D float.)
template <typename T>
struct Vec2;
template <>
struct Vec2<float> {
  using type = float2;
};
template <>
struct Vec2<double> {
  using type = double2;
};

template <typename T, int DIM, int BX, int BY, int RY, int PD, int VX = 1, int MINB = 1>
__global__ void __launch_bounds__(BX* BY, MINB)
    stencil_register_kernel(const T* __restrict__ u, T* __restrict__ out, SourceRef<T> f,
                            StreamGeom g, StencilCoeffs<T> c, int chunk, int xshift = 0) {
  static_assert(BX % 32 == 0, "warps must lie along x");
  static_assert(DIM == 3 || RY == 1, "2D threads own one row");
  static_assert(PD >= 1, "prefetch at least one plane ahead");
  static_assert(VX == 1 || VX == 2, "one or two columns per thread");
  using V = typename Vec2<T>::type;
  constexpr int NR = RY;                     // rows computed per thread
  constexpr int NC = DIM == 3 ? RY + 2 : 1;  // rows loaded per plane (with the y neighbours)
  constexpr int C0 = DIM == 3 ? 1 : 0;       // column slot of the first computed row
  constexpr int S = PD + 2;                  // ring: planes k-1 .. k+PD
  const int lane = threadIdx.x & 31;
  const int i = (blockIdx.x * BX + threadIdx.x) * VX - xshift;  // first column of this thread
  const int jt = (blockIdx.y * BY + threadIdx.y) * NR;          // first row of this thread
  if (jt >= g.ny_plane) return;  // whole warp (warps share threadIdx.y)
  const bool vec = VX == 2 && xshift == 1;
  bool xin[VX];
#pragma unroll
  for (int v = 0; v < VX; ++v) xin[v] = i + v >= 0 && i + v < g.nx;
  // Column of the thread's loads: clamped so that lanes past the grid read the ghost column
  // (vector loads: the aligned pair (nx-1, nx)); d1: offset of the second column's load.
  const int cbase = vec ? min(i, g.nx - 1) : min(i, g.nx);
  const int d1 = VX == 2 ? (vec ? 1 : min(i + 1, g.nx) - cbase) : 0;
  // Row offsets of the column, clamped to the upper ghost row.
  std::int64_t roff[NC];
#pragma unroll
  for (int rr = 0; rr < NC; ++rr) roff[rr] = g.sy * min(jt - C0 + rr, g.ny_plane);
  // Lanes 0 and 31 load the neighbour outside the warp; lane 31 only while inside the grid
  // (for i == nx-1 below lane 31 the next lane holds the ghost column already).
  const bool edge = lane == 0 || (lane == 31 && i + VX - 1 < g.nx);
  const int eoff = (lane == 0 ? min(max(i - 1, -1), g.nx) : min(i + VX, g.nx)) - cbase;
  const int k0 = blockIdx.z * chunk, k1 = min(k0 + chunk, g.ns);
  const T* __restrict__ ucol = u + g.origin + cbase;

  T col[S][NC][VX], e[S][NR];
  // Plane kp into ring slot `slot` (a compile-time index after unrolling).
#define HS_LOAD_PLANE(kp, slot)                                          \
  do {                                                                   \
    const T* p_ = ucol + g.ss * (kp);                                    \
    _Pragma("unroll") for (int rr = 0; rr < NC; ++rr) {                  \
      if constexpr (VX == 2) {                                           \
        if (vec) {                                                       \
          const V w_ = __ldg(reinterpret_cast<const V*>(p_ + roff[rr])); \
          col[slot][rr][0] = w_.x;                                       \
          col[slot][rr][VX - 1] = w_.y;                                  \
        } else {                                                         \
          col[slot][rr][0] = __ldg(p_ + roff[rr]);                       \
          col[slot][rr][VX - 1] = __ldg(p_ + roff[rr] + d1);             \
        }                                                                \
      } else {                                                           \
        col[slot][rr][0] = __ldg(p_ + roff[rr]);                         \
      }                                                                  \
    }                                                                    \
    _Pragma("unroll") for (int r = 0; r < NR; ++r) e[slot][r] =          \
        edge ? __ldg(p_ + roff[C0 + r] + eoff) : T(0);                   \
  } while (0)

  // Prologue: planes k0-1 .. k0+PD-1 into slots 0 .. PD (never past plane k1 <= ns).
#pragma unroll
  for (int q = 0; q <= PD; ++q)
    if (k0 - 1 + q <= k1) HS_LOAD_PLANE(k0 - 1 + q, q);

  for (int kb = k0; kb < k1; kb += S) {
#pragma unroll
    for (int q = 0; q < S; ++q) {
      const int k = kb + q;
      if (k >= k1) break;
      // Slots: plane k-1 -> q, k -> q+1, k+1 -> q+2, k+PD -> q+PD+1 (mod S; the slot of k-2).
      if (k + PD <= k1) HS_LOAD_PLANE(k + PD, (q + PD + 1) % S);
      const int sm_ = q, sc_ = (q + 1) % S, sp_ = (q + 2) % S;
      const std::int64_t obase = g.origin + i + g.ss * k;
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        T left = __shfl_up_sync(0xffffffffu, col[sc_][C0 + r][VX - 1], 1);
        T right = __shfl_down_sync(0xffffffffu, col[sc_][C0 + r][0], 1);
        if (lane == 0) left = e[sc_][r];
        if (lane == 31) right = e[sc_][r];
        if (jt + r >= g.ny_plane) continue;
        const std::int64_t idx = obase + roff[C0 + r];
        T res[VX];
#pragma unroll
        for (int v = 0; v < VX; ++v) {
          const T w = col[sc_][C0 + r][v];
          const T xm = v > 0 ? col[sc_][C0 + r][v - 1] : left;
          const T xp = v < VX - 1 ? col[sc_][C0 + r][v + 1] : right;
          T pm = 0, pp = 0;
          if constexpr (DIM == 3) {
            pm = col[sc_][C0 + r - 1][v];
            pp = col[sc_][C0 + r + 1][v];
          }
          if (VX == 1 || !vec) {  // scalar stores; f read at interior cells only
            if (xin[v])
              out[idx + v] = stream_point<DIM>(c, w, xm, xp, pm, pp, col[sm_][C0 + r][v],
                                               col[sp_][C0 + r][v], f, idx + v, k);
          } else {
            res[v] =
                stream_point<DIM>(c, w, xm, xp, pm, pp, col[sm_][C0 + r][v], col[sp_][C0 + r][v],
                                  xin[0] && xin[1] ? f : SourceRef<T>{}, idx + v, k);
          }
        }
        if constexpr (VX == 2) {
          if (vec) {
            if (xin[0] && xin[1]) {
              *reinterpret_cast<V*>(out + idx) = V{res[0], res[1]};
            } else {  // the row ends: one cell of the pair is a ghost or past the grid
#pragma unroll
              for (int v = 0; v < VX; ++v)
                if (xin[v])
                  out[idx + v] =
                      stream_point<DIM>(c, col[sc_][C0 + r][v], v > 0 ? col[sc_][C0 + r][0] : left,
                                        v < VX - 1 ? col[sc_][C0 + r][1] : right,
                                        DIM == 3 ? col[sc_][C0 + r - (DIM == 3)][v] : T(0),
                                        DIM == 3 ? col[sc_][C0 + r + (DIM == 3)][v] : T(0),
                                        col[sm_][C0 + r][v], col[sp_][C0 + r][v], f, idx + v, k);
            }
          }
        }
      }
    }
  }
#undef HS_LOAD_PLANE
}

}  // namespace heatsolve::cuda
