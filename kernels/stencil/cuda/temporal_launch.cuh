// Host launchers of the temporal-blocking kernels (kernels/stencil/cuda/temporal_kernels.cuh): a
// pass of K fused heat steps, K in temporal_steps<T>(dims), for a compiled tile shape.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "core/grid.hpp"
#include "kernels/stencil/coefficients.hpp"
#include "kernels/stencil/source.hpp"

namespace heatsolve::cuda {

// The kernel designs (kernels/stencil/cuda/temporal_kernels.cuh): stage rings rotated every plane,
// or partial sums with nothing rotated, their input planes prefetched into registers or staged in
// shared memory by cp.async (docs/kernels.md, "temporal").
enum class TemporalDesign { Rings, PartialSums, StagedPartialSums };

// A compiled shape: k sub-steps per pass; block 32 x by threads; ry rows and vx columns per
// thread; the design; chunk = output planes per block along the stream axis (0 = chosen from
// the grid).
struct TemporalShape {
  int k = 0, by = 0, ry = 1, vx = 1, chunk = 0;
  TemporalDesign design = TemporalDesign::Rings;
  // Benchmark only (both partial-sums designs): the pass's loads, edge rows, barriers and stores
  // without the arithmetic, so that `heatsolve bench` shows what the memory traffic alone costs.
  // Its output is not a heat step.
  bool memory_only = false;
  // "k4/32x8/ry4/vx2", "k2/32x4/ry4/vx2/partial[/memory]", "k3/32x8/ry4/vx2/staged"
  std::string str() const;
};

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

}  // namespace heatsolve::cuda
