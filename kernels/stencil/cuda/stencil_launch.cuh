// Host launchers of the CUDA stencil ladder: one entry point that dispatches a variant and a
// compiled block shape (kernels/stencil/cuda/stencil_kernels.cuh holds the kernels).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/grid.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/stencil/coefficients.hpp"
#include "kernels/stencil/source.hpp"

namespace heatsolve::cuda {

// A compiled tile shape. bx, by, bz: thread-block shape (streaming rungs: bz = planes per
// block, 0 = chosen from the grid; the block itself is bx x by). ry: rows per thread
// (2.5d-register and 2.5d-async in 3D; 1 elsewhere). pd: planes prefetched ahead
// (2.5d-register; 0 elsewhere). vx: columns per thread (2.5d-register: 2 = vector
// loads/stores; 1 elsewhere); mb: minimum resident blocks per SM in __launch_bounds__ (a
// register cap; 0 = none). st: stages of the shared-memory ring (2.5d-async; 0 elsewhere);
// cb: bytes per cp.async where both addresses allow it (2.5d-async: 4, 8, 16; 0 elsewhere).
struct StencilShape {
  int bx = 0, by = 0, bz = 0, ry = 1, pd = 0, vx = 1, mb = 0, st = 0, cb = 0;
  std::string str() const;  // "32x4x4", "64x4x0/ry4/pd2", "64x4x0/ry2/mb8/st8/cb16"
};

// Shapes compiled for a variant in `dims` dimensions and precision T; the first is the default.
template <typename T>
std::vector<StencilShape> compiled_shapes(StencilVariant v, int dims);

// Resolves BackendOptions.block ({0,0,0} = default) to a compiled shape; throws BackendError
// listing the compiled shapes when none matches.
template <typename T>
StencilShape resolve_shape(StencilVariant v, int dims, const std::array<int, 3>& block);

// True for the rungs that stream along the last axis (StencilShape.bz = planes per block).
bool is_streaming(StencilVariant v);

// True when variant v can apply the boundary rules of bc itself (2.5d-tma, no Periodic face).
bool stencil_applies_rules(StencilVariant v, const BoundaryFaces& bc);

// One sweep out = stencil(u) (+ source*f; f stored or generated, SourceRef) over the interior,
// asynchronous on `stream`. With `rules` (where stencil_applies_rules), the kernel applies the
// Dirichlet/Neumann rules of those faces itself and does not read u's ghosts there: the result
// is bitwise that of apply_boundary(u, rules) followed by the plain sweep.
template <typename T>
void launch_stencil(StencilVariant v, const StencilShape& shape, const T* u, T* out,
                    const SourceRef<T>& f, const GridDesc& g, const StencilCoeffs<T>& c,
                    cudaStream_t stream, const BoundaryFaces* rules = nullptr);

// Multiprocessor count of the current device (cached per device).
int current_sm_count();

// Resident blocks per SM of a kernel instance on the current device (cached per kernel and
// device); the first call also raises the instance's dynamic shared memory limit (needed
// above 48 KB). Throws BackendError when not even one block fits.
int resident_blocks_per_sm(const void* kernel, int threads, std::size_t smem);

// Kernels whose threads own column pairs (VX = 2: 2.5d-register, temporal partial sums): 1
// when every pair that starts at an odd interior column is one aligned 8 / 16-byte vector
// (so pairs at even columns become aligned by starting the tiles one cell early), else 0.
// That needs nx even (even row stride, odd interior offset, so interior cell x sits at an
// even element index when x is odd) and buffers that start on a vector boundary (cudaMalloc's
// do).
template <typename T>
int pair_vector_shift(const GridDesc& g, const T* u, const T* out) {
  const auto aligned = [](const T* p) {
    return reinterpret_cast<std::uintptr_t>(p) % (2 * sizeof(T)) == 0;
  };
  return g.nx % 2 == 0 && g.interior_offset() % 2 == 1 && aligned(u) && aligned(out) ? 1 : 0;
}

}  // namespace heatsolve::cuda
