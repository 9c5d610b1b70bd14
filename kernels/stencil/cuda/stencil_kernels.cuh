// The CUDA stencil ladder (docs/kernels.md): one kernel template per rung, templated on the
// precision, the dimension and the block/tile shape, all sharing one point update.
//
// Layout (core/grid.hpp): padded arrays, one ghost cell per side of every active
// dimension, x fastest. Kernels write interior cells of `out` only; the ghosts of `u` must be
// filled (apply_boundary) before a sweep. `f` (source) has the layout of `u`, may be null.
//
// The streaming rungs walk a "stream" axis (z in 3D, y in 2D) through a chunk of planes per
// block; the plane is x-y in 3D and a single x row in 2D.
//
// One header per group of rungs, all sharing stencil_point.cuh:
//   stencil_rungs_classic.cuh   rungs 1-5: naive, shared (2 and 3), 2.5d, 2.5d-single-slice
//   stencil_rungs_register.cuh  rung 6: 2.5d-register
//   stencil_rungs_staged.cuh    rungs 7 and 8: 2.5d-async, 2.5d-tma
#pragma once

#include "kernels/stencil/cuda/stencil_point.cuh"
#include "kernels/stencil/cuda/stencil_rungs_classic.cuh"
#include "kernels/stencil/cuda/stencil_rungs_register.cuh"
#include "kernels/stencil/cuda/stencil_rungs_staged.cuh"
