#include <cmath>
#include <stdexcept>

#include "kernels/stencil/separable_fill.hpp"
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
    case ShapeType::File:  // not a formula: Sweeper::initial_field reads the file
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

std::vector<Shape> source_terms(const Config& cfg) {
  if (cfg.sources.size() > 1) return cfg.sources;
  if (cfg.source.type != ShapeType::None) return {cfg.source};
  return {};
}

namespace {
// A face whose flux enters the source with regions, and whether its value changes with time.
bool flux_face(const Config& cfg, int f, bool* varies) {
  const FaceBC& face = cfg.boundary[std::size_t(f)];
  if (face.type != BoundaryType::Neumann && face.type != BoundaryType::HeatFlux) return false;
  const auto& table = cfg.boundary_tables[std::size_t(f)];
  *varies = cfg.problem == ProblemType::Heat && table && !table->constant();
  return face.value != 0.0 || *varies;
}
}  // namespace

bool has_source_field(const Config& cfg) {
  if (!source_terms(cfg).empty()) return true;
  if (cfg.material.uniform()) return false;
  bool varies = false;
  for (int f = 0; f < 2 * cfg.dimensions; ++f)
    if (flux_face(cfg, f, &varies)) return true;
  return false;
}

bool source_refilled_on_host(const Config& cfg) {
  if (cfg.problem != ProblemType::Heat) return false;
  const std::vector<Shape> terms = source_terms(cfg);
  bool terms_vary = false;
  for (const Shape& s : terms) terms_vary = terms_vary || s.varies();
  if (cfg.material.uniform()) return terms_vary && terms.size() > 1;
  bool flux_varies = false;
  for (int f = 0; f < 2 * cfg.dimensions; ++f) {
    bool varies = false;
    if (flux_face(cfg, f, &varies)) flux_varies = flux_varies || varies;
  }
  return terms_vary || flux_varies;
}

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

std::array<double, 2> separable_strength(const Shape& s) {
  switch (s.type) {
    case ShapeType::Uniform:
      return {s.value, 0.0};
    case ShapeType::Sine:
      return {0.0, s.amplitude};
    case ShapeType::Gaussian:
      return {s.value, s.amplitude};
    case ShapeType::Box:
      return {0.0, s.value};
    case ShapeType::None:
    case ShapeType::File:
      break;
  }
  throw std::invalid_argument("separable_shape: not a separable shape");
}

template <typename T>
SeparableSource<T> separable_shape(const Shape& s, const Config& cfg, const Domain& domain) {
  const GridDesc& g = domain.local;
  const int dims = g.dims;
  const std::array<double, 3> h{g.hx, g.hy, g.hz};
  const std::array<int, 3> n{g.nx, g.ny, dims == 3 ? g.nz : 1};
  const std::array<int, 3> total{domain.global.nx, domain.global.ny,
                                 dims == 3 ? domain.global.nz : 1};
  SeparableSource<T> form;
  const std::array<double, 2> strength = separable_strength(s);
  form.offset = static_cast<T>(strength[0]);
  form.scale = static_cast<T>(strength[1]);
  // The factor of axis d at local cell i.
  const auto factor = [&](int d, int i) {
    int gi = domain.block.offset[d] + i;
    gi = ((gi % total[d]) + total[d]) % total[d];
    const double x = cfg.origin[d] + (gi + 0.5) * h[d];
    switch (s.type) {
      case ShapeType::Sine:
        return std::sin(M_PI * (x - cfg.origin[d]) / cfg.length[d]);
      case ShapeType::Gaussian:
        return std::exp(-(x - s.center[d]) * (x - s.center[d]) / (2 * s.width * s.width));
      case ShapeType::Box:
        return x < s.lower[d] || x > s.upper[d] ? 0.0 : 1.0;
      default:
        return 1.0;
    }
  };
  const int stream = dims - 1;
  const std::int64_t ss = dims == 3 ? g.stride_z() : g.stride_y();
  form.plane.assign(std::size_t(ss), T(0));
  for (int j = 0; j < (dims == 3 ? n[1] : 1); ++j)
    for (int i = 0; i < n[0]; ++i) {
      const double p = dims == 3 ? factor(0, i) * factor(1, j) : factor(0, i);
      form.plane[std::size_t(g.index(i, j, 0) - ss)] = static_cast<T>(p);
    }
  form.column.resize(std::size_t(n[stream]));
  for (int k = 0; k < n[stream]; ++k)
    form.column[std::size_t(k)] = static_cast<T>(factor(stream, k));
  return form;
}

template <typename T>
void fill_separable(std::vector<T>& padded, const SeparableSource<T>& form, const GridDesc& g) {
  padded.assign(g.padded_size(), T(0));
  fill_separable_interior(padded.data(), g, form.offset, form.scale, form.plane.data(),
                          form.column.data());
}

template SeparableSource<float> separable_shape<float>(const Shape&, const Config&, const Domain&);
template SeparableSource<double> separable_shape<double>(const Shape&, const Config&,
                                                         const Domain&);
template void fill_separable<float>(std::vector<float>&, const SeparableSource<float>&,
                                    const GridDesc&);
template void fill_separable<double>(std::vector<double>&, const SeparableSource<double>&,
                                     const GridDesc&);
template void fill_shape<float>(std::vector<float>&, const Shape&, const Config&, const Domain&);
template void fill_shape<double>(std::vector<double>&, const Shape&, const Config&, const Domain&);

}  // namespace heatsolve
