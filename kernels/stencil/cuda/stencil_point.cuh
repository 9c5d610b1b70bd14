// The stencil ladder's shared part (stencil_kernels.cuh): the point update every kernel uses,
// with every rounding explicit, and the streaming rungs' geometry.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/grid.hpp"
#include "kernels/cuda/rounding.cuh"
#include "kernels/stencil/coefficients.hpp"
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

}  // namespace heatsolve::cuda
