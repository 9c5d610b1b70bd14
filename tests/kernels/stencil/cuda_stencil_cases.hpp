// The grids, face cases and the CPU-reference comparison shared by the CUDA stencil tests
// (test_cuda_stencil.cpp, test_cuda_stencil_edges.cpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/stencil/coefficients.hpp"
#include "solvers/solver.hpp"
#include "tests/kernels/random_field.hpp"
#include "tests/kernels/stencil/sweep_cases.hpp"

namespace heatsolve::stencil_cases {

inline const std::vector<std::string> kVariants = {
    "naive",         "shared",     "nondivergent", "2.5d", "2.5d-single-slice",
    "2.5d-register", "2.5d-async", "2.5d-tma"};

#define SKIP_WITHOUT_GPU()                                                    \
  do {                                                                        \
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available"; \
  } while (0)

using BcCase = sweep_test::Case;
using sweep_test::quick;
using test_fields::random_field;

inline int steps(int normal) {
  return quick() ? 2 : normal;
}

// Dirichlet, Neumann and periodic faces, then a mix with periodic y faces (named "mixed"
// here; only that one with HEATSOLVE_GPU_TEST_QUICK, scripts/sanitize_gpu.sh).
inline std::vector<BcCase> bc_cases() {
  std::vector<BcCase> cs;
  if (!quick())
    for (const char* name : {"dirichlet", "neumann", "periodic"})
      cs.push_back(sweep_test::face_case(name));
  cs.push_back({"mixed", sweep_test::face_case("mixed-periodic").faces});
  return cs;
}

inline GridDesc make_grid(int dims) {
  GridDesc g;
  g.dims = dims;
  if (dims == 3) {  // odd sizes: not multiples of any block
    g.nx = 37;
    g.ny = 29;
    g.nz = 23;
  } else {
    g.nx = 67;
    g.ny = 45;
    g.nz = 1;
  }
  g.hx = 1.0 / g.nx;
  g.hy = 1.3 / g.ny;
  g.hz = 0.8 / g.nz;
  return g;
}

template <typename T>
double max_rel_interior(const std::vector<T>& a, const std::vector<T>& ref, const GridDesc& g,
                        std::string* where = nullptr) {
  double num = 0, den = 0;
  const int nz = g.dims == 3 ? g.nz : 1;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const std::int64_t idx = g.index(i, j, g.dims == 3 ? k : 0);
        const double e = std::abs(double(a[idx]) - double(ref[idx]));
        if (!(e <= num)) {  // NaN counts as the worst
          num = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
          if (where)
            *where = "(" + std::to_string(i) + "," + std::to_string(j) + "," + std::to_string(k) +
                     ") got " + std::to_string(double(a[idx])) + " want " +
                     std::to_string(double(ref[idx]));
        }
        den = std::max(den, std::abs(double(ref[idx])));
      }
  return num / std::max(den, 1e-300);
}

template <typename T>
constexpr double tolerance() {
  return sizeof(T) == sizeof(float) ? 1e-5 : 1e-12;
}

// Runs `steps` heat steps (ghost fill, sweep with a random source, swap) on the CPU reference
// and on `dev`, poisoning the device output with NaN before every sweep; `sweep` launches
// the device sweep. Returns the relative interior difference.
template <typename T, typename Sweep>
double compare_steps(Backend<T>& dev, const GridDesc& g, const BoundaryFaces& bc, int steps,
                     unsigned seed, Sweep&& sweep, std::string* where,
                     std::vector<T>* device_result = nullptr) {
  CpuBackend<T> cpu;
  const std::size_t n = g.padded_size();
  const std::vector<T> u0 = random_field<T>(n, seed), f0 = random_field<T>(n, seed + 1);
  const std::vector<T> poison(n, std::numeric_limits<T>::quiet_NaN());
  const StencilCoeffs<T> c = heat_coeffs<T>(g, 1.0, 0.9 * stable_dt(g, 1.0));

  std::vector<T> cu = u0, cout = u0, cf = f0;
  auto du = dev.allocate(n), dout = dev.allocate(n), df = dev.allocate(n);
  du->copy_from_host(u0.data());
  df->copy_from_host(f0.data());
  for (int s = 0; s < steps; ++s) {
    cpu_apply_boundary(cu.data(), g, bc);
    cpu_stencil(cu.data(), cout.data(), cf.data(), g, c);
    std::swap(cu, cout);

    dev.apply_boundary(du->data(), g, bc);
    dout->copy_from_host(poison.data());
    sweep(du->data(), dout->data(), df->data(), c);
    std::swap(du, dout);
  }
  dev.synchronize();
  std::vector<T> got(n);
  du->copy_to_host(got.data());
  const double err = max_rel_interior(got, cu, g, where);
  if (device_result) *device_result = std::move(got);
  return err;
}

}  // namespace heatsolve::stencil_cases
