// Shared by the GPU sweep tests (test_cuda_temporal.cpp, test_cuda_block_sweeps.cpp): the
// face cases, random fields, a bitwise comparison of interiors, and Chebyshev-like weighted
// Jacobi sweeps.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/boundary.hpp"
#include "core/grid.hpp"
#include "kernels/stencil/coefficients.hpp"
#include "tests/kernels/random_field.hpp"

namespace heatsolve::sweep_test {

inline bool quick() {
  return std::getenv("HEATSOLVE_GPU_TEST_QUICK") != nullptr;
}

struct Case {
  std::string name;
  BoundaryFaces faces;
};

// Every face set: uniform Dirichlet, uniform Neumann, all periodic, a mix of Dirichlet and
// Neumann, and that mix with periodic y faces.
inline std::vector<Case> all_cases() {
  using B = BoundaryType;
  BoundaryFaces d, n, m, p, mp;
  for (int f = 0; f < 6; ++f) {
    d[f] = {B::Dirichlet, 0.25 + 0.5 * f};
    n[f] = {B::Neumann, -0.75 + 0.3 * f};
    p[f] = {B::Periodic, 0.0};
  }
  m[0] = {B::Dirichlet, 1.5};
  m[1] = {B::Neumann, -2.0};
  m[2] = {B::Neumann, 0.7};
  m[3] = {B::Dirichlet, 0.2};
  m[4] = {B::Neumann, 0.5};
  m[5] = {B::Dirichlet, -1.0};
  mp = m;
  mp[2] = mp[3] = {B::Periodic, 0.0};
  return {{"mixed", m}, {"dirichlet", d}, {"neumann", n}, {"periodic", p}, {"mixed-periodic", mp}};
}

// The case named `name` of all_cases().
inline Case face_case(const std::string& name) {
  for (const Case& c : all_cases())
    if (c.name == name) return c;
  return {};
}

// all_cases(), or only "mixed" with HEATSOLVE_GPU_TEST_QUICK.
inline std::vector<Case> cases() {
  std::vector<Case> cs = all_cases();
  if (quick()) cs.resize(1);
  return cs;
}

using test_fields::random_field;

struct Diff {
  double rel = 0;
  long long differing = 0;  // interior cells whose bits differ
  std::string where;
};

template <typename T>
Diff compare(const std::vector<T>& a, const std::vector<T>& ref, const GridDesc& g) {
  Diff d;
  double num = 0, den = 0;
  const int nz = g.dims == 3 ? g.nz : 1;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const std::int64_t idx = g.index(i, j, g.dims == 3 ? k : 0);
        if (std::memcmp(&a[idx], &ref[idx], sizeof(T)) != 0) ++d.differing;
        const double e = std::abs(double(a[idx]) - double(ref[idx]));
        if (!(e <= num)) {
          num = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
          d.where = "(" + std::to_string(i) + "," + std::to_string(j) + "," + std::to_string(k) +
                    ") got " + std::to_string(double(a[idx])) + " want " +
                    std::to_string(double(ref[idx]));
        }
        den = std::max(den, std::abs(double(ref[idx])));
      }
  d.rel = num / std::max(den, 1e-300);
  return d;
}

// n weighted-Jacobi sweeps for -lap u = f on g, sweep s with the weight w0 + dw s (a distinct
// weight per sweep, as a Chebyshev smoother's).
template <typename T>
std::vector<StencilCoeffs<T>> weighted_jacobi_sweeps(const GridDesc& g, int n, double w0,
                                                     double dw) {
  const double ix = 1 / (g.hx * g.hx), iy = 1 / (g.hy * g.hy);
  const double iz = g.dims == 3 ? 1 / (g.hz * g.hz) : 0.0, diag = 2 * (ix + iy + iz);
  std::vector<StencilCoeffs<T>> cs;
  for (int s = 0; s < n; ++s) {
    const double w = w0 + dw * s;
    StencilCoeffs<T> c;
    c.center = T(1 - w);
    c.cx = T(w * ix / diag);
    c.cy = T(w * iy / diag);
    c.cz = T(w * iz / diag);
    c.source = T(w / diag);
    cs.push_back(c);
  }
  return cs;
}

}  // namespace heatsolve::sweep_test
