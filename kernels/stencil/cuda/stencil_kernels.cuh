// The CUDA stencil ladder (docs/kernels.md): one kernel template per rung, templated on the
// precision, the dimension and the block/tile shape, all sharing one point update.
//
// Layout (core/grid.hpp): padded arrays, one ghost cell per side of every active
// dimension, x fastest. Kernels write interior cells of `out` only; the ghosts of `u` must be
// filled (apply_boundary) before a sweep. `f` (source) has the layout of `u`, may be null.
//
// The streaming rungs walk a "stream" axis (z in 3D, y in 2D) through a chunk of planes per
// block; the plane is x-y in 3D and a single x row in 2D.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/grid.hpp"
#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/stencil/coefficients.hpp"
#include "kernels/stencil/cuda/ghost_rules.cuh"
#include "kernels/stencil/source.hpp"

namespace heatsolve::cuda {

// ---- the point update every kernel uses ----------------------------------------------
// One order of operations, with every rounding explicit, so that no two kernels differ by
// the compiler's FMA contraction: every single-step rung, both temporal designs and the
// region sweeps give the same bits for the same inputs, and a decomposed run gives the
// single-GPU run's bits whichever kernel each block size tunes to (cs: the stream axis'
// coefficient, cz in 3D, cy in 2D):
//   part = fma(cx, xm + xp, fma(center, u, cs * sm))
//   part = fma(cy, ym + yp, part)                      (3D: the in-plane y neighbours)
//   part = fma(source, f, part)                        (with a source)
//   out  = fma(cs, sp, part)
// The streaming designs keep `part` until the next plane (sp) arrives; the partial-sums
// temporal design keeps cs * sm from the plane before. The CPU backend adds the terms in the
// order of cpu_stencil, so it agrees with these to rounding.
__device__ __forceinline__ float mul_rn(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ __forceinline__ double mul_rn(double a, double b) {
  return __dmul_rn(a, b);
}
__device__ __forceinline__ float add_rn(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ __forceinline__ double add_rn(double a, double b) {
  return __dadd_rn(a, b);
}
__device__ __forceinline__ float fma_rn(float a, float b, float c) {
  return __fmaf_rn(a, b, c);
}
__device__ __forceinline__ double fma_rn(double a, double b, double c) {
  return __fma_rn(a, b, c);
}

template <int DIM, typename T>
__device__ __forceinline__ T stream_coeff(const StencilCoeffs<T>& c) {
  return DIM == 3 ? c.cz : c.cy;
}

// part from b = cs * sm and the source value fv where SOURCE.
template <int DIM, bool SOURCE, typename T>
__device__ __forceinline__ T point_part_b(const StencilCoeffs<T>& c, T u, T xm, T xp, T pm, T pp,
                                          T fv, T b) {
  T acc = fma_rn(c.cx, add_rn(xm, xp), fma_rn(c.center, u, b));
  if constexpr (DIM == 3) acc = fma_rn(c.cy, add_rn(pm, pp), acc);
  if constexpr (SOURCE) acc = fma_rn(c.source, fv, acc);
  return acc;
}

template <int DIM, bool SOURCE, typename T>
__device__ __forceinline__ T point_part(const StencilCoeffs<T>& c, T u, T xm, T xp, T pm, T pp,
                                        T sm, T fv) {
  return point_part_b<DIM, SOURCE>(c, u, xm, xp, pm, pp, fv, mul_rn(stream_coeff<DIM>(c), sm));
}

template <int DIM, typename T>
__device__ __forceinline__ T point_finish(const StencilCoeffs<T>& c, T part, T sp) {
  return fma_rn(stream_coeff<DIM>(c), sp, part);
}

// A sweep's source term (SourceRef, kernels/stencil/source.hpp) at cell idx in plane k of the
// stream axis: stored, or generated from its separable form with separable_value()'s
// roundings (the plane factor of a block's tile stays in L1 across its planes).
template <typename T>
__device__ __forceinline__ T source_value(const SourceRef<T>& f, T plane_factor, int k) {
  return add_rn(f.offset, mul_rn(f.scale, mul_rn(plane_factor, __ldg(f.column + k))));
}
template <typename T>
__device__ __forceinline__ T source_at(const SourceRef<T>& f, std::int64_t idx, int k) {
  return f.plane ? source_value(f, __ldg(f.plane + (idx - (k + 1) * f.ss)), k)
                 : __ldg(f.field + idx);
}

// How an instance compiled for one kind of source term (template parameter SRC) gets it: none,
// the stored field, or generated from the separable form.
inline constexpr int kSourceNone = 0, kSourceStaged = 1, kSourceGenerated = 2;

// part with the source of f at cell idx of stream plane k (none where f has none).
template <int DIM, typename T>
__device__ __forceinline__ T point_part(const StencilCoeffs<T>& c, T u, T xm, T xp, T pm, T pp,
                                        T sm, const SourceRef<T>& f, std::int64_t idx, int k) {
  return f.present() ? point_part<DIM, true>(c, u, xm, xp, pm, pp, sm, source_at(f, idx, k))
                     : point_part<DIM, false>(c, u, xm, xp, pm, pp, sm, T(0));
}

// The update in stream form: (xm, xp) x neighbours, (pm, pp) in-plane y neighbours (3D only),
// (sm, sp) neighbours along the stream axis (z in 3D, y in 2D); the cell is idx, in plane k of
// that axis.
template <int DIM, typename T>
__device__ __forceinline__ T stream_point(const StencilCoeffs<T>& c, T u, T xm, T xp, T pm, T pp,
                                          T sm, T sp, const SourceRef<T>& f, std::int64_t idx,
                                          int k) {
  return point_finish<DIM>(c, point_part<DIM>(c, u, xm, xp, pm, pp, sm, f, idx, k), sp);
}

// The update in grid form (zm, zp ignored in 2D); the cell is (i, j, k) at idx.
template <int DIM, typename T>
__device__ __forceinline__ T stencil_point(const StencilCoeffs<T>& c, T u, T xm, T xp, T ym, T yp,
                                           T zm, T zp, const SourceRef<T>& f, std::int64_t idx,
                                           int j, int k) {
  if constexpr (DIM == 3)
    return stream_point<3>(c, u, xm, xp, ym, yp, zm, zp, f, idx, k);
  else
    return stream_point<2>(c, u, xm, xp, T(0), T(0), ym, yp, f, idx, j);
}

struct StreamGeom {
  int nx, ny_plane, ns;  // interior extents: x, in-plane y (1 in 2D), stream
  std::int64_t sy, ss;   // strides of in-plane y (unused in 2D) and of the stream axis
  std::int64_t origin;   // index of interior cell (0, 0, 0)
};

inline StreamGeom stream_geom(const GridDesc& g) {
  StreamGeom s;
  s.nx = g.nx;
  s.origin = g.interior_offset();
  if (g.dims == 3) {
    s.ny_plane = g.ny;
    s.ns = g.nz;
    s.sy = g.stride_y();
    s.ss = g.stride_z();
  } else {
    s.ny_plane = 1;
    s.ns = g.ny;
    s.sy = 0;
    s.ss = g.stride_y();
  }
  return s;
}

// ---- rung 1: naive ------------------------------------------------------------------------
template <typename T, int DIM, int BX, int BY, int BZ>
__global__ void __launch_bounds__(BX* BY* BZ)
    stencil_naive_kernel(const T* __restrict__ u, T* __restrict__ out, SourceRef<T> f, GridDesc g,
                         StencilCoeffs<T> c) {
  const int i = blockIdx.x * BX + threadIdx.x;
  const int j = blockIdx.y * BY + threadIdx.y;
  const int k = DIM == 3 ? int(blockIdx.z) * BZ + int(threadIdx.z) : 0;
  if (i >= g.nx || j >= g.ny || (DIM == 3 && k >= g.nz)) return;
  const std::int64_t sy = g.stride_y(), sz = DIM == 3 ? g.stride_z() : 0;
  const std::int64_t idx = g.index(i, j, k);
  T zm = 0, zp = 0;
  if constexpr (DIM == 3) {
    zm = u[idx - sz];
    zp = u[idx + sz];
  }
  out[idx] = stencil_point<DIM>(c, u[idx], u[idx - 1], u[idx + 1], u[idx - sy], u[idx + sy], zm, zp,
                                f, idx, j, k);
}

// "nondivergent" halo load: the halo faces of an ex x ey x ez tile as one linear index space
// (z faces, then y faces, then x faces; consecutive indices run along x where the face
// allows, so loads coalesce), strided over the block's threads. Inlined twice: with the
// compile-time block extents for full tiles (divisions become multiplications) and with the
// run-time extents for partial tiles at the upper faces.
template <typename T, int DIM, int TX, int TY, int TZ>
__device__ __forceinline__ void load_tile_halo(T (&s)[TZ][TY][TX], const T* __restrict__ u,
                                               std::int64_t base, std::int64_t sy, std::int64_t sz,
                                               int ex, int ey, int ez, int t, int nthreads) {
  constexpr int HZ = DIM == 3 ? 1 : 0;
  const int nzf = DIM == 3 ? ex * ey : 0, nyf = ex * ez, nxf = ey * ez;
  const int total = 2 * (nzf + nyf + nxf);
  for (int h = t; h < total; h += nthreads) {
    int side, X, Y, Z;  // tile coordinates of the halo cell (interior origin at 0)
    int r = h;
    bool done = false;
    if constexpr (DIM == 3) {
      if (r < 2 * nzf) {
        side = r / nzf;
        r -= side * nzf;
        X = r % ex;
        Y = r / ex;
        Z = side ? ez : -1;
        done = true;
      } else {
        r -= 2 * nzf;
      }
    }
    if (!done) {
      if (r < 2 * nyf) {
        side = r / nyf;
        r -= side * nyf;
        X = r % ex;
        Z = DIM == 3 ? r / ex : 0;
        Y = side ? ey : -1;
      } else {
        r -= 2 * nyf;
        side = r / nxf;
        r -= side * nxf;
        Y = r % ey;
        Z = DIM == 3 ? r / ey : 0;
        X = side ? ex : -1;
      }
    }
    s[Z + HZ][Y + 1][X + 1] = u[base + X + sy * Y + sz * Z];
  }
}

// ---- rungs 2 and 3: shared-memory tile + one-cell halo -----------------------------------
// HALO_BY_WARPS = false: "shared" (edge threads load the halo under per-thread branches).
// HALO_BY_WARPS = true:  "nondivergent" (the halo cells are a linear index space loaded by
// consecutive threads, so whole warps take the same branch).
template <typename T, int DIM, int BX, int BY, int BZ, bool HALO_BY_WARPS>
__global__ void __launch_bounds__(BX* BY* BZ)
    stencil_tiled_kernel(const T* __restrict__ u, T* __restrict__ out, SourceRef<T> f, GridDesc g,
                         StencilCoeffs<T> c) {
  constexpr int TX = BX + 2, TY = BY + 2, TZ = DIM == 3 ? BZ + 2 : 1;
  constexpr int HZ = DIM == 3 ? 1 : 0;  // z halo width of the tile
  __shared__ T s[TZ][TY][TX];
  const int tx = threadIdx.x, ty = threadIdx.y, tz = DIM == 3 ? int(threadIdx.z) : 0;
  const int x0 = blockIdx.x * BX, y0 = blockIdx.y * BY, z0 = DIM == 3 ? int(blockIdx.z) * BZ : 0;
  // Extent of this tile inside the grid (partial tiles at the upper faces).
  const int ex = min(BX, g.nx - x0), ey = min(BY, g.ny - y0),
            ez = DIM == 3 ? min(BZ, g.nz - z0) : 1;
  const bool in = tx < ex && ty < ey && tz < ez;
  const std::int64_t sy = g.stride_y(), sz = DIM == 3 ? g.stride_z() : 0;
  const std::int64_t idx = g.index(x0 + tx, y0 + ty, z0 + tz);
  if (in) s[tz + HZ][ty + 1][tx + 1] = u[idx];

  if constexpr (!HALO_BY_WARPS) {
    if (in) {
      if (tx == 0) s[tz + HZ][ty + 1][0] = u[idx - 1];
      if (tx == ex - 1) s[tz + HZ][ty + 1][tx + 2] = u[idx + 1];
      if (ty == 0) s[tz + HZ][0][tx + 1] = u[idx - sy];
      if (ty == ey - 1) s[tz + HZ][ty + 2][tx + 1] = u[idx + sy];
      if constexpr (DIM == 3) {
        if (tz == 0) s[0][ty + 1][tx + 1] = u[idx - sz];
        if (tz == ez - 1) s[tz + 2][ty + 1][tx + 1] = u[idx + sz];
      }
    }
  } else {
    const std::int64_t base = g.index(x0, y0, z0);
    const int t = tx + BX * (ty + BY * tz);
    if (ex == BX && ey == BY && ez == (DIM == 3 ? BZ : 1))
      load_tile_halo<T, DIM>(s, u, base, sy, sz, BX, BY, DIM == 3 ? BZ : 1, t, BX * BY * BZ);
    else
      load_tile_halo<T, DIM>(s, u, base, sy, sz, ex, ey, ez, t, BX * BY * BZ);
  }
  __syncthreads();
  if (!in) return;
  const int lz = tz + HZ, ly = ty + 1, lx = tx + 1;
  T zm = 0, zp = 0;
  if constexpr (DIM == 3) {
    zm = s[lz - 1][ly][lx];
    zp = s[lz + 1][ly][lx];
  }
  out[idx] =
      stencil_point<DIM>(c, s[lz][ly][lx], s[lz][ly][lx - 1], s[lz][ly][lx + 1], s[lz][ly - 1][lx],
                         s[lz][ly + 1][lx], zm, zp, f, idx, y0 + ty, z0 + tz);
}

// ---- rungs 4 and 5: 2.5D streaming ---------------------------------------------------------
// A 2D block (BX x BY threads; BY = 1 in 2D) owns a BX x BY tile of the plane and walks
// `chunk` planes along the stream axis. Stream-axis neighbours stay in registers; the current
// plane with its in-plane halo lives in shared memory. The halo is loaded by warps
// (linearised, as in "nondivergent"); each thread owns at most one halo cell, computed once.
//   SINGLE_SLICE = false: "2.5d"  - two shared slices (the next plane is written into the
//                         other slice while the current one is read; one barrier per plane).
//   SINGLE_SLICE = true:  "2.5d-single-slice" - one slice; the in-plane part of the update
//                         is kept as a running partial sum in a register and finished when the
//                         next plane's value arrives (two barriers per plane, half the shared
//                         memory, more resident blocks).
template <typename T, int DIM, int BX, int BY>
struct PlaneHalo {
  static constexpr int HY = DIM == 3 ? 1 : 0;
  static constexpr int TX = BX + 2, TY = BY + 2 * HY;
  int slot = -1;            // shared offset inside one slice, -1 = none
  std::int64_t offset = 0;  // global offset from the tile's plane origin

  __device__ void init(int t, int ex, int ey, std::int64_t sy) {
    const int nxf = ey, nyf = DIM == 3 ? ex : 0;
    int h = t;
    if (h < 2 * nxf) {
      const int side = h / nxf, y = h - side * nxf, x = side ? ex : -1;
      slot = (y + HY) * TX + x + 1;
      offset = x + sy * y;
    } else if constexpr (DIM == 3) {
      if ((h -= 2 * nxf) < 2 * nyf) {
        const int side = h / nyf, x = h - side * nyf, y = side ? ey : -1;
        slot = (y + HY) * TX + x + 1;
        offset = x + sy * y;
      }
    }
  }
};

template <typename T, int DIM, int BX, int BY, bool SINGLE_SLICE>
__global__ void __launch_bounds__(BX* BY)
    stencil_streaming_kernel(const T* __restrict__ u, T* __restrict__ out, SourceRef<T> f,
                             StreamGeom g, StencilCoeffs<T> c, int chunk) {
  static_assert(DIM == 3 || BY == 1, "2D streaming tiles are one row high");
  using Halo = PlaneHalo<T, DIM, BX, BY>;
  constexpr int TX = Halo::TX, TY = Halo::TY, HY = Halo::HY, SLICES = SINGLE_SLICE ? 1 : 2;
  static_assert(2 * (BX + BY) <= BX * BY || DIM == 2, "one halo cell per thread at most");
  __shared__ T s[SLICES][TY * TX];

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x0 = blockIdx.x * BX, y0 = blockIdx.y * BY;
  const int ex = min(BX, g.nx - x0), ey = min(BY, g.ny_plane - y0);
  const bool in = tx < ex && ty < ey;
  const int k0 = blockIdx.z * chunk, k1 = min(k0 + chunk, g.ns);
  const std::int64_t tile0 = g.origin + x0 + g.sy * y0;  // plane origin of the tile, k = 0
  const std::int64_t me = tx + g.sy * ty;                // this thread's offset in the tile
  const int my_slot = (ty + HY) * TX + tx + 1;
  Halo halo;
  halo.init(tx + BX * ty, ex, ey, g.sy);

  // Registers: sm = u[k-1], sc = u[k], sp = u[k+1] of this thread's column.
  T sm = 0, sc = 0, sp = 0;
  std::int64_t plane = tile0 + g.ss * k0;
  if (in) {
    sm = u[plane + me - g.ss];
    sc = u[plane + me];
    s[0][my_slot] = sc;
  }
  if (halo.slot >= 0) s[0][halo.slot] = u[plane + halo.offset];
  __syncthreads();

  if constexpr (!SINGLE_SLICE) {
    int p = 0;
    for (int k = k0; k < k1; ++k, plane += g.ss) {
      const std::int64_t next = plane + g.ss;
      if (in) sp = u[next + me];  // k+1 <= ns: a ghost plane at most
      if (k + 1 < k1) {           // the next plane, into the other slice
        if (in) s[p ^ 1][my_slot] = sp;
        if (halo.slot >= 0) s[p ^ 1][halo.slot] = u[next + halo.offset];
      }
      if (in) {
        const T* sl = s[p];
        T pm = 0, pp = 0;
        if constexpr (DIM == 3) {
          pm = sl[my_slot - TX];
          pp = sl[my_slot + TX];
        }
        out[plane + me] = stream_point<DIM>(c, sc, sl[my_slot - 1], sl[my_slot + 1], pm, pp, sm, sp,
                                            f, plane + me, k);
      }
      __syncthreads();
      sm = sc;
      sc = sp;
      p ^= 1;
    }
  } else {
    // Plane k is in the slice; the in-plane part of out[k] is kept in `part` until u[k+1]
    // (this thread's next value) arrives. The next plane's values are loaded into registers
    // before the first barrier, so their latency overlaps the in-plane work and the barrier.
    T part = 0;
    for (int k = k0; k < k1; ++k, plane += g.ss) {
      const std::int64_t next = plane + g.ss;
      if (in) sp = u[next + me];
      T hv = 0;
      if (k + 1 < k1 && halo.slot >= 0) hv = u[next + halo.offset];
      if (in) {
        const T* sl = s[0];
        T pm = 0, pp = 0;
        if constexpr (DIM == 3) {
          pm = sl[my_slot - TX];
          pp = sl[my_slot + TX];
        }
        part =
            point_part<DIM>(c, sc, sl[my_slot - 1], sl[my_slot + 1], pm, pp, sm, f, plane + me, k);
      }
      __syncthreads();  // everyone has read plane k
      if (in && k + 1 < k1) s[0][my_slot] = sp;
      if (k + 1 < k1 && halo.slot >= 0) s[0][halo.slot] = hv;
      if (in) {
        out[plane + me] = point_finish<DIM>(c, part, sp);
      }
      __syncthreads();  // plane k+1 is in the slice
      sm = sc;
      sc = sp;
    }
  }
}

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

// ---- staged rungs: the stage layout -------------------------------------------------------
// 2.5d-async and 2.5d-tma copy whole row segments of a plane tile into a shared stage with
// copies of up to V elements (16 bytes) that need equal addresses modulo V in both memories.
// So the stage's row pitch is congruent to the global row stride modulo V and every staged
// plane q is stored at its global phase (element index of its first cell modulo V); any nx,
// buffer offset and plane stride then works. V is a power of two (V = 1: no constraint).
template <typename T, int V>
struct CongruentStage {
  int pitch;              // stage row pitch in elements: >= min_pitch, = row stride mod V
  std::uint32_t e0, ssv;  // element index of the first staged cell; plane stride mod V
  __device__ CongruentStage(const T* u, std::int64_t first, std::int64_t sy, std::int64_t ss,
                            int min_pitch, bool rows)
      : pitch(rows ? min_pitch + int((std::uint32_t(sy) - std::uint32_t(min_pitch)) & (V - 1))
                   : min_pitch),
        e0(std::uint32_t(reinterpret_cast<std::uintptr_t>(u) / sizeof(T)) + std::uint32_t(first)),
        ssv(std::uint32_t(ss) & std::uint32_t(V - 1)) {}
  // Offset (elements) at which staged plane q starts in its stage.
  __device__ int phase(int q) const { return int((e0 + std::uint32_t(q) * ssv) & (V - 1)); }
};

// ---- rung 7 (ours): 2.5d-async ------------------------------------------------------------
// The register rung is limited by bytes in flight: its prefetch ring costs registers, which
// caps resident warps. Here the ring lives in shared memory and is filled by cp.async
// (LDGSTS: global -> shared without passing through registers), so the loads in flight per
// block are (S - 2) whole planes for a few registers per thread.
//   - A block of TX x BY threads owns a TX x TY tile of the plane (TY = BY*RY rows; 3D) or a
//     TX-wide x segment (2D) and walks `chunk` planes of the stream axis.
//   - Ring of S stages; a stage holds one plane of the tile INCLUDING its one-cell halo
//     ((TX+2) x (TY+2), corners included: whole row segments copy as runs). Computing plane
//     k reads the stages of planes k and k+1 (k-1 is in registers); plane k+S-1 is issued
//     into the stage of plane k-1 just before, so S-2 planes are in flight while computing.
//     One barrier per plane (see the loop for why it also covers the overwritten stage).
//   - Copies are CB bytes wide where both addresses allow: the stage's row pitch is congruent
//     to the global row stride modulo the vector width, and each plane starts at the global
//     phase of its first element, so every row's aligned vector chunks are aligned in both
//     memories; partial chunks at the row ends copy element-wise. CB = sizeof(T): scalar.
//   - Thread (tx, ty) computes column tx of rows ty*RY .. ty*RY+RY-1: x neighbours and the
//     rows just above/below its strip from the stage, rows inside its strip from its own
//     registers, stream neighbours from registers (previous, current plane) and the next
//     stage (next plane). Threads past the grid copy, wait and compute, but store nothing.
template <typename T, int DIM, int TX, int TY, int S, int CB>
struct AsyncTile {
  static constexpr int V = CB > int(sizeof(T)) ? CB / int(sizeof(T)) : 1;  // elements per copy
  static constexpr int W = TX + 2;                                         // staged row width
  static constexpr int ROWS = DIM == 3 ? TY + 2 : 1;                       // staged rows
  static constexpr int PITCH_MAX = W + V - 1;  // row pitch: >= W, congruent to the row stride
  // One stage: up to V-1 elements of plane phase, ROWS rows; a multiple of V so that every
  // stage starts vector-aligned.
  static constexpr int STAGE = (V - 1 + ROWS * PITCH_MAX + V - 1) / V * V;
  static constexpr int CHUNKS = (W + 2 * (V - 1)) / V;  // vector chunks touching one row
  static constexpr int OPS = ROWS * CHUNKS;             // copy operations per plane
  static constexpr std::size_t SMEM_BYTES = std::size_t(S) * STAGE * sizeof(T);
  static_assert(V == 1 || V == 2 || V == 4, "copies of 1, 2 or 4 elements");
  static_assert(V * sizeof(T) <= 16, "cp.async copies at most 16 bytes");
};

template <typename T, int DIM, int TX, int BY, int RY, int S, int CB, int MINB>
__global__ void __launch_bounds__(TX* BY, MINB)
    stencil_async_kernel(const T* __restrict__ u, T* __restrict__ out, SourceRef<T> f, StreamGeom g,
                         StencilCoeffs<T> c, int chunk) {
  static_assert(DIM == 3 || (BY == 1 && RY == 1), "2D tiles are one row");
  static_assert(S >= 3, "two stages are read while at least one is in flight");
  constexpr int TY = DIM == 3 ? BY * RY : 1;
  using Tile = AsyncTile<T, DIM, TX, TY, S, CB>;
  constexpr int V = Tile::V, W = Tile::W, STAGE = Tile::STAGE, CHUNKS = Tile::CHUNKS;
  constexpr int NT = TX * BY, OPS = Tile::OPS, OPS_PER_THREAD = (OPS + NT - 1) / NT;
  extern __shared__ __align__(16) unsigned char async_smem[];
  T* const ring = reinterpret_cast<T*>(async_smem);
  const std::uint32_t ring_shared = shared_address(ring);

  const int tx = threadIdx.x, ty = DIM == 3 ? int(threadIdx.y) : 0, t = tx + TX * ty;
  const int x0 = blockIdx.x * TX, y0 = DIM == 3 ? int(blockIdx.y) * TY : 0;
  const int ex = min(TX, g.nx - x0), ey = DIM == 3 ? min(TY, g.ny_plane - y0) : 1;
  const int wrow = ex + 2, rows = DIM == 3 ? ey + 2 : 1;  // staged extent of this tile
  const int k0 = blockIdx.z * chunk, k1 = min(k0 + chunk, g.ns);
  const int planes = k1 - k0 + 2;  // staged planes k0-1 .. k1 (k1 <= ns: a ghost plane at most)
  // Staged cell (-1, -1) of plane k0-1 (3D; 2D: cell -1 of row k0-1).
  const std::int64_t corner =
      g.origin + (x0 - 1) + (DIM == 3 ? g.sy * (y0 - 1) : 0) + g.ss * std::int64_t(k0 - 1);
  const CongruentStage<T, V> layout(u, corner, g.sy, g.ss, W, DIM == 3);
  const int pitch = layout.pitch;
  const auto phase = [&](int q) { return layout.phase(q); };

  // Staged plane q into ring stage `st`: row segments of wrow elements, split into vector
  // chunks aligned in both memories; chunks cut by a row end copy element-wise.
  const auto issue = [&](int q, int st) {
    const T* const plane = u + corner + g.ss * q;
    const int ph = phase(q);
#pragma unroll
    for (int n = 0; n < OPS_PER_THREAD; ++n) {
      const int op = t + n * NT;
      const int row = op / CHUNKS, ch = op - row * CHUNKS;
      if (op >= OPS || row >= rows) continue;
      const int srow = ph + row * pitch;         // stage offset of the row's cell 0
      const int e0 = ch * V - (srow & (V - 1));  // first row element of the chunk
      const T* src = plane + (DIM == 3 ? g.sy * row : 0);
      const std::uint32_t dst = ring_shared + std::uint32_t(sizeof(T) * (st * STAGE + srow));
      if (e0 >= 0 && e0 + V <= wrow) {
        cp_async<V * sizeof(T)>(dst + std::uint32_t(sizeof(T) * e0), src + e0);
      } else {
#pragma unroll
        for (int v = 0; v < V; ++v)
          if (e0 + v >= 0 && e0 + v < wrow)
            cp_async<sizeof(T)>(dst + std::uint32_t(sizeof(T) * (e0 + v)), src + (e0 + v));
      }
    }
  };

  // Prologue: planes 0 .. S-1 into stages 0 .. S-1, one group each (empty past the chunk, so
  // that every thread counts the same groups).
#pragma unroll 1
  for (int q = 0; q < S; ++q) {
    if (q < planes) issue(q, q);
    cp_async_commit();
  }
  // Stage offset of this thread's cell in row 0 of its strip (staged row ty*RY + 1).
  const int me = (DIM == 3 ? (ty * RY + 1) * pitch : 0) + tx + 1;
  T prev[RY], curr[RY];    // this thread's cells in planes k-1 and k (stream neighbour, centre)
  cp_async_wait<S - 2>();  // planes 0 and 1 have landed (this thread's copies)
  __syncthreads();         // ... and everyone's
  {
    const T* s0 = ring + phase(0) + me;
    const T* s1 = ring + STAGE + phase(1) + me;
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      prev[r] = s0[r * pitch];
      curr[r] = s1[r * pitch];
    }
  }

  const bool col_in = tx < ex;
  std::int64_t orow = g.origin + x0 + tx + (DIM == 3 ? g.sy * (y0 + ty * RY) : 0) + g.ss * k0;
  int cur = 1, nxt = 2, free_stage = 0;  // stages of planes q, q+1, q-1
  for (int q = 1; q + 1 < planes; ++q, orow += g.ss) {
    // Before the wait, S + q - 1 groups are committed; plane q+1 is group q+1.
    cp_async_wait<S - 3>();
    // One barrier per plane: (a) plane q+1's copies by all threads are visible; (b) every
    // thread has finished iteration q-1 (its last reads of stage `free_stage`, plane q-1), so
    // the copy issued below may overwrite that stage.
    __syncthreads();
    if (q + S - 1 < planes) issue(q + S - 1, free_stage);
    cp_async_commit();

    const T* sc = ring + cur * STAGE + phase(q) + me;
    const T* sn = ring + nxt * STAGE + phase(q + 1) + me;
    T next[RY];
#pragma unroll
    for (int r = 0; r < RY; ++r) next[r] = sn[r * pitch];
    // In-plane y neighbours: the staged rows just outside the strip, own registers inside.
    T strip_lo = 0, strip_hi = 0;
    if constexpr (DIM == 3) {
      strip_lo = sc[-pitch];
      strip_hi = sc[RY * pitch];
    }
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      const T ym = r == 0 ? strip_lo : curr[r - 1];
      const T yp = r == RY - 1 ? strip_hi : curr[r + 1];
      const T xm = sc[r * pitch - 1], xp = sc[r * pitch + 1];
      if (col_in && ty * RY + r < ey) {
        const std::int64_t idx = orow + g.sy * r;
        out[idx] =
            stream_point<DIM>(c, curr[r], xm, xp, ym, yp, prev[r], next[r], f, idx, k0 + q - 1);
      }
    }
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      prev[r] = curr[r];
      curr[r] = next[r];
    }
    free_stage = cur;
    cur = nxt;
    nxt = nxt + 1 == S ? 0 : nxt + 1;
  }
  cp_async_wait<0>();  // nothing real is pending here (only empty groups); leave none behind
}

