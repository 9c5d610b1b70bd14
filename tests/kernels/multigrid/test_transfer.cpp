// Multigrid grid transfers (Backend::restrict_average, prolong_add, interpolate, the fused
// residual restriction) and Backend::dot on the CPU: exactness on linear functions (restriction
// of a linear function gives its values at the coarse cell centres; linear prolongation
// reproduces it at the fine centres), cubics for full multigrid's interpolation, constants,
// hand sums, and the fused passes against the separate ones. The device against this
// reference: test_cuda_transfer.cpp.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/grid.hpp"
#include "core/multigrid.hpp"
#include "kernels/backend.hpp"
#include "kernels/multigrid/interpolation.hpp"
#include "tests/kernels/multigrid/transfer_cases.hpp"

namespace heatsolve {
namespace {

using namespace transfer_cases;

template <typename T>
class MultigridTransferCpu : public ::testing::Test {};
TYPED_TEST_SUITE(MultigridTransferCpu, Precisions);
TYPED_TEST_SUITE(MultigridTransferCpu, Precisions);

// Average of the children of a linear function = its value at the parent's centre; coarse
// ghosts are not written.
TYPED_TEST(MultigridTransferCpu, RestrictionOfLinearIsExact) {
  using T = TypeParam;
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  for (const Level& l : linear_levels()) {
    SCOPED_TRACE(l.name);
    const auto fine =
        padded_field<T>(l.fine, [&](int i, int j, int k) { return linear(l.fine, i, j, k); });
    const T sentinel = T(-123.25);
    std::vector<T> coarse(l.coarse.padded_size(), sentinel);
    cpu->restrict_average(fine.data(), l.fine, coarse.data(), l.coarse, l.ratio);
    int checked = 0;
    for_interior(l.coarse, [&](int i, int j, int k, std::int64_t idx) {
      const double want = linear(l.coarse, i, j, k);
      EXPECT_NEAR(double(coarse[idx]), want, tol<T>(10.0))
          << "(" << i << "," << j << "," << k << ")";
      ++checked;
    });
    EXPECT_EQ(std::size_t(checked), l.coarse.interior_size());
    for (std::size_t n = 0; n < coarse.size(); ++n)
      if (!interior(l.coarse, n)) ASSERT_EQ(coarse[n], sentinel) << "ghost " << n << " written";
  }
}

// Linear prolongation of a linear coarse field whose face ghosts hold the same linear function
// (linear extrapolation) reproduces that function at the fine centres: fine += f. Edge and
// corner ghosts are NaN: the linear prolongation reads face neighbours only.
TYPED_TEST(MultigridTransferCpu, LinearProlongationOfLinearIsExact) {
  using T = TypeParam;
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  for (const Level& l : linear_levels()) {
    SCOPED_TRACE(l.name);
    const GridDesc& gc = l.coarse;
    const auto coarse = padded_field<T>(gc, [&](int i, int j, int k) {
      const int outside =
          (i < 0 || i >= gc.nx) + (j < 0 || j >= gc.ny) + (gc.dims == 3 && (k < 0 || k >= gc.nz));
      return outside > 1 ? std::numeric_limits<double>::quiet_NaN() : linear(gc, i, j, k);
    });
    const T base = T(0.5), ghost = T(7.75);
    std::vector<T> fine(l.fine.padded_size());
    for (std::size_t n = 0; n < fine.size(); ++n) fine[n] = interior(l.fine, n) ? base : ghost;
    cpu->prolong_add(coarse.data(), l.coarse, fine.data(), l.fine, l.ratio, Prolongation::Linear);
    for_interior(l.fine, [&](int i, int j, int k, std::int64_t idx) {
      EXPECT_NEAR(double(fine[idx]), double(base) + linear(l.fine, i, j, k), tol<T>(10.0))
          << "(" << i << "," << j << "," << k << ")";
    });
    for (std::size_t n = 0; n < fine.size(); ++n)
      if (!interior(l.fine, n)) ASSERT_EQ(fine[n], ghost) << "fine ghost " << n << " written";
  }
}

// Constant prolongation of a constant adds that constant, and reads no coarse ghost (NaN).
TYPED_TEST(MultigridTransferCpu, ConstantProlongationAddsConstant) {
  using T = TypeParam;
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  const T c = T(2.5);
  for (const Level& l : linear_levels()) {
    SCOPED_TRACE(l.name);
    std::vector<T> coarse(l.coarse.padded_size(), std::numeric_limits<T>::quiet_NaN());
    for_interior(l.coarse, [&](int, int, int, std::int64_t idx) { coarse[idx] = c; });
    const std::vector<T> before = random_field<T>(l.fine.padded_size(), 5);
    std::vector<T> fine = before;
    cpu->prolong_add(coarse.data(), l.coarse, fine.data(), l.fine, l.ratio, Prolongation::Constant);
    for (std::size_t n = 0; n < fine.size(); ++n) {
      const T want =
          interior(l.fine, n) ? static_cast<T>(double(before[n]) + double(c)) : before[n];
      ASSERT_EQ(fine[n], want) << "index " << n;
    }
  }
}

// Restriction of a constant is that constant, also through a ratio-1 axis only.
TYPED_TEST(MultigridTransferCpu, RestrictionOfConstant) {
  using T = TypeParam;
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  for (const Level& l :
       {make_level("3d_121", 3, 5, 8, 3, {1, 2, 1}), make_level("2d_21", 2, 8, 3, 1, {2, 1, 1})}) {
    SCOPED_TRACE(l.name);
    std::vector<T> fine(l.fine.padded_size(), std::numeric_limits<T>::quiet_NaN());
    for_interior(l.fine, [&](int, int, int, std::int64_t idx) { fine[idx] = T(-1.25); });
    std::vector<T> coarse(l.coarse.padded_size(), T(0));
    cpu->restrict_average(fine.data(), l.fine, coarse.data(), l.coarse, l.ratio);
    for_interior(l.coarse,
                 [&](int, int, int, std::int64_t idx) { EXPECT_EQ(coarse[idx], T(-1.25)); });
  }
}

// f = a cubic per axis at the centre of cell (i, j, k) of g, with the quadratic cross terms
// (`cross`) or without them (a sum of functions of one axis each).
double polynomial(const GridDesc& g, int i, int j, int k, bool cross) {
  const double x = (i + 0.5) * g.hx, y = (j + 0.5) * g.hy, z = g.dims == 3 ? (k + 0.5) * g.hz : 0.0;
  const double separable = 0.3 + 1.7 * x - 2.1 * y + 0.9 * z + 2.3 * x * x - 1.1 * y * y +
                           0.7 * z * z + 0.4 * x * x * x - 0.3 * y * y * y + 0.2 * z * z * z;
  return separable + (cross ? 1.3 * x * y - 0.6 * y * z + 0.8 * x * z : 0.0);
}

// A coarse field of `fn` at the interior and face ghosts, NaN at edge and corner ghosts (the
// interpolation synthesises those).
template <typename T, class Fn>
std::vector<T> coarse_with_face_ghosts(const GridDesc& gc, Fn&& fn) {
  return padded_field<T>(gc, [&](int i, int j, int k) {
    const int outside =
        (i < 0 || i >= gc.nx) + (j < 0 || j >= gc.ny) + (gc.dims == 3 && (k < 0 || k >= gc.nz));
    return outside > 1 ? std::numeric_limits<double>::quiet_NaN() : fn(i, j, k);
  });
}

// Whether the cubic stencil of fine index `c` (parent c / 2) on a halved axis of n coarse
// cells reads a ghost: the centred 4 points around the child, shifted inward at the wall.
bool reads_ghost(int c, int n) {
  const int parent = c / 2;
  return (c & 1) ? parent == 0 || parent >= n - 2 : parent <= 1 || parent == n - 1;
}

// Full multigrid's cubic interpolation is exact for cubics per axis (one-sided at the walls)
// and, where its stencil reads a ghost along at most one axis, for the quadratic cross terms
// too (an edge ghost is synthesised by linear extrapolation, exact only for sums of functions
// of one axis). It writes the interior only.
TYPED_TEST(MultigridTransferCpu, CubicInterpolationIsExactForCubicsAndQuadratics) {
  using T = TypeParam;
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  for (const Level& l : linear_levels()) {
    SCOPED_TRACE(l.name);
    const GridDesc& gc = l.coarse;
    for (const bool cross : {false, true}) {
      const auto fn = [&](const GridDesc& g, int i, int j, int k) {
        return polynomial(g, i, j, k, cross);
      };
      const auto coarse =
          coarse_with_face_ghosts<T>(gc, [&](int i, int j, int k) { return fn(gc, i, j, k); });
      const T ghost = T(7.75);
      std::vector<T> fine(l.fine.padded_size(), ghost);
      cpu->interpolate(coarse.data(), gc, fine.data(), l.fine, l.ratio, Prolongation::Cubic);
      int checked = 0;
      for_interior(l.fine, [&](int i, int j, int k, std::int64_t idx) {
        const int ghosts = (l.ratio[0] == 2 && reads_ghost(i, gc.nx)) +
                           (l.ratio[1] == 2 && reads_ghost(j, gc.ny)) +
                           (gc.dims == 3 && l.ratio[2] == 2 && reads_ghost(k, gc.nz));
        if (cross && ghosts > 1) return;
        EXPECT_NEAR(double(fine[idx]), fn(l.fine, i, j, k), tol<T>(100.0))
            << (cross ? "with cross terms" : "separable") << " (" << i << "," << j << "," << k
            << ")";
        ++checked;
      });
      EXPECT_GT(checked, 0);
      for (std::size_t n = 0; n < fine.size(); ++n)
        if (!interior(l.fine, n)) ASSERT_EQ(fine[n], ghost) << "fine ghost " << n << " written";
    }
  }
}

// Constant and linear interpolation write what prolong_add adds to zero.
TYPED_TEST(MultigridTransferCpu, InterpolateEqualsProlongationOntoZero) {
  using T = TypeParam;
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  unsigned seed = 50;
  for (const Level& l : linear_levels()) {
    for (Prolongation p : {Prolongation::Constant, Prolongation::Linear}) {
      SCOPED_TRACE(l.name + (p == Prolongation::Linear ? " linear" : " constant"));
      std::vector<T> coarse = random_field<T>(l.coarse.padded_size(), ++seed);
      poison_edges(coarse, l.coarse);
      std::vector<T> want(l.fine.padded_size(), T(0));
      cpu->prolong_add(coarse.data(), l.coarse, want.data(), l.fine, l.ratio, p);
      std::vector<T> got(l.fine.padded_size(), T(0));
      cpu->interpolate(coarse.data(), l.coarse, got.data(), l.fine, l.ratio, p);
      for_interior(l.fine, [&](int, int, int, std::int64_t idx) {
        EXPECT_NEAR(double(got[idx]), double(want[idx]), tol<T>(1.0));
      });
    }
  }
}

TYPED_TEST(MultigridTransferCpu, DotAgainstHandSums) {
  using T = TypeParam;
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  // 2D 2 x 2: a = 1 2 / 3 4, b = 5 6 / 7 8 -> 5 + 12 + 21 + 32 = 70; ghosts must not count.
  GridDesc g2;
  g2.dims = 2;
  g2.nx = 2;
  g2.ny = 2;
  std::vector<T> a(g2.padded_size(), T(1000)), b(g2.padded_size(), T(-1000));
  const T av[4] = {1, 2, 3, 4}, bv[4] = {5, 6, 7, 8};
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 2; ++i) {
      a[g2.index(i, j, 0)] = av[2 * j + i];
      b[g2.index(i, j, 0)] = bv[2 * j + i];
    }
  EXPECT_EQ(cpu->dot(a.data(), b.data(), g2), 70.0);
  // 3D 3 x 2 x 2: a = i + 2j + 4k + 1 (1..12 over the interior), b = 1 -> 78; a.a = 650.
  GridDesc g3;
  g3.nx = 3;
  g3.ny = 2;
  g3.nz = 2;
  auto a3 = padded_field<T>(g3, [](int, int, int) { return 99.0; });
  auto b3 = padded_field<T>(g3, [](int, int, int) { return 99.0; });
  for_interior(g3, [&](int i, int j, int k, std::int64_t idx) {
    a3[idx] = T(i + 3 * j + 6 * k + 1);
    b3[idx] = T(1);
  });
  EXPECT_EQ(cpu->dot(a3.data(), b3.data(), g3), 78.0);
  EXPECT_EQ(cpu->dot(a3.data(), a3.data(), g3), 650.0);
}

// level shape, odd sizes, semi-coarsening and 2D included.
TYPED_TEST(MultigridTransferCpu, SeparableCubicIsThePerCellTensorProduct) {
  using T = TypeParam;
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  unsigned seed = 70;
  for (const Level& l : every_level()) {
    SCOPED_TRACE(l.name);
    const std::vector<T> coarse = random_field<T>(l.coarse.padded_size(), ++seed);
    std::vector<T> got(l.fine.padded_size(), T(0));
    cpu->interpolate(coarse.data(), l.coarse, got.data(), l.fine, l.ratio, Prolongation::Cubic);
    const int halved[3] = {l.ratio[0] == 2, l.ratio[1] == 2, l.fine.dims == 3 && l.ratio[2] == 2};
    for_interior(l.fine, [&](int i, int j, int k, std::int64_t idx) {
      const T want = static_cast<T>(
          mg::interpolated(coarse.data(), l.coarse, i, j, k, halved, Prolongation::Cubic));
      ASSERT_EQ(got[idx], want) << "(" << i << "," << j << "," << k << ")";
    });
  }
}

// The CPU's fused residual restriction and residual norm (Backend::stencil_restrict,
// stencil_square_sum): the bits of its sweep, restriction and dot product, with a source and
// without.
TYPED_TEST(MultigridTransferCpu, FusedResidualRestrictionAndNormAreTheSeparatePasses) {
  using T = TypeParam;
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  unsigned seed = 90;
  for (const Level& l : every_level())
    for (const bool source : {true, false}) {
      SCOPED_TRACE(l.name + (source ? " with a source" : " without"));
      std::vector<T> u = random_field<T>(l.fine.padded_size(), ++seed);
      const std::vector<T> f = random_field<T>(l.fine.padded_size(), ++seed);
      const StencilCoeffs<T> c = residual_like<T>();
      const T* fp = source ? f.data() : nullptr;
      std::vector<T> r(u.size(), T(0)), want(l.coarse.padded_size(), T(0)), got = want;
      cpu->stencil(u.data(), r.data(), fp, l.fine, c);
      cpu->restrict_average(r.data(), l.fine, want.data(), l.coarse, l.ratio);
      cpu->stencil_restrict(u.data(), fp, l.fine, c, exchange_faces(), got.data(), l.coarse,
                            l.ratio, nullptr);
      EXPECT_EQ(got, want);
      const double stored = cpu->dot(r.data(), r.data(), l.fine);
      EXPECT_GT(stored, 0.0);
      EXPECT_EQ(cpu->stencil_square_sum(u.data(), fp, l.fine, c, nullptr), stored);
    }
}

TYPED_TEST(MultigridTransferCpu, RestrictionPlaneRangesTileTheWhole) {
  auto cpu = make_backend<TypeParam>(BackendKind::Cpu, {});
  check_restriction_plane_ranges(*cpu);
}

}  // namespace
}  // namespace heatsolve
