// Host launchers of the temporal-blocking kernels (kernels/stencil/cuda/temporal_kernels.cuh): a
// pass of K fused heat steps, K in temporal_steps<T>(dims), for a compiled tile shape
// (kernels/stencil/temporal_policies.hpp).
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "core/grid.hpp"
#include "kernels/stencil/coefficients.hpp"
#include "kernels/stencil/source.hpp"
#include "kernels/stencil/temporal_policies.hpp"

namespace heatsolve::cuda {

class ReductionWorkspace;  // kernels/reduction/cuda/reduction.cuh

// Compiled shapes for `dims` and T; for each k the first listed is its default.
template <typename T>
std::vector<TemporalShape> temporal_shapes(int dims);
// The k (sub-steps per pass) compiled for `dims` and T, largest first.
template <typename T>
const std::vector<int>& temporal_steps(int dims);
// The default shape for k sub-steps (throws BackendError when k is not compiled).
template <typename T>
TemporalShape temporal_default_shape(int dims, int k);

// True when a fused pass can run with these faces: Dirichlet and Neumann only (Periodic
// needs the opposite side of the domain, Exchange another rank's values, at every sub-step).
bool temporal_supported(const GridDesc& g, const BoundaryFaces& bc);

// Planes [lo, hi) of the stream axis (z in 3D, y in 2D); hi < 0: to the last plane.
struct PlaneRange {
  int lo = 0, hi = -1;
};

// One pass: out = shape.k heat steps of u (stencil + source f, stored or generated, ghost rules of
// `bc` between the sub-steps). Ghost cells of u are not read; interior cells of out in the
// stream-axis planes `planes` are written (with the bits of a full pass: the range only selects
// chunks), the other planes and out's ghosts are not. Asynchronous on `stream`.
template <typename T>
void launch_temporal(const TemporalShape& shape, const T* u, T* out, const SourceRef<T>& f,
                     const GridDesc& g, const StencilCoeffs<T>& c, const BoundaryFaces& bc,
                     cudaStream_t stream, PlaneRange planes = {});
// The same with coefficients per sub-step (c.step[s] for sub-step s of the pass: a Chebyshev
// smoother's weighted sweeps); with equal ones, the pass above.
template <typename T>
void launch_temporal(const TemporalShape& shape, const T* u, T* out, const SourceRef<T>& f,
                     const GridDesc& g, const PassCoeffs<T>& c, const BoundaryFaces& bc,
                     cudaStream_t stream, PlaneRange planes = {});

// The whole pass above that also returns the sum over the interior (the stream-axis planes
// `measured` of it) of stencil(u, f, rc)^2 in
// double (a residual of its input: each value the bits a residual sweep stores), measured in
// its first sub-step, so that the input is read once for both; the per-warp partial sums
// (in `ws`) are added in a fixed order. Synchronises the stream. Shapes for which
// temporal_norm_compiled() is true (3D rings defaults, k <= 4); BackendError otherwise.
template <typename T>
bool temporal_norm_compiled(const TemporalShape& shape, int dims);
// Loads the instances of launch_temporal_norm and launch_temporal_prolonged (lazy module loading
// loads a kernel at its first launch otherwise: inside a solve's first cycle).
template <typename T>
void load_temporal_multigrid_kernels();
template <typename T>
double launch_temporal_norm(const TemporalShape& shape, const T* u, T* out, const SourceRef<T>& f,
                            const GridDesc& g, const PassCoeffs<T>& c, const BoundaryFaces& bc,
                            const StencilCoeffs<T>& rc, ReductionWorkspace& ws, cudaStream_t stream,
                            PlaneRange measured = {});

// One pass as launch_temporal's (all planes) whose input is u + P coarse: the linear prolongation
// of the coarse correction `coarse` (on gc, half of g's rows and columns, 3D; its face ghosts
// filled) added to each plane as it enters the pass, as prolong_add adds it (the same bits as
// prolong_add followed by the pass) without storing the sum; u is left as it was. g's plane
// `offset` is the first child of gc's plane 0 (a deep-halo pass: its margin planes are the
// children of the coarse field's margins, whose values and ghosts are then filled). Shapes for
// which temporal_prolong_compiled() is true (the 3D rings row a multigrid smoother runs, with
// its blocks per SM named); BackendError otherwise.
template <typename T>
bool temporal_prolong_compiled(const TemporalShape& shape, int dims);
// Whether g and gc are grids launch_temporal_prolonged takes with `offset`: 3D, gc half of g's
// rows and columns, and the children of gc's planes inside g's from plane `offset` on.
inline bool prolonged_grids_fit(const GridDesc& g, const GridDesc& gc, int offset) {
  return g.dims == 3 && gc.dims == 3 && g.nx == 2 * gc.nx && g.ny == 2 * gc.ny && offset >= 0 &&
         offset + 2 * gc.nz <= g.nz;
}
template <typename T>
void launch_temporal_prolonged(const TemporalShape& shape, const T* coarse, const GridDesc& gc,
                               const T* u, T* out, const SourceRef<T>& f, const GridDesc& g,
                               const PassCoeffs<T>& c, const BoundaryFaces& bc, int offset,
                               cudaStream_t stream, PlaneRange planes = {});

}  // namespace heatsolve::cuda
