// The face rules of apply_boundary in one form for every CUDA kernel: the ghost-fill kernel
// (cuda_backend.cu), 2.5d-tma's rules on its staged tiles and the temporal kernel's sub-steps
// (stencil_kernels.cuh, temporal_kernels.cuh).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>

#include "core/grid.hpp"
#include "kernels/stencil/coefficients.hpp"

namespace heatsolve::cuda {

// Per face (x-, x+, y-, y+, z-, z+; 2D: x-, x+, y-, y+): ghost = neumann ? inner + b : b - inner
// with b = T(2 v) (Dirichlet) or T(v h) (Neumann): the operations and roundings of the CPU's
// ghost fill. Periodic faces copy the opposite interior cell; faces in neither mask
// (Exchange) keep the ghosts in memory.
template <typename T>
struct GhostRules {
  T b[6];
  unsigned neumann;   // bit f set: face f is Neumann
  unsigned active;    // bit f set: face f has a rule (Dirichlet or Neumann)
  unsigned periodic;  // bit f set: face f is Periodic
};

template <typename T>
__device__ __forceinline__ T ghost_rule(const GhostRules<T>& r, int face, T inner) {
  return ((r.neumann >> face) & 1u) ? inner + r.b[face] : r.b[face] - inner;
}

// The rules of bc (grid face order; h of the face's axis).
template <typename T>
GhostRules<T> ghost_rules(const GridDesc& g, const BoundaryFaces& bc) {
  GhostRules<T> r{};
  const double h[6] = {g.hx, g.hx, g.hy, g.hy, g.hz, g.hz};
  for (int f = 0; f < 2 * g.dims; ++f) {
    switch (bc[f].type) {
      case BoundaryType::Neumann:
        r.neumann |= 1u << f;
        r.active |= 1u << f;
        r.b[f] = static_cast<T>(bc[f].value * h[f]);  // a correctly rounded double product
        break;
      case BoundaryType::Dirichlet:
        r.active |= 1u << f;
        r.b[f] = static_cast<T>(2 * bc[f].value);
        break;
      case BoundaryType::Periodic:
        r.periodic |= 1u << f;
        break;
      case BoundaryType::Exchange:
        break;
    }
  }
  return r;
}

}  // namespace heatsolve::cuda

namespace heatsolve::cuda {

// The face rules of the ghost-fill kernel (apply_boundary), which also knows the rules the
// fused kernels above do not take (their registers are tight: a per-face factor would cost
// occupancy): ghost = a inner + b rounded once (fma). Dirichlet a = -1, b = T(2 v) and Neumann
// a = 1, b = T(v h) give GhostRules' bits; Robin a = T(coeff), b = T(value); Fixed a = 0,
// b = T(value).
template <typename T>
struct AffineGhostRules {
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
__device__ __forceinline__ T ghost_rule(const AffineGhostRules<T>& r, int face, T inner) {
  return ghost_fma(r.a[face], inner, r.b[face]);
}

template <typename T>
AffineGhostRules<T> affine_ghost_rules(const GridDesc& g, const BoundaryFaces& bc) {
  AffineGhostRules<T> r{};
  const double h[6] = {g.hx, g.hx, g.hy, g.hy, g.hz, g.hz};
  for (int f = 0; f < 2 * g.dims; ++f) {
    switch (bc[f].type) {
      case BoundaryType::Neumann:
        r.active |= 1u << f;
        r.a[f] = T(1);
        r.b[f] = static_cast<T>(bc[f].value * h[f]);
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
        throw std::logic_error("apply_boundary: a deck face type reached the kernels unlowered");
    }
  }
  return r;
}

// Whether the fused kernels' rules (GhostRules: Dirichlet, Neumann) cover every face of bc that
// has a rule.
inline bool fused_rules_cover(const GridDesc& g, const BoundaryFaces& bc) {
  for (int f = 0; f < 2 * g.dims; ++f)
    if (bc[f].type == BoundaryType::Robin || bc[f].type == BoundaryType::Fixed) return false;
  return true;
}

}  // namespace heatsolve::cuda
