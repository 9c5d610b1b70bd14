// The face rules of apply_boundary in one form for every CUDA kernel: the ghost-fill kernel
// (cuda_backend.cu), 2.5d-tma's rules on its staged tiles and the temporal kernel's sub-steps
// (stencil_kernels.cuh, temporal_kernels.cuh).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>

#include "core/grid.hpp"
#include "kernels/stencil/coefficients.hpp"

namespace heatsolve::cuda {

// Per face (x-, x+, y-, y+, z-, z+; 2D: x-, x+, y-, y+) an affine rule ghost = a inner + b,
// rounded once (fma): Dirichlet a = -1, b = T(2 v) (b - inner); Neumann a = 1, b = T(v h)
// (inner + b); Robin a = T(coeff), b = T(value); Fixed a = 0, b = T(value). For Dirichlet and
// Neumann these are the operations and roundings of the CPU's ghost fill. Periodic faces copy
// the opposite interior cell; faces in neither mask (Exchange) keep the ghosts in memory.
template <typename T>
struct GhostRules {
  T a[6], b[6];
  unsigned active;    // bit f set: face f has a rule
  unsigned periodic;  // bit f set: face f is Periodic
};

__device__ __forceinline__ float ghost_fma(float a, float x, float b) {
  return __fmaf_rn(a, x, b);
}
__device__ __forceinline__ double ghost_fma(double a, double x, double b) {
  return __fma_rn(a, x, b);
}

template <typename T>
__device__ __forceinline__ T ghost_rule(const GhostRules<T>& r, int face, T inner) {
  return ghost_fma(r.a[face], inner, r.b[face]);
}

// The rules of bc (grid face order; h of the face's axis). Convective and HeatFlux are the
// deck's conditions, which the solver lowers to these rules first.
template <typename T>
GhostRules<T> ghost_rules(const GridDesc& g, const BoundaryFaces& bc) {
  GhostRules<T> r{};
  const double h[6] = {g.hx, g.hx, g.hy, g.hy, g.hz, g.hz};
  for (int f = 0; f < 2 * g.dims; ++f) {
    switch (bc[f].type) {
      case BoundaryType::Neumann:
        r.active |= 1u << f;
        r.a[f] = T(1);
        r.b[f] = static_cast<T>(bc[f].value * h[f]);  // a correctly rounded double product
        break;
      case BoundaryType::Dirichlet:
        r.active |= 1u << f;
        r.a[f] = T(-1);
        r.b[f] = static_cast<T>(2 * bc[f].value);
        break;
      case BoundaryType::Robin:
        r.active |= 1u << f;
        r.a[f] = static_cast<T>(bc[f].coeff);
        r.b[f] = static_cast<T>(bc[f].value);
        break;
      case BoundaryType::Fixed:
        r.active |= 1u << f;
        r.a[f] = T(0);
        r.b[f] = static_cast<T>(bc[f].value);
        break;
      case BoundaryType::Periodic:
        r.periodic |= 1u << f;
        break;
      case BoundaryType::Exchange:
        break;
      case BoundaryType::Convective:
      case BoundaryType::HeatFlux:
        throw std::logic_error("ghost_rules: a deck face type reached the kernels unlowered");
    }
  }
  return r;
}

}  // namespace heatsolve::cuda
