// Multigrid grid transfers on device memory (contract: Backend::restrict_average and
// Backend::prolong_add; reference: kernels/multigrid/cpu/transfer_cpu.hpp, same weights, same
// order of the double sums, so the results match the CPU bit for bit). Backend::dot runs on
// the reduction ladder's modern rung (dot_interior in kernels/reduction/cuda/reduction.cuh).
//
// Plain C++ header (the host compiler includes it too); the kernels live in transfer.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>

#include "core/grid.hpp"
#include "core/multigrid.hpp"
#include "kernels/multigrid/interpolation.hpp"
#include "kernels/stencil/coefficients.hpp"
#include "kernels/stencil/source.hpp"

namespace heatsolve::cuda {

// coarse = mean of each coarse cell's children (interior cells of gc). ratio[a] is 1 or 2 per
// axis (ratio[2] is ignored in 2D) and gf.n = ratio * gc.n on every active axis
// (std::invalid_argument otherwise). Asynchronous on `stream`.
template <typename T>
void launch_restrict_average(const T* fine, const GridDesc& gf, T* coarse, const GridDesc& gc,
                             const std::array<int, 3>& ratio, cudaStream_t stream);

template <typename T>
struct AffineGhostRules;  // kernels/stencil/cuda/ghost_rules.cuh

// coarse = mean of each coarse cell's children of stencil(u, f, c) (Backend::stencil_restrict:
// a residual restricted without storing it; same checks). Faces with a rule in `rules` (those
// in rules.active) take it applied to the face cell, apply_boundary's value: u's ghosts there
// are not read; other faces read u's ghosts (fill them first). No periodic faces (fill them and
// pass rules without them; std::invalid_argument). 3D grids halved on every axis with many
// coarse columns need u aligned to two values (an allocation's field is). The bits of the
// boundary fill, the stencil sweep and launch_restrict_average. Asynchronous on `stream`.
// [kb, ke): the coarse planes stored (3D; ke < 0: to the last), each with the whole call's
// bits.
template <typename T>
void launch_stencil_restrict(const T* u, const SourceRef<T>& f, const GridDesc& gf,
                             const StencilCoeffs<T>& c, const AffineGhostRules<T>& rules, T* coarse,
                             const GridDesc& gc, const std::array<int, 3>& ratio,
                             cudaStream_t stream, int kb = 0, int ke = -1);

// fine += P coarse over the interior cells of gf (same checks). Linear reads coarse's ghost
// cells next to the interior: fill them first. Asynchronous on `stream`.
template <typename T>
void launch_prolong_add(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                        const std::array<int, 3>& ratio, Prolongation p, cudaStream_t stream);

// Bounds of launch_interpolate's cubic form, three one-axis passes over chunks of the coarse
// grid with double intermediates in a device scratch (grow-only, one per host thread and
// device): at most `planes` coarse planes per chunk, and a scratch of at most `doubles` values
// where that allows (fewer planes, then fewer coarse rows, down to one of each). The defaults
// keep 64 planes up to 768^3 fine cells; tests pass small bounds to cross chunk borders.
struct InterpolateChunking {
  int planes = mg::kCubicChunkPlanes;
  std::size_t doubles = mg::kCubicScratchCap;  // 512 MiB
};

// fine = P coarse over the interior cells of gf (Backend::interpolate; same checks). Reads
// coarse's face ghosts: fill them first. Asynchronous on `stream`.
template <typename T>
void launch_interpolate(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                        const std::array<int, 3>& ratio, Prolongation p, cudaStream_t stream,
                        const InterpolateChunking& chunking = {});

}  // namespace heatsolve::cuda
