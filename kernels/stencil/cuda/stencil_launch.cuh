// Host launchers of the CUDA stencil ladder: one entry point that dispatches a variant and a
// compiled block shape, a row of kStencilPolicies (core/stencil_policies.hpp);
// kernels/stencil/cuda/stencil_kernels.cuh holds the kernels.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/grid.hpp"
#include "core/stencil_policies.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/stencil/coefficients.hpp"
#include "kernels/stencil/source.hpp"

namespace heatsolve::cuda {

// Resolves BackendOptions.block ({0,0,0} = default) to a compiled shape; throws BackendError
// listing the compiled shapes when none matches.
template <typename T>
StencilShape resolve_shape(StencilVariant v, int dims, const std::array<int, 3>& block);

// True when variant v can apply the boundary rules of bc itself (naive and 2.5d-tma; Dirichlet
// and Neumann faces, no Periodic, Robin or Fixed one).
bool stencil_applies_rules(StencilVariant v, const BoundaryFaces& bc);

// One sweep out = stencil(u) (+ source*f; f stored or generated, SourceRef) over the interior,
// asynchronous on `stream`. With `rules` (where stencil_applies_rules), the kernel applies the
// Dirichlet/Neumann rules of those faces itself and does not read u's ghosts there: the result
// is bitwise that of apply_boundary(u, rules) followed by the plain sweep.
template <typename T>
void launch_stencil(StencilVariant v, const StencilShape& shape, const T* u, T* out,
                    const SourceRef<T>& f, const GridDesc& g, const StencilCoeffs<T>& c,
                    cudaStream_t stream, const BoundaryFaces* rules = nullptr);

// apply_boundary on the device (Backend::apply_boundary): every face's ghosts in one launch,
// Exchange faces left as they are.
template <typename T>
void launch_apply_boundary(T* u, const GridDesc& g, const BoundaryFaces& bc, cudaStream_t stream);

// Whether sweeps of g with faces bc may run in one block (launch_sweeps_in_block): at most
// max_cells interior cells and only Dirichlet and Neumann faces, whose ghosts the sweeps apply
// themselves (no exchange or periodic copy between sweeps).
bool sweeps_fit_block(const GridDesc& g, const BoundaryFaces& bc, long long max_cells);

// Backend::stencil_sweeps on a grid where sweeps_fit_block: c[0], ..., c[n-1] in turn, each
// stencil_with_boundary's bits, one single-block launch per PassCoeffs::kMaxSteps sweeps (a
// small multigrid level's smoothing: one launch instead of n); *cur holds the result on return.
template <typename T>
void launch_sweeps_in_block(T** cur, T** other, const SourceRef<T>& f, const GridDesc& g,
                            const StencilCoeffs<T>* c, int n, const BoundaryFaces& bc,
                            cudaStream_t stream);

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
