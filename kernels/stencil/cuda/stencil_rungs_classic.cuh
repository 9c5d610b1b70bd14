// The stencil ladder's classic rungs (stencil_kernels.cuh): 1 naive, 2 and 3 shared-memory
// tiles, 4 and 5 2.5D streaming.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/stencil/cuda/ghost_rules.cuh"
#include "kernels/stencil/cuda/stencil_point.cuh"

namespace heatsolve::cuda {

// Threads of stencil_sweeps_block_kernel's one block.
inline constexpr int kSweepBlockThreads = 1024;

// ---- rung 1: naive ------------------------------------------------------------------------
// RULES: the Dirichlet/Neumann faces of `rules` (stencil_applies_rules) are applied here, from
// the cell itself, instead of read from u's ghosts (apply_boundary's values, so its bits): a
// sweep of a small grid (multigrid's coarse levels) is then one launch, not a ghost fill and a
// sweep.
// The naive update of interior cell (i, j, k): out = stencil(u) there.
template <typename T, int DIM, bool RULES>
__device__ __forceinline__ void naive_point(const T* u, T* out, const SourceRef<T>& f,
                                            const GridDesc& g, const StencilCoeffs<T>& c,
                                            const GhostRules<T>& rules, int i, int j, int k) {
  const std::int64_t sy = g.stride_y(), sz = DIM == 3 ? g.stride_z() : 0;
  const std::int64_t idx = g.index(i, j, k);
  if constexpr (!RULES) {  // the ladder's first rung as it always was (its loads in this order)
    T zm = 0, zp = 0;
    if constexpr (DIM == 3) {
      zm = u[idx - sz];
      zp = u[idx + sz];
    }
    out[idx] = stencil_point<DIM>(c, u[idx], u[idx - 1], u[idx + 1], u[idx - sy], u[idx + sy], zm,
                                  zp, f, idx, j, k);
  } else {
    const T uc = u[idx];
    // The neighbour at idx + offset, across `face` where the cell is on it.
    const auto at = [&](std::int64_t offset, int face, bool on_face) {
      if (on_face && ((rules.active >> face) & 1u)) return ghost_rule(rules, face, uc);
      return u[idx + offset];
    };
    T zm = 0, zp = 0;
    if constexpr (DIM == 3) {
      zm = at(-sz, 4, k == 0);
      zp = at(sz, 5, k == g.nz - 1);
    }
    out[idx] =
        stencil_point<DIM>(c, uc, at(-1, 0, i == 0), at(1, 1, i == g.nx - 1), at(-sy, 2, j == 0),
                           at(sy, 3, j == g.ny - 1), zm, zp, f, idx, j, k);
  }
}

template <typename T, int DIM, int BX, int BY, int BZ, bool RULES>
__global__ void __launch_bounds__(BX* BY* BZ)
    stencil_naive_kernel(const T* __restrict__ u, T* __restrict__ out, SourceRef<T> f, GridDesc g,
                         StencilCoeffs<T> c, GhostRules<T> rules) {
  const int i = blockIdx.x * BX + threadIdx.x;
  const int j = blockIdx.y * BY + threadIdx.y;
  const int k = DIM == 3 ? int(blockIdx.z) * BZ + int(threadIdx.z) : 0;
  if (i >= g.nx || j >= g.ny || (DIM == 3 && k >= g.nz)) return;
  naive_point<T, DIM, RULES>(u, out, f, g, c, rules, i, j, k);
}

// Sweeps c.step[0], ..., c.step[n - 1] of a grid small enough for one block (multigrid's
// smallest levels, where a sweep launched alone is all launch latency): the naive kernel's
// points with the rules inside, alternating a -> b -> a ..., the block's threads strided over
// the interior and synchronised between sweeps (a block sees its own global writes after
// __syncthreads). The same bits as n naive launches.
template <typename T, int DIM>
__global__ void __launch_bounds__(kSweepBlockThreads)
    stencil_sweeps_block_kernel(T* a, T* b, SourceRef<T> f, GridDesc g, PassCoeffs<T> c, int n,
                                GhostRules<T> rules) {
  const int plane = g.nx * g.ny, cells = DIM == 3 ? plane * g.nz : plane;
  for (int s = 0; s < n; ++s) {
    const T* u = s % 2 ? b : a;
    T* out = s % 2 ? a : b;
    for (int t = threadIdx.x; t < cells; t += blockDim.x) {
      const int k = DIM == 3 ? t / plane : 0, r = t - k * plane;
      naive_point<T, DIM, true>(u, out, f, g, c.step[s], rules, r % g.nx, r / g.nx, k);
    }
    __syncthreads();
  }
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

}  // namespace heatsolve::cuda
