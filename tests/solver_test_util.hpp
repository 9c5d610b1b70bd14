// Builders of resolved Configs for solver tests (no deck parsing involved).
#pragma once

#include <cmath>

#include "io/config.hpp"

namespace heatsolve::testing {

inline Config heat_config(int dims, int n, double end_time, double safety = 0.5) {
  Config c;
  c.name = "test";
  c.problem = ProblemType::Heat;
  c.dimensions = dims;
  c.cells = {n, n, dims == 3 ? n : 1};
  c.length = {1, 1, 1};
  c.diffusivity = 1.0;
  c.backend = BackendKind::Cpu;
  c.precision = Precision::Double;
  for (auto& f : c.boundary) f = FaceBC{BoundaryType::Dirichlet, 0.0};
  const double dt_max = stable_dt(c.grid(), c.diffusivity);
  c.steps = static_cast<std::int64_t>(std::ceil(end_time / (safety * dt_max)));
  c.dt = end_time / double(c.steps);
  c.end_time = end_time;
  c.formats.clear();
  return c;
}

inline Config poisson_config(int dims, int n) {
  Config c = heat_config(dims, n, 0.0);
  c.problem = ProblemType::Poisson;
  c.steps = 0;
  c.tolerance = 1e-10;
  c.max_iterations = 200000;
  c.check_every = 20;
  return c;
}

}  // namespace heatsolve::testing
