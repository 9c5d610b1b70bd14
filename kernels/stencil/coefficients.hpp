// What one stencil sweep computes, independent of backend:
//   out = center*u + cx*(u[x-1]+u[x+1]) + cy*(u[y-1]+u[y+1]) + cz*(u[z-1]+u[z+1]) + cs*f
// Heat (forward Euler) and Jacobi are both this update with different coefficients.
#pragma once

#include <array>

#include "core/boundary.hpp"
#include "core/grid.hpp"

namespace heatsolve {

template <typename T>
struct StencilCoeffs {
  T center = 0;
  T cx = 0, cy = 0, cz = 0;  // cz is ignored in 2D
  T source = 0;              // multiplies f; ignored when f is null
};

// The sweeps of one fused pass (temporal blocking), each with its own coefficients: K equal
// heat steps, or the weights of a Chebyshev smoother's sweeps.
template <typename T>
struct PassCoeffs {
  static constexpr int kMaxSteps = 8;  // the largest compiled k (temporal_policies.hpp)
  StencilCoeffs<T> step[kMaxSteps];

  static PassCoeffs uniform(const StencilCoeffs<T>& c) {
    PassCoeffs p;
    for (StencilCoeffs<T>& s : p.step) s = c;
    return p;
  }
};

// Forward-Euler heat update: u' = u + dt*(alpha*lap u + f).
template <typename T>
StencilCoeffs<T> heat_coeffs(const GridDesc& g, double alpha, double dt) {
  const double ax = alpha * dt / (g.hx * g.hx);
  const double ay = alpha * dt / (g.hy * g.hy);
  const double az = g.dims == 3 ? alpha * dt / (g.hz * g.hz) : 0.0;
  StencilCoeffs<T> c;
  c.center = static_cast<T>(1.0 - 2.0 * (ax + ay + az));
  c.cx = static_cast<T>(ax);
  c.cy = static_cast<T>(ay);
  c.cz = static_cast<T>(az);
  c.source = static_cast<T>(dt);
  return c;
}

// Jacobi sweep for -lap u = f: u' = (sum_d (u_d- + u_d+)/h_d^2 + f) / sum_d 2/h_d^2.
template <typename T>
StencilCoeffs<T> jacobi_coeffs(const GridDesc& g) {
  const double ix = 1.0 / (g.hx * g.hx), iy = 1.0 / (g.hy * g.hy);
  const double iz = g.dims == 3 ? 1.0 / (g.hz * g.hz) : 0.0;
  const double diag = 2.0 * (ix + iy + iz);
  StencilCoeffs<T> c;
  c.center = 0;
  c.cx = static_cast<T>(ix / diag);
  c.cy = static_cast<T>(iy / diag);
  c.cz = static_cast<T>(iz / diag);
  c.source = static_cast<T>(1.0 / diag);
  return c;
}

}  // namespace heatsolve