// ---- rung 8 (ours): 2.5d-tma --------------------------------------------------------------
// Why (ncu, 512^3 float, docs/performance.md): 2.5d-register and 2.5d-async are held by
// L2 traffic (L2 throughput 76-79 % of peak at 55-57 % of DRAM; the copy kernel runs 87 % at
// 81 %) and by instruction issue (54-74 instructions per point): their small tiles re-read 1.5
// to 1.9 times the minimum bytes from L2 (y halo rows of 2-4 row strips, one-element x edge
// loads, rows straddling sectors), and per-thread copy addressing costs instructions.
// This rung:
//   - stages TALL tiles: TX x TY cells (TY = BY*RY rows, 3D) plus a one-cell halo, so L2
//     reads are (TX+2)/TX * (TY+2)/TY of the minimum (1.25 for 512 x 8);
//   - copies each staged row with ONE bulk copy of the copy engine (cp.async.bulk), the rows
//     spread over the warps; completion is counted in bytes on one mbarrier per stage;
//   - stores whole 32-byte sectors: the thread-to-column map of each row is rotated so that
//     every warp's 32 stores fill aligned sectors (a plain row-major map straddles one more
//     sector per warp: 25 % more L2 store traffic in float), which is why every value,
//     also the stream neighbours, is read from the stages.
// Ring of S stages, one staged plane each: computing plane k reads the stages of planes k-1,
// k and k+1; once every thread is past plane k-1 (one block barrier per plane), the stage of
// plane k-2 is refilled with plane k+S-2, so S-3 planes are in flight while computing.
// Alignment: bulk copies need 16-byte aligned addresses and sizes. Each row copy covers the
// 16-byte aligned range around its TX+2 elements (at most 16 - sizeof(T) bytes more on either
// side: device buffers are rounded up to 256 bytes, kernels/cuda/cuda_array.cuh); the row
// pitch is congruent to the global row stride modulo V = 16 / sizeof(T) elements and each
// stage starts at its plane's global phase, so shared and global addresses agree modulo 16.
// Threads past the grid wait and read like the others but store nothing.
// Boundary rules (gr.active): the ghosts of u in memory are not used for those faces; once a
// stage has landed, a few threads overwrite its ghost cells with the rules (x, y ghosts of a
// centre plane; the ghost planes -1 and ns). This replaces the ghost-fill pass before the
// sweep, which costs about 15 % of a 512^3 float step (one DRAM sector per x-face row).
template <typename T, int DIM, int TX, int TY, int S>
struct TmaTile {
  static constexpr int V = 16 / int(sizeof(T));       // elements per 16 bytes
  static constexpr int W = TX + 2;                    // staged row: tile columns + halo
  static constexpr int ROWS = DIM == 3 ? TY + 2 : 1;  // staged rows
  static constexpr int PITCH_MAX = W + 3 * (V - 1);   // pitch >= W + 2(V-1), + congruence
  static constexpr int STAGE =                        // phase, rows, last row's overhang
      (2 * (V - 1) + (ROWS - 1) * PITCH_MAX + W + 2 * (V - 1) + V - 1) / V * V;
  static constexpr std::size_t RING_BYTES = std::size_t(S) * STAGE * sizeof(T);
  static constexpr std::size_t SMEM_BYTES = RING_BYTES + S * sizeof(std::uint64_t);
};

