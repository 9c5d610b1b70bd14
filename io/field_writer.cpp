#include "io/field_writer.hpp"

namespace heatsolve {

OutputGrid output_grid(const Config& cfg) {
  OutputGrid g;
  g.dims = cfg.dimensions;
  g.origin = cfg.origin;
  for (int a = 0; a < 3; ++a) {
    g.cells[a] = cfg.cells[a];
    g.spacing[a] = cfg.length[a] / cfg.cells[a];
  }
  if (g.dims == 2) {
    g.cells[2] = 1;
    g.spacing[2] = 1.0;
  }
  return g;
}

}  // namespace heatsolve
