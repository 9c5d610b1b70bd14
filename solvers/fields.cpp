#include <cmath>

#include "solvers/solver.hpp"

namespace heatsolve {

Domain serial_domain(const GridDesc& global, const BoundaryFaces& faces) {
  Domain d;
  d.global = global;
  d.local = global;
  d.block.offset = {0, 0, 0};
  d.block.count = {global.nx, global.ny, global.dims == 3 ? global.nz : 1};
  d.faces = faces;
  return d;
}

namespace {

double shape_value(const Shape& s, const std::array<double, 3>& x, const Config& cfg) {
  const int dims = cfg.dimensions;
  switch (s.type) {
    case ShapeType::None:
      return 0.0;
    case ShapeType::Uniform:
      return s.value;
    case ShapeType::Sine: {
      double v = s.amplitude;
      for (int d = 0; d < dims; ++d) v *= std::sin(M_PI * (x[d] - cfg.origin[d]) / cfg.length[d]);
      return v;
    }
    case ShapeType::Gaussian: {
      double r2 = 0;
      for (int d = 0; d < dims; ++d) r2 += (x[d] - s.center[d]) * (x[d] - s.center[d]);
      return s.value + s.amplitude * std::exp(-r2 / (2 * s.width * s.width));
    }
    case ShapeType::Box: {
      for (int d = 0; d < dims; ++d)
        if (x[d] < s.lower[d] || x[d] > s.upper[d]) return 0.0;
      return s.value;
    }
  }
  return 0.0;
}

}  // namespace

template <typename T>
void fill_shape(std::vector<T>& padded, const Shape& shape, const Config& cfg,
                const Domain& domain) {
  const GridDesc& g = domain.local;
  padded.assign(g.padded_size(), T(0));
  const std::array<double, 3> h{g.hx, g.hy, g.hz};
  const int nz = g.dims == 3 ? g.nz : 1;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const std::array<int, 3> idx{i, j, k};
        std::array<double, 3> x{0, 0, 0};
        for (int d = 0; d < g.dims; ++d)
          x[d] = cfg.origin[d] + (domain.block.offset[d] + idx[d] + 0.5) * h[d];
        padded[g.index(i, j, g.dims == 3 ? k : 0)] = static_cast<T>(shape_value(shape, x, cfg));
      }
}

template void fill_shape<float>(std::vector<float>&, const Shape&, const Config&, const Domain&);
template void fill_shape<double>(std::vector<double>&, const Shape&, const Config&, const Domain&);

}  // namespace heatsolve