template <typename T, int DIM, int TX, int BY, int RY, int S, int MINB, int SRC>
__global__ void __launch_bounds__(TX* BY, MINB)
    stencil_tma_kernel(const T* __restrict__ u, T* __restrict__ out, SourceRef<T> f, StreamGeom g,
                       StencilCoeffs<T> c, int chunk, GhostRules<T> gr) {
  static_assert(DIM == 3 || (BY == 1 && RY == 1), "2D tiles are one row");
  static_assert(TX % 32 == 0, "warp 0 lies in the first row of threads");
  static_assert(S >= 4, "three stages are read while at least one is in flight");
  static_assert((TX & (TX - 1)) == 0, "the store mapping wraps columns modulo TX");
  constexpr int TY = DIM == 3 ? BY * RY : 1;
  using Tile = TmaTile<T, DIM, TX, TY, S>;
  constexpr int V = Tile::V, W = Tile::W, ROWS = Tile::ROWS, STAGE = Tile::STAGE;
  extern __shared__ __align__(16) unsigned char tma_smem[];
  const std::uint32_t ring_shared = shared_address(tma_smem);
  const std::uint32_t full0 = ring_shared + std::uint32_t(Tile::RING_BYTES);  // S mbarriers

  const int tx = threadIdx.x, ty = DIM == 3 ? int(threadIdx.y) : 0;
  const int lane = tx & 31;
  const int x0 = blockIdx.x * TX, y0 = DIM == 3 ? int(blockIdx.y) * TY : 0;
  const int ex = min(TX, g.nx - x0), ey = DIM == 3 ? min(TY, g.ny_plane - y0) : 1;
  const int k0 = blockIdx.z * chunk, k1 = min(k0 + chunk, g.ns);
  const int planes = k1 - k0 + 2;  // staged planes k0-1 .. k1 (k1 <= ns: a ghost plane at most)
  // Staged cell (-1, -1) of plane k0-1 (2D: cell -1 of row k0-1).
  const std::int64_t corner =
      g.origin + (x0 - 1) + (DIM == 3 ? g.sy * (y0 - 1) : 0) + g.ss * std::int64_t(k0 - 1);
  // Rows are copied with up to V-1 extra elements on either side: pitch >= W + 2(V-1).
  const CongruentStage<T, V> layout(u, corner, g.sy, g.ss, DIM == 3 ? W + 2 * (V - 1) : W,
                                    DIM == 3);
  const int pitch = layout.pitch;
  const auto phase = [&](int q) { return layout.phase(q); };

  // Staged plane q lives in stage q mod S (planes k0-1+q: the ring turns once every S planes).
  const auto stage = [](int q) { return q % S; };
  // Plane q is staged by the first NWI warps: warp w copies staged rows w, w + NWI, ... (lane
  // i: row w + NWI i), announcing its bytes with its own arrival (NWI arrivals per stage). A
  // bulk copy takes uniform operands, so one warp's copies issue one after another (an R2UR
  // loop over the lanes in the SASS): with all rows on warp 0, that warp falls behind the
  // others every plane, which matters for tall tiles (34 staged rows in the float default).
  constexpr int NW = TX * BY / 32, NWI = NW < ROWS ? NW : ROWS;
  static_assert(ROWS <= 32 * NWI, "each issuing lane copies one row");
  const int warp = (tx + TX * ty) >> 5;
  const bool producer = warp < NWI;
  const int rows_staged = DIM == 3 ? ey + 2 : 1;
  const std::uint32_t row_bytes = std::uint32_t(sizeof(T)) * std::uint32_t(ex + 2);
  const auto issue = [&](int q) {
    const int st = stage(q);
    const int j = warp + NWI * lane;  // staged row of this lane
    std::uint32_t bytes = 0, dst = 0;
    const T* src = nullptr;
    if (j < rows_staged) {
      const char* first =
          reinterpret_cast<const char*>(u + corner + g.ss * q + (DIM == 3 ? g.sy * j : 0));
      const std::uint32_t mis = std::uint32_t(reinterpret_cast<std::uintptr_t>(first)) & 15u;
      src = reinterpret_cast<const T*>(first - mis);
      dst = ring_shared +
            std::uint32_t(sizeof(T)) * std::uint32_t(st * STAGE + phase(q) + j * pitch) - mis;
      bytes = (mis + row_bytes + 15u) & ~15u;
    }
    const std::uint32_t total = __reduce_add_sync(0xffffffffu, bytes);
    const std::uint32_t bar = full0 + 8u * std::uint32_t(st);
    if (lane == 0) mbarrier_arrive_expect_tx(bar, total);
    __syncwarp();
    if (bytes) bulk_copy_to_shared(dst, src, bytes, bar);
  };
  if (tx == 0 && ty == 0) {
#pragma unroll
    for (int st = 0; st < S; ++st) mbarrier_init(full0 + 8u * st, NWI);
    mbarrier_init_fence();
  }
  // kSourceGenerated: the tile's plane factors ([row][column], the same in every plane), after
  // the stages and barriers; read like the stages, so a cell's source costs no global load.
  T* const factors = reinterpret_cast<T*>(tma_smem + Tile::SMEM_BYTES);
  if constexpr (SRC == kSourceGenerated) {
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      const int row = ty * RY + r;
      const bool in = tx < ex && (DIM == 3 ? row < ey : true);
      factors[row * TX + tx] =
          in ? __ldg(f.plane + (g.origin - g.ss + x0 + tx + (DIM == 3 ? g.sy * (y0 + row) : 0)))
             : T(0);
    }
  }
  __syncthreads();
  if (producer)
