// The compatibility sums of a singular steady problem (io/source_balance.hpp).
#include "io/source_balance.hpp"

#include <cmath>
#include <cstdint>

#include "io/materials.hpp"

namespace heatsolve {

namespace {

double spacing(const Config& cfg, int d) {
  return cfg.length[d] / cfg.cells[d];
}

// sum over the cells of axis d of f(centre) h_d, the centres as the solvers compute them.
template <typename F>
long double axis_sum(const Config& cfg, int d, F&& f) {
  const double h = spacing(cfg, d);
  long double sum = 0;
  for (int i = 0; i < cfg.cells[d]; ++i) sum += f(cfg.origin[d] + (i + 0.5) * h) * h;
  return sum;
}

// prod over the axes of axis_sum(f_d).
template <typename F>
long double product(const Config& cfg, F&& factor) {
  long double p = 1;
  for (int d = 0; d < cfg.dimensions; ++d)
    p *= axis_sum(cfg, d, [&](double x) { return factor(d, x); });
  return p;
}

// (sum of f dV, sum of |f| dV) of one source term at t = 0.
std::pair<long double, long double> shape_integral(const Config& cfg, const Shape& s) {
  const long double volume = product(cfg, [](int, double) { return 1.0; });
  switch (s.type) {
    case ShapeType::None:
    case ShapeType::File:
      return {0, 0};
    case ShapeType::Uniform:
      return {s.value * volume, std::abs(s.value) * volume};
    case ShapeType::Box: {
      const long double inside = product(
          cfg, [&](int d, double x) { return x < s.lower[d] || x > s.upper[d] ? 0.0 : 1.0; });
      return {s.value * inside, std::abs(s.value) * inside};
    }
    case ShapeType::Sine: {
      const long double p = product(cfg, [&](int d, double x) {
        return std::sin(M_PI * (x - cfg.origin[d]) / cfg.length[d]);
      });
      return {s.amplitude * p, std::abs(s.amplitude * p)};
    }
    case ShapeType::Gaussian: {
      const long double p = product(cfg, [&](int d, double x) {
        return std::exp(-(x - s.center[d]) * (x - s.center[d]) / (2 * s.width * s.width));
      });
      return {s.value * volume + s.amplitude * p,
              std::abs(s.value) * volume + std::abs(s.amplitude) * p};
    }
  }
  return {0, 0};
}

// sum over the cells at face f of k * (cell face area): the conductance-weighted area that a
// neumann flux du/dn multiplies.
long double face_conductance_area(const Config& cfg, int f) {
  const int axis = f / 2;
  long double area = 1;
  for (int d = 0; d < cfg.dimensions; ++d)
    if (d != axis) area *= cfg.length[d];
  if (cfg.material.uniform()) return cfg.material.conductivity * area;
  // Regions: the conductivity of every cell of the face's layer.
  GridDesc layer = cfg.grid();
  std::array<int, 3> offset{0, 0, 0};
  if (axis == 0) layer.nx = 1;
  if (axis == 1) layer.ny = 1;
  if (axis == 2) layer.nz = 1;
  if (f % 2 == 1) offset[axis] = cfg.cells[axis] - 1;
  const CellProperties p = sample_materials(cfg, layer, offset);
  long double cell_area = 1;
  for (int d = 0; d < cfg.dimensions; ++d)
    if (d != axis) cell_area *= spacing(cfg, d);
  long double sum = 0;
  const int nz = layer.dims == 3 ? layer.nz : 1;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < layer.ny; ++j)
      for (int i = 0; i < layer.nx; ++i)
        sum += p.conductivity[std::size_t(layer.index(i, j, layer.dims == 3 ? k : 0))];
  return sum * cell_area;
}

}  // namespace

SourceBalance source_balance(const Config& cfg) {
  SourceBalance b;
  b.singular = true;
  long double source = 0, inflow = 0, magnitude = 0;
  for (int f = 0; f < 2 * cfg.dimensions; ++f) {
    const FaceBC& face = cfg.boundary[std::size_t(f)];
    long double in = 0;
    switch (face.type) {
      case BoundaryType::Dirichlet:
        b.singular = false;
        break;
      case BoundaryType::Convective:
        if (face.coeff > 0) b.singular = false;
        break;
      case BoundaryType::Neumann:
        if (face.value != 0) in = face.value * face_conductance_area(cfg, f);
        break;
      case BoundaryType::HeatFlux: {
        long double area = 1;
        for (int d = 0; d < cfg.dimensions; ++d)
          if (d != f / 2) area *= cfg.length[d];
        in = face.value * area;
        break;
      }
      default:
        break;
    }
    inflow += in;
    magnitude += std::abs(in);
  }
  // A Config built by hand may name its one source in `source` alone.
  const std::vector<Shape> sources = !cfg.sources.empty() || cfg.source.type == ShapeType::None
                                         ? cfg.sources
                                         : std::vector<Shape>{cfg.source};
  for (const Shape& s : sources) {
    const auto [integral, size] = shape_integral(cfg, s);
    source += integral;
    magnitude += size;
  }
  b.source = double(source);
  b.inflow = double(inflow);
  b.magnitude = double(magnitude);
  return b;
}

}  // namespace heatsolve
