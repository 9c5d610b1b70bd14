#include "io/field_writer.hpp"

#include <stdexcept>
#include <string>

namespace heatsolve {

OutputGrid output_grid(const Config& cfg) {
  OutputGrid g;
  g.dims = cfg.dimensions;
  g.origin = cfg.origin;
  g.problem = cfg.problem;
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

namespace {
std::string triple(const std::array<int, 3>& v) {
  return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
}
}  // namespace

void check_output_grid(const OutputGrid& g, const std::string& what) {
  bool ok = (g.dims == 2 || g.dims == 3) && (g.dims == 3 || g.cells[2] == 1);
  for (int a = 0; a < 3; ++a) ok = ok && g.cells[a] > 0;
  if (!ok)
    throw std::runtime_error(what + ": invalid grid (dims " + std::to_string(g.dims) + ", cells " +
                             triple(g.cells) + ")");
}

void check_output_block(const OutputGrid& g, const Block& b, const std::string& what) {
  for (int a = 0; a < 3; ++a)
    if (b.offset[a] < 0 || b.count[a] < 0 ||
        static_cast<long long>(b.offset[a]) + b.count[a] > g.cells[a])
      throw std::runtime_error(what + ": block at offset " + triple(b.offset) + " with count " +
                               triple(b.count) + " lies outside the grid " + triple(g.cells));
}

}  // namespace heatsolve