#pragma unroll 1
    for (int q = 0; q < S && q < planes; ++q) issue(q);

  // Aligned stores: in every row, the warps store whole 32-byte sectors. Row segment
  // [x0, x0 + TX) starts d = (-address) mod SEC elements before a sector boundary; thread tx
  // takes column (tx + d - 32) mod TX, so warp w >= 1 covers the aligned window
  // [x0 + d + 32(w-1), x0 + d + 32w) and warp 0 the head [x0, x0 + d) and the tail. The
  // column changes with the row and the plane, so every value comes from the stages (the
  // stage of plane k-1 stays readable while plane k is computed).
  constexpr int SEC = 32 / int(sizeof(T));
  const std::uint32_t oelem =
      std::uint32_t(reinterpret_cast<std::uintptr_t>(out) / sizeof(T)) +
      std::uint32_t(g.origin + x0 + (DIM == 3 ? g.sy * (y0 + ty * RY) : 0) + g.ss * k0);
  const std::uint32_t sy_mod = std::uint32_t(g.sy), ss_u = std::uint32_t(g.ss);
  const int pb = int(sizeof(T)) * pitch;
  const int row0 = int(sizeof(T)) * ((DIM == 3 ? (ty * RY + 1) * pitch : 0) + 1);
  const auto stage_base = [&](int q) {  // shared byte offset of this thread's first cell
    return int(sizeof(T)) * (stage(q) * STAGE + phase(q)) + row0;
  };
  const auto at = [&](int off) { return *reinterpret_cast<const T*>(tma_smem + off); };
  int rows_left = DIM == 3 ? ey - ty * RY : 1;  // rows of this thread inside the grid
  T* oplane = out + g.origin + x0 + (DIM == 3 ? g.sy * (y0 + ty * RY) : 0) + g.ss * k0;
  const int sy = DIM == 3 ? int(g.sy) : 0;  // row stride (fits: the launcher checks)

  // Boundary rules on the stages (gr.active != 0: ghosts of u in memory are not read; see
  // the comment above TmaTile). Ghost cells of the stage of plane q are read only while plane
  // q is computed (x and y neighbours of the centre stage; plane -1 / ns: stream neighbours).
  constexpr int SLO = DIM == 3 ? 4 : 2;
  const unsigned fix = gr.active
                           ? ((gr.active & 1u) && x0 == 0 ? 1u : 0u) |
                                 ((gr.active & 2u) && x0 + ex == g.nx ? 2u : 0u) |
                                 (DIM == 3 && (gr.active & 4u) && y0 == 0 ? 4u : 0u) |
                                 (DIM == 3 && (gr.active & 8u) && y0 + ey == g.ny_plane ? 8u : 0u) |
                                 ((gr.active >> SLO) & 1u && k0 == 0 ? 16u : 0u) |
                                 ((gr.active >> (SLO + 1)) & 1u && k1 == g.ns ? 32u : 0u)
                           : 0u;
  // A partial tile's threads past the grid read (and discard) the stage cells at column ex
  // and row ey, its x+ / y+ ghosts, while they compute: there the ghosts of plane q are fixed
  // two steps ahead (waiting for that plane early), elsewhere one step ahead. Either way no
  // thread reads a stage while it is fixed, and the next step's barrier publishes it.
  const bool late = ((fix & 2u) && ex < TX) || ((fix & 8u) && ey < TY);
  const int ahead = late ? 2 : 1;
  const auto wait_plane = [&](int q) {  // until staged plane q has landed
    mbarrier_wait_parity(full0 + 8u * std::uint32_t(stage(q)), std::uint32_t((q / S) & 1));
  };
  const auto cell = [&](int q, int col, int row) -> T& {  // staged cell of plane q
    return *reinterpret_cast<T*>(
        tma_smem +
        sizeof(T) * (stage(q) * STAGE + phase(q) + (DIM == 3 ? (row + 1) * pitch : 0) + col + 1));
  };
  const int lin = ty * TX + tx;
  const auto fix_inplane = [&](int q) {  // x and y ghosts of staged plane q
    if (lin < ey) {
      if (fix & 1u) cell(q, -1, lin) = ghost_rule(gr, 0, cell(q, 0, lin));
      if (fix & 2u) cell(q, ex, lin) = ghost_rule(gr, 1, cell(q, ex - 1, lin));
    }
    if (DIM == 3 && (fix & 12u))
      for (int col = lin; col < ex; col += TX * BY) {
        if (fix & 4u) cell(q, col, -1) = ghost_rule(gr, 2, cell(q, col, 0));
        if (fix & 8u) cell(q, col, ey) = ghost_rule(gr, 3, cell(q, col, ey - 1));
      }
  };
  const auto fix_plane = [&](int q, int src_q, int face) {  // ghost plane q from plane src_q
    for (int t = lin; t < ex * ey; t += TX * BY)
      cell(q, t % ex, t / ex) = ghost_rule(gr, face, cell(src_q, t % ex, t / ex));
  };

  // Planes q = 1 .. planes-2 are computed; plane planes-1 is the ghost plane ns when k1 == ns,
  // fixed at step planes-3 (0: here).
  wait_plane(0);
  if (fix) {
    for (int q = 1; q <= ahead && q <= planes - 2; ++q) {
      wait_plane(q);
      if (fix & 15u) fix_inplane(q);
    }
    if (fix & 16u) fix_plane(0, 1, SLO);  // plane -1 from plane 0
    if ((fix & 32u) && planes == 3) {
      wait_plane(2);
      fix_plane(2, 1, SLO + 1);  // plane ns from plane ns - 1
    }
  }
