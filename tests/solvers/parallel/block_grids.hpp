// Grids and faces the decomposition tests (deep halos, margins) build their blocks from.
#pragma once

#include "core/boundary.hpp"
#include "core/grid.hpp"

namespace heatsolve::test_grids {

// nx x ny x nz cells of the unit cube.
inline GridDesc grid3(int nx, int ny, int nz) {
  GridDesc g;
  g.dims = 3;
  g.nx = nx, g.ny = ny, g.nz = nz;
  g.hx = 1.0 / nx, g.hy = 1.0 / ny, g.hz = 1.0 / nz;
  return g;
}

inline BoundaryFaces dirichlet() {
  BoundaryFaces f{};
  for (FaceBC& b : f) b = FaceBC{BoundaryType::Dirichlet, 0.0};
  return f;
}

}  // namespace heatsolve::test_grids
