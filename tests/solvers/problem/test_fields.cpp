// Deck shapes in separable form (solvers/problem/fields.cpp): the form's values against the shape
// evaluated directly, and the wrap of cells past a periodic face.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "solvers/solver.hpp"

namespace heatsolve {
namespace {

Config config(int dims) {
  Config c;
  c.dimensions = dims;
  c.cells = {24, 18, dims == 3 ? 14 : 1};
  c.length = {1.0, 0.8, 1.2};
  c.origin = {-0.1, 0.2, 0.0};
  return c;
}

std::vector<Shape> shapes() {
  std::vector<Shape> out(4);
  out[0].type = ShapeType::Uniform;
  out[0].value = 2.5;
  out[1].type = ShapeType::Sine;
  out[1].amplitude = 29.6;
  out[2].type = ShapeType::Gaussian;
  out[2].value = 0.1;
  out[2].amplitude = 4.0;
  out[2].width = 0.15;
  out[2].center = {0.3, 0.5, 0.6};
  out[3].type = ShapeType::Box;
  out[3].value = 3.0;
  out[3].lower = {0.1, 0.3, 0.2};
  out[3].upper = {0.45, 0.7, 0.9};
  return out;
}

template <typename T>
void check_shapes(double tol) {
  for (int dims : {2, 3})
    for (const Shape& s : shapes()) {
      SCOPED_TRACE(std::to_string(dims) + "D shape " + std::to_string(int(s.type)));
      const Config cfg = config(dims);
      const Domain d = serial_domain(cfg.grid(), cfg.boundary);
      std::vector<T> direct, separable;
      fill_shape(direct, s, cfg, d);
      fill_separable(separable, separable_shape<T>(s, cfg, d), d.local);
      ASSERT_EQ(direct.size(), separable.size());
      double worst = 0, scale = 0;
      for (std::size_t i = 0; i < direct.size(); ++i) {
        worst = std::max(worst, std::abs(double(direct[i]) - double(separable[i])));
        scale = std::max(scale, std::abs(double(direct[i])));
      }
      EXPECT_GT(scale, 0.0);
      EXPECT_LE(worst, tol * scale);
      if (s.type == ShapeType::Box || s.type == ShapeType::Uniform) EXPECT_EQ(worst, 0.0);
    }
}

TEST(Fields, SeparableShapesMatchTheShapesFloat) {
  check_shapes<float>(4e-7);
}
TEST(Fields, SeparableShapesMatchTheShapesDouble) {
  check_shapes<double>(1e-15);
}

// A block extended past a periodic face (deep halo margins): its cells there take the values of
// the cells they wrap to, as the exchanged margins do.
TEST(Fields, SeparableShapeWrapsPastThePeriodicFaces) {
  const Config cfg = config(3);
  Shape s = shapes()[2];
  const Domain whole = serial_domain(cfg.grid(), cfg.boundary);
  std::vector<double> ref;
  fill_separable(ref, separable_shape<double>(s, cfg, whole), whole.local);
  Domain ext = whole;  // two cells more along z on each side
  ext.local.nz += 4;
  ext.block.offset[2] = -2;
  std::vector<double> got;
  fill_separable(got, separable_shape<double>(s, cfg, ext), ext.local);
  const int nz = cfg.cells[2];
  for (int k = 0; k < ext.local.nz; ++k) {
    const int wrapped = ((k - 2) % nz + nz) % nz;
    for (int j = 0; j < cfg.cells[1]; ++j)
      for (int i = 0; i < cfg.cells[0]; ++i)
        ASSERT_EQ(got[std::size_t(ext.local.index(i, j, k))],
                  ref[std::size_t(whole.local.index(i, j, wrapped))])
            << i << "," << j << "," << k;
  }
}

}  // namespace
}  // namespace heatsolve