#pragma unroll 1
  for (int q = 1; q + 1 < planes; ++q) {
    __syncthreads();  // every thread is past plane q-1: the stage of plane q-2 is free
    if (producer && q >= 2 && q - 2 + S < planes) issue(q - 2 + S);
    wait_plane(q);
    wait_plane(q + 1);
    if (fix) {
      const int p = q + ahead;  // nobody reads its stage during this step
      if ((fix & 15u) && p <= planes - 2) {
        if (late) wait_plane(p);
        fix_inplane(p);
      }
      if ((fix & 32u) && q == planes - 3) {
        wait_plane(q + 2);
        fix_plane(q + 2, q + 1, SLO + 1);  // plane ns from plane ns - 1
      }
    }
    const int bp = stage_base(q - 1), bc = stage_base(q), bn = stage_base(q + 1);
    const std::uint32_t e = oelem + std::uint32_t(q - 1) * ss_u;  // column x0, row 0, plane q-1
    T column = 0;  // kSourceGenerated: the stream factor of this plane
    if constexpr (SRC == kSourceGenerated) column = __ldg(f.column + (k0 + q - 1));
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      const int d = int((0u - (e + std::uint32_t(r) * sy_mod)) & std::uint32_t(SEC - 1));
      const int col = (tx + d + TX - 32) & (TX - 1);
      const int o = r * pb + int(sizeof(T)) * col;
      const bool inside = col < ex && r < rows_left;  // f is read at inside cells only
      T fv = 0;
      if constexpr (SRC == kSourceStaged) {
        if (inside) fv = __ldg(oplane - out + f.field + r * sy + col);
      } else if constexpr (SRC == kSourceGenerated) {
        if (inside)
          fv = add_rn(f.offset, mul_rn(f.scale, mul_rn(factors[(ty * RY + r) * TX + col], column)));
      }
      const T v = point_finish<DIM>(
          c,
          point_part<DIM, SRC != kSourceNone>(
              c, at(bc + o), at(bc + o - int(sizeof(T))), at(bc + o + int(sizeof(T))),
              DIM == 3 ? at(bc + o - pb) : T(0), DIM == 3 ? at(bc + o + pb) : T(0), at(bp + o), fv),
          at(bn + o));
      if (inside) oplane[r * sy + col] = v;
    }
    oplane += g.ss;
  }
}

}  // namespace heatsolve::cuda
