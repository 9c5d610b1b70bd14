// The variable-coefficient sweep (kernels/stencil/variable.hpp) and the affine ghost rules
// (Robin, Fixed): each form against a formula computed here on the CPU, and the CUDA backend
// bit for bit against the CPU (skipped without a device).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_backend.hpp"

namespace heatsolve {
namespace {

GridDesc grid(int dims) {
  GridDesc g;
  g.dims = dims;
  g.nx = 19;
  g.ny = 11;
  g.nz = dims == 3 ? 7 : 1;
  g.hx = 0.1, g.hy = 0.2, g.hz = 0.05;
  return g;
}

template <typename T>
std::vector<T> random_field(const GridDesc& g, unsigned seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(g.padded_size());
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

// The operator at one cell, in double, from its definition (not variable_point's order).
template <typename T>
double reference(VariableForm form, const GridDesc& g, const std::vector<T>& u,
                 const std::vector<T>& f, const std::vector<T>& wx, const std::vector<T>& wy,
                 const std::vector<T>& wz, const std::vector<T>& m, const std::vector<T>& s,
                 double dt, double omega, int i, int j, int k) {
  const auto at = [&](const std::vector<T>& a, int di, int dj, int dk) {
    return double(a[g.index(i + di, j + dj, k + dk)]);
  };
  const double uc = at(u, 0, 0, 0);
  double l = at(wx, 0, 0, 0) * (at(u, -1, 0, 0) - uc) + at(wx, 1, 0, 0) * (at(u, 1, 0, 0) - uc) +
             at(wy, 0, 0, 0) * (at(u, 0, -1, 0) - uc) + at(wy, 0, 1, 0) * (at(u, 0, 1, 0) - uc);
  double d = at(m, 0, 0, 0) + at(wx, 0, 0, 0) + at(wx, 1, 0, 0) + at(wy, 0, 0, 0) + at(wy, 0, 1, 0);
  if (g.dims == 3) {
    l += at(wz, 0, 0, 0) * (at(u, 0, 0, -1) - uc) + at(wz, 0, 0, 1) * (at(u, 0, 0, 1) - uc);
    d += at(wz, 0, 0, 0) + at(wz, 0, 0, 1);
  }
  const double ff = at(f, 0, 0, 0), mm = at(m, 0, 0, 0);
  switch (form) {
    case VariableForm::Step:
      return uc + dt * at(s, 0, 0, 0) * (l + ff);
    case VariableForm::Residual:
      return ff - mm * uc + l;
    case VariableForm::Apply:
      return mm * uc - l;
    case VariableForm::Jacobi:
      return uc + omega * (ff - mm * uc + l) / d;
    case VariableForm::Combine:
      return mm * uc + 0.5 * l + 2.0 * ff;
  }
  return 0;
}

template <typename T>
struct Case {
  GridDesc g;
  std::vector<T> u, f, wx, wy, wz, m, s;
  explicit Case(int dims)
      : g(grid(dims)),
        u(random_field<T>(g, 1, -1, 1)),
        f(random_field<T>(g, 2, -1, 1)),
        wx(random_field<T>(g, 3, 0.1, 5)),
        wy(random_field<T>(g, 4, 0.1, 5)),
        wz(random_field<T>(g, 5, 0.1, 5)),
        m(random_field<T>(g, 6, 0, 2)),
        s(random_field<T>(g, 7, 0.5, 1)) {}
  VariableCoeffs<T> coeffs(Backend<T>& b, VariableForm form,
                           std::vector<std::unique_ptr<Array<T>>>& keep) const {
    const auto up = [&](const std::vector<T>& h) {
      keep.push_back(b.allocate(h.size()));
      keep.back()->copy_from_host(h.data());
      return keep.back()->data();
    };
    VariableCoeffs<T> c;
    c.wx = up(wx);
    c.wy = up(wy);
    c.wz = g.dims == 3 ? up(wz) : nullptr;
    c.mass = up(m);
    c.scale = up(s);
    c.form = form;
    c.dt = T(0.01);
    c.omega = T(0.8);
    c.a = T(0.5);
    c.b = T(2.0);
    return c;
  }
  std::vector<T> run(Backend<T>& b, VariableForm form, const CellRange& r) const {
    std::vector<std::unique_ptr<Array<T>>> keep;
    const VariableCoeffs<T> c = coeffs(b, form, keep);
    auto du = b.allocate(u.size()), df = b.allocate(f.size()), out = b.allocate(u.size());
    du->copy_from_host(u.data());
    df->copy_from_host(f.data());
    b.stencil_variable(du->data(), out->data(), df->data(), g, c, r);
    b.synchronize();
    std::vector<T> h(u.size());
    out->copy_to_host(h.data());
    return h;
  }
};

CellRange whole(const GridDesc& g) {
  CellRange r;
  r.hi = {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
  return r;
}

const VariableForm kForms[] = {VariableForm::Step, VariableForm::Residual, VariableForm::Apply,
                               VariableForm::Jacobi, VariableForm::Combine};

TEST(VariableStencil, EveryFormMatchesItsDefinition) {
  for (int dims : {2, 3}) {
    const Case<double> c(dims);
    CpuBackend<double> cpu;
    for (VariableForm form : kForms) {
      const std::vector<double> out = c.run(cpu, form, whole(c.g));
      for (int k = 0; k < (dims == 3 ? c.g.nz : 1); ++k)
        for (int j = 0; j < c.g.ny; ++j)
          for (int i = 0; i < c.g.nx; ++i) {
            const double want =
                reference(form, c.g, c.u, c.f, c.wx, c.wy, c.wz, c.m, c.s, 0.01, 0.8, i, j, k);
            ASSERT_NEAR(out[c.g.index(i, j, k)], want, 1e-12 * (1 + std::abs(want)))
                << dims << "D form " << int(form) << " at " << i << "," << j << "," << k;
          }
    }
  }
}

// A region computes exactly its cells, with the whole sweep's bits; the rest is untouched.
TEST(VariableStencil, RegionsTileTheWholeSweep) {
  const Case<float> c(3);
  CpuBackend<float> cpu;
  const std::vector<float> all = c.run(cpu, VariableForm::Jacobi, whole(c.g));
  CellRange r;
  r.lo = {3, 2, 1};
  r.hi = {11, 9, 5};
  const std::vector<float> part = c.run(cpu, VariableForm::Jacobi, r);
  for (int k = 0; k < c.g.nz; ++k)
    for (int j = 0; j < c.g.ny; ++j)
      for (int i = 0; i < c.g.nx; ++i) {
        const bool in = i >= r.lo[0] && i < r.hi[0] && j >= r.lo[1] && j < r.hi[1] &&
                        k >= r.lo[2] && k < r.hi[2];
        const auto x = c.g.index(i, j, k);
        if (in)
          EXPECT_EQ(std::memcmp(&part[x], &all[x], sizeof(float)), 0);
        else
          EXPECT_EQ(part[x], 0.0f);
      }
}

// Robin: ghost = a inner + b rounded once; Fixed: ghost = value.
TEST(GhostRules, RobinAndFixed) {
  GridDesc g = grid(2);
  std::vector<double> u = random_field<double>(g, 9, -1, 1);
  BoundaryFaces faces{};
  faces[0] = FaceBC{BoundaryType::Robin, 0.25, 0.6};
  faces[1] = FaceBC{BoundaryType::Fixed, 3.5};
  faces[2] = FaceBC{BoundaryType::Dirichlet, 1.0};
  faces[3] = FaceBC{BoundaryType::Neumann, 2.0};
  cpu_apply_boundary(u.data(), g, faces);
  for (int j = 0; j < g.ny; ++j) {
    EXPECT_EQ(u[g.index(-1, j, 0)], std::fma(0.6, u[g.index(0, j, 0)], 0.25));
    EXPECT_EQ(u[g.index(g.nx, j, 0)], 3.5);
  }
  for (int i = 0; i < g.nx; ++i) {
    EXPECT_EQ(u[g.index(i, -1, 0)], 2.0 - u[g.index(i, 0, 0)]);
    EXPECT_EQ(u[g.index(i, g.ny, 0)], u[g.index(i, g.ny - 1, 0)] + 2.0 * g.hy);
  }
  faces[0].type = BoundaryType::Convective;
  EXPECT_THROW(cpu_apply_boundary(u.data(), g, faces), std::logic_error);
}

template <typename T>
void expect_gpu_equals_cpu() {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  for (int dims : {2, 3}) {
    const Case<T> c(dims);
    CpuBackend<T> cpu;
    const std::unique_ptr<Backend<T>> gpu = make_backend<T>(BackendKind::Cuda, BackendOptions{});
    for (VariableForm form : kForms) {
      const std::vector<T> a = c.run(cpu, form, whole(c.g)), b = c.run(*gpu, form, whole(c.g));
      std::size_t differ = 0;
      for (int k = 0; k < (dims == 3 ? c.g.nz : 1); ++k)
        for (int j = 0; j < c.g.ny; ++j)
          for (int i = 0; i < c.g.nx; ++i) {
            const auto x = c.g.index(i, j, k);
            differ += std::memcmp(&a[x], &b[x], sizeof(T)) != 0;
          }
      EXPECT_EQ(differ, 0u) << dims << "D form " << int(form);
    }
    // Robin and Fixed ghosts, bit for bit.
    BoundaryFaces faces{};
    for (FaceBC& f : faces) f = FaceBC{BoundaryType::Robin, 0.3, 0.7};
    faces[1] = FaceBC{BoundaryType::Fixed, -2.0};
    std::vector<T> hu = c.u, hg(c.u.size());
    auto du = gpu->allocate(hu.size());
    du->copy_from_host(hu.data());
    gpu->apply_boundary(du->data(), c.g, faces);
    gpu->synchronize();
    du->copy_to_host(hg.data());
    cpu_apply_boundary(hu.data(), c.g, faces);
    EXPECT_EQ(std::memcmp(hu.data(), hg.data(), hu.size() * sizeof(T)), 0) << dims << "D ghosts";
  }
}

TEST(VariableStencil, CudaEqualsCpuFloat) {
  expect_gpu_equals_cpu<float>();
}
TEST(VariableStencil, CudaEqualsCpuDouble) {
  expect_gpu_equals_cpu<double>();
}

}  // namespace
}  // namespace heatsolve
