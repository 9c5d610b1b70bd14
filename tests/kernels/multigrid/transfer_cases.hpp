// The level shapes and fields shared by the multigrid transfer tests (test_transfer.cpp: the
// CPU; test_cuda_transfer.cpp: the device against the CPU).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/grid.hpp"
#include "core/multigrid.hpp"
#include "kernels/backend.hpp"
#include "kernels/stencil/separable_fill.hpp"
#include "kernels/stencil/source.hpp"
#include "tests/kernels/random_field.hpp"

namespace heatsolve::transfer_cases {

using test_fields::random_field;
using Precisions = ::testing::Types<float, double>;

using Ratio = std::array<int, 3>;

// A fine grid and the coarse grid made from it by `ratio` (z ignored in 2D).
struct Level {
  std::string name;
  GridDesc fine, coarse;
  Ratio ratio;
};

inline Level make_level(const std::string& name, int dims, int nx, int ny, int nz, Ratio ratio) {
  Level l;
  l.name = name;
  l.ratio = ratio;
  l.fine.dims = dims;
  l.fine.nx = nx;
  l.fine.ny = ny;
  l.fine.nz = dims == 3 ? nz : 1;
  l.fine.hx = 0.11;
  l.fine.hy = 0.07;
  l.fine.hz = dims == 3 ? 0.13 : 1.0;
  l.coarse = l.fine;
  l.coarse.nx = nx / ratio[0];
  l.coarse.ny = ny / ratio[1];
  l.coarse.hx = l.fine.hx * ratio[0];
  l.coarse.hy = l.fine.hy * ratio[1];
  if (dims == 3) {
    l.coarse.nz = nz / ratio[2];
    l.coarse.hz = l.fine.hz * ratio[2];
  }
  return l;
}

// f = a + b x + c y + d z at the centre of cell (i, j, k) (ghosts too: i = -1 is at -h/2).
inline double linear(const GridDesc& g, int i, int j, int k) {
  const double x = (i + 0.5) * g.hx, y = (j + 0.5) * g.hy, z = g.dims == 3 ? (k + 0.5) * g.hz : 0.0;
  return 0.3 + 1.7 * x - 2.1 * y + 0.9 * z;
}

// Every padded cell of g (ghosts, edges and corners included) set to fn(i, j, k).
template <typename T, class Fn>
std::vector<T> padded_field(const GridDesc& g, Fn&& fn) {
  std::vector<T> v(g.padded_size());
  const bool d3 = g.dims == 3;
  for (int k = d3 ? -1 : 0; k < (d3 ? g.nz + 1 : 1); ++k)
    for (int j = -1; j <= g.ny; ++j)
      for (int i = -1; i <= g.nx; ++i) v[g.index(i, j, k)] = static_cast<T>(fn(i, j, k));
  return v;
}

// Calls fn(i, j, k, index) for every interior cell of g.
template <class Fn>
void for_interior(const GridDesc& g, Fn&& fn) {
  const bool d3 = g.dims == 3;
  for (int k = 0; k < (d3 ? g.nz : 1); ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) fn(i, j, k, g.index(i, j, k));
}

inline bool interior(const GridDesc& g, std::size_t idx) {
  const std::int64_t px = g.px(), py = g.py();
  const std::int64_t x = std::int64_t(idx) % px, y = (std::int64_t(idx) / px) % py,
                     z = std::int64_t(idx) / (px * py);
  return x >= 1 && x <= g.nx && y >= 1 && y <= g.ny && (g.dims == 2 || (z >= 1 && z <= g.nz));
}

// Sets the edge and corner ghosts of g (outside the interior along two or three axes) to NaN.
template <typename T>
void poison_edges(std::vector<T>& v, const GridDesc& g) {
  const bool d3 = g.dims == 3;
  for (int k = d3 ? -1 : 0; k < (d3 ? g.nz + 1 : 1); ++k)
    for (int j = -1; j <= g.ny; ++j)
      for (int i = -1; i <= g.nx; ++i) {
        const int outside = (i < 0 || i >= g.nx) + (j < 0 || j >= g.ny) + (k < 0 || k >= g.nz);
        if (outside > 1) v[g.index(i, j, k)] = std::numeric_limits<T>::quiet_NaN();
      }
}

// Rounding of T relative to values of about `scale`.
template <typename T>
double tol(double scale) {
  return 16 * std::numeric_limits<T>::epsilon() * std::max(1.0, scale);
}

inline std::vector<Level> linear_levels() {
  return {make_level("3d_222", 3, 12, 10, 8, {2, 2, 2}),
          make_level("3d_212", 3, 12, 5, 8, {2, 1, 2}),
          make_level("2d_22", 2, 14, 10, 1, {2, 2, 1})};
}

// ---- CUDA against the CPU reference --------------------------------------------------------
inline std::vector<Level> random_levels() {
  return {
      make_level("3d_222_odd_coarse", 3, 34, 18, 10, {2, 2, 2}),  // coarse 17 x 9 x 5
      make_level("3d_222_even_coarse", 3, 32, 12, 8, {2, 2, 2}),  // coarse 16 x 6 x 4
      make_level("3d_212", 3, 34, 9, 10, {2, 1, 2}),              // odd fine y kept
      make_level("3d_121", 3, 17, 18, 5, {1, 2, 1}),              // odd fine x, z kept
      make_level("3d_wide", 3, 530, 6, 4, {2, 2, 2}),             // several blocks along x
      // coarse 85 x 50 x 18: enough columns for the streaming fused restriction, 2 chunks
      make_level("3d_222_streamed", 3, 170, 100, 36, {2, 2, 2}),
      make_level("2d_22", 2, 34, 18, 1, {2, 2, 1}),  // coarse 17 x 9
      make_level("2d_12", 2, 17, 26, 1, {1, 2, 1}),  // ratio[2] ignored in 2D
      make_level("2d_21_z2", 2, 40, 7, 1, {2, 1, 2}),
  };
}

// A residual form's signs (r = f - A u), a distinct coefficient per axis.
template <typename T>
StencilCoeffs<T> residual_like() {
  StencilCoeffs<T> c;
  c.center = T(-7.25);
  c.cx = T(1.5);
  c.cy = T(0.75);
  c.cz = T(2.125);
  c.source = T(1);
  return c;
}

// A random separable source on g: its form and the padded field it gives (ghosts zero).
template <typename T>
std::vector<T> random_separable(const GridDesc& g, SeparableSource<T>* form, unsigned* seed) {
  const std::int64_t ss = g.dims == 3 ? g.stride_z() : g.stride_y();
  form->offset = T(0.3);
  form->scale = T(-1.7);
  form->plane = random_field<T>(std::size_t(ss), ++*seed);
  form->column = random_field<T>(std::size_t(g.dims == 3 ? g.nz : g.ny), ++*seed);
  std::vector<T> f(g.padded_size(), T(0));
  fill_separable_interior(f.data(), g, form->offset, form->scale, form->plane.data(),
                          form->column.data());
  return f;
}

// Faces whose ghosts are read as they are (another rank's values).
inline BoundaryFaces exchange_faces() {
  BoundaryFaces bc;
  for (FaceBC& f : bc) f.type = BoundaryType::Exchange;
  return bc;
}

// Every level shape of both lists (the CPU's fused and separable forms are checked on all).
inline std::vector<Level> every_level() {
  std::vector<Level> levels = random_levels();
  for (const Level& l : linear_levels()) levels.push_back(l);
  return levels;
}

// The CPU's cubic interpolation runs as three one-axis passes (kernels/multigrid/cpu/), as
// the device's does: the bits of the per-cell tensor product (mg::interpolated), on every

// The fused restriction stored by coarse plane ranges (Backend::stencil_restrict_planes, a
// multigrid level's right side exchanged while the rest is restricted): ranges that tile the
// coarse planes give the whole call's bits (on the GPU on the thread-per-cell and the streaming
// kernels), with a stored source and without; planes outside a range are left as they were; 2D
// has no ranges.
template <typename T>
void check_restriction_plane_ranges(Backend<T>& be) {
  unsigned seed = 170;
  for (const Level& l : random_levels()) {
    const StencilCoeffs<T> c = residual_like<T>();
    if (l.fine.dims == 2) {
      EXPECT_FALSE(be.stencil_restrict_planes(nullptr, nullptr, l.fine, c, exchange_faces(),
                                              nullptr, l.coarse, l.ratio, 0, 0))
          << l.name;
      continue;
    }
    for (const bool source : {true, false}) {
      SCOPED_TRACE(l.name + (source ? " with a source" : " without"));
      const std::vector<T> u = random_field<T>(l.fine.padded_size(), ++seed);
      const std::vector<T> f = random_field<T>(l.fine.padded_size(), ++seed);
      const std::vector<T> before = random_field<T>(l.coarse.padded_size(), ++seed);
      auto du = be.allocate(u.size()), df = be.allocate(f.size());
      auto want = be.allocate(before.size()), got = be.allocate(before.size());
      du->copy_from_host(u.data());
      df->copy_from_host(f.data());
      got->copy_from_host(before.data());
      const T* fp = source ? df->data() : nullptr;
      be.stencil_restrict(du->data(), fp, l.fine, c, exchange_faces(), want->data(), l.coarse,
                          l.ratio, nullptr);
      const int nz = l.coarse.nz, lo = std::min(2, nz), hi = std::max(lo, nz - 1);
      // The first range alone: the planes past it keep their values.
      ASSERT_TRUE(be.stencil_restrict_planes(du->data(), fp, l.fine, c, exchange_faces(),
                                             got->data(), l.coarse, l.ratio, 0, lo));
      std::vector<T> w(before.size()), g(before.size());
      got->copy_to_host(g.data());
      for_interior(l.coarse, [&](int i, int j, int k, std::int64_t idx) {
        if (k >= lo) ASSERT_EQ(g[idx], before[idx]) << "cell " << i << "," << j << "," << k;
      });
      ASSERT_TRUE(be.stencil_restrict_planes(du->data(), fp, l.fine, c, exchange_faces(),
                                             got->data(), l.coarse, l.ratio, hi, nz));
      ASSERT_TRUE(be.stencil_restrict_planes(du->data(), fp, l.fine, c, exchange_faces(),
                                             got->data(), l.coarse, l.ratio, lo, hi));
      want->copy_to_host(w.data());
      got->copy_to_host(g.data());
      for_interior(l.coarse, [&](int i, int j, int k, std::int64_t idx) {
        ASSERT_EQ(g[idx], w[idx]) << "coarse cell " << i << "," << j << "," << k;
      });
    }
  }
}

}  // namespace heatsolve::transfer_cases
