// The deck helpers and the independent reference shared by the materials tests
// (test_materials.cpp, test_materials_file.cpp): cell centres, region membership, properties,
// the ghost rules checked per block, and a brute-force stability limit.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "io/deck.hpp"
#include "io/materials.hpp"
#include "tests/io/deck_error.hpp"

namespace heatsolve::materials_reference {

namespace fs = std::filesystem;

inline Config parse(const std::string& text, const std::string& source = "test.yaml") {
  return parse_deck(text, source);
}

inline DeckError parse_error(const std::string& text, const std::string& source = "test.yaml") {
  return test_support::deck_error_of(text, [&] { parse(text, source); });
}

inline std::string head(int dims, const std::string& cells, const std::string& problem = "heat") {
  return "name: t\nproblem: {type: " + problem + ", dimensions: " + std::to_string(dims) +
         "}\ngrid: " + cells + "\n" + (problem == "heat" ? "time: {steps: 10}\n" : "time:\n");
}

// Five lines: materials sections start on line 6.
inline const std::string kHead3 = head(3, "{cells: [8, 8, 8]}") +
                                  "material: {conductivity: 45.0, "
                                  "density: 7850.0, specific_heat: "
                                  "490.0}\n";

// ---- Independent reference: cell centres, membership, properties --------------------------

inline double centre(const Config& c, int d, int g) {
  return c.origin[d] + (g + 0.5) * (c.length[d] / c.cells[d]);
}

inline bool inside(const Config& c, const Region& r, const std::array<int, 3>& g) {
  const int dims = c.dimensions;
  std::array<double, 3> x{0, 0, 0};
  for (int d = 0; d < dims; ++d) x[d] = centre(c, d, g[d]);
  switch (r.kind) {
    case RegionKind::File:
      return true;
    case RegionKind::Box:
      for (int d = 0; d < dims; ++d)
        if (x[d] < r.lower[d] || x[d] > r.upper[d]) return false;
      return true;
    case RegionKind::Sphere: {
      double s = 0;
      for (int d = 0; d < dims; ++d) s += (x[d] - r.center[d]) * (x[d] - r.center[d]);
      return s <= r.radius * r.radius;
    }
    case RegionKind::Cylinder: {
      const int p = r.axis == 0 ? 1 : 0, q = r.axis == 2 ? 1 : 2;
      const double dp = x[p] - r.center[0], dq = x[q] - r.center[1];
      return dp * dp + dq * dq <= r.radius * r.radius;
    }
  }
  return false;
}

// k and rho cp of a global cell, geometric regions only.
inline std::pair<double, double> reference(const Config& c, const std::array<int, 3>& g) {
  double k = c.material.conductivity, rho = c.material.density, cp = c.material.specific_heat;
  for (const MaterialRegion& e : c.material.regions) {
    if (!inside(c, e.region, g)) continue;
    if (e.conductivity) k = *e.conductivity;
    if (e.density) rho = *e.density;
    if (e.specific_heat) cp = *e.specific_heat;
  }
  return {k, rho * cp};
}

template <typename F>
void for_each_cell(const Config& c, F f) {
  const int nz = c.dimensions == 3 ? c.cells[2] : 1;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < c.cells[1]; ++j)
      for (int i = 0; i < c.cells[0]; ++i) f(std::array<int, 3>{i, j, k});
}

inline GridDesc block(const Config& c, const std::array<int, 3>& n) {
  GridDesc g = c.grid();
  g.nx = n[0];
  g.ny = n[1];
  g.nz = c.dimensions == 3 ? n[2] : 1;
  return g;
}

// ---- Ghost rules: each block's padded cells against the whole-grid sample --------------------

// The global cell a padded index stands for under the deck's faces (the contract's rules).
inline int source_of(const Config& c, int d, int off, int l) {
  const int n = c.cells[d], g = off + l;
  const bool periodic = c.boundary[2 * d].type == BoundaryType::Periodic;
  if (g < 0) return periodic ? g + n : 0;
  if (g >= n) return periodic ? g - n : n - 1;
  return g;
}

// Splits every axis into `parts` blocks and checks each block's interior and face ghosts
// bit for bit against the whole grid's interior; edge and corner ghosts must be finite.
inline void check_blocks(const Config& c, const std::array<std::vector<int>, 3>& cuts) {
  const GridDesc whole = c.grid();
  const CellProperties all = sample_materials(c, whole, {0, 0, 0});
  const int dims = c.dimensions;
  const std::vector<int> zcuts = dims == 3 ? cuts[2] : std::vector<int>{0, 1};
  for (std::size_t bz = 0; bz + 1 < zcuts.size(); ++bz)
    for (std::size_t by = 0; by + 1 < cuts[1].size(); ++by)
      for (std::size_t bx = 0; bx + 1 < cuts[0].size(); ++bx) {
        const std::array<int, 3> off{cuts[0][bx], cuts[1][by], zcuts[bz]};
        const std::array<int, 3> n{cuts[0][bx + 1] - off[0], cuts[1][by + 1] - off[1],
                                   zcuts[bz + 1] - off[2]};
        const GridDesc local = block(c, n);
        const CellProperties p =
            sample_materials(c, local, dims == 3 ? off : std::array<int, 3>{off[0], off[1], 0});
        ASSERT_EQ(p.conductivity.size(), local.padded_size());
        const int klo = dims == 3 ? -1 : 0, khi = dims == 3 ? n[2] : 0;
        for (int k = klo; k <= khi; ++k)
          for (int j = -1; j <= n[1]; ++j)
            for (int i = -1; i <= n[0]; ++i) {
              const std::int64_t at = local.index(i, j, k);
              const int outside =
                  (i < 0 || i >= n[0]) + (j < 0 || j >= n[1]) + (dims == 3 && (k < 0 || k >= n[2]));
              ASSERT_TRUE(std::isfinite(p.conductivity[at]) && std::isfinite(p.heat_capacity[at]));
              if (outside > 1) continue;  // edges and corners: anything finite
              const int gi = source_of(c, 0, off[0], i), gj = source_of(c, 1, off[1], j);
              const int gk = dims == 3 ? source_of(c, 2, off[2], k) : 0;
              const std::int64_t w = whole.index(gi, gj, gk);
              ASSERT_EQ(p.conductivity[at], all.conductivity[w])
                  << "block at " << off[0] << "," << off[1] << "," << off[2] << " cell " << i << ","
                  << j << "," << k;
              ASSERT_EQ(p.heat_capacity[at], all.heat_capacity[w]);
            }
      }
}

// ---- Stability limit -----------------------------------------------------------------------

using Properties = std::function<std::pair<double, double>(const std::array<int, 3>&)>;

// min over cells of rho cp / sum_f K_f / h_f^2 from whole-grid arrays of `properties` (default:
// the reference).
inline double brute_force_dt(const Config& c, Properties properties = {}) {
  if (!properties) properties = [&](const std::array<int, 3>& g) { return reference(c, g); };
  const int dims = c.dimensions;
  const std::array<int, 3> n{c.cells[0], c.cells[1], dims == 3 ? c.cells[2] : 1};
  std::vector<double> k(static_cast<std::size_t>(n[0] * n[1] * n[2])), heat(k.size());
  const auto lin = [&](const std::array<int, 3>& g) { return (g[2] * n[1] + g[1]) * n[0] + g[0]; };
  for_each_cell(
      c, [&](const std::array<int, 3>& g) { std::tie(k[lin(g)], heat[lin(g)]) = properties(g); });
  double best = std::numeric_limits<double>::infinity();
  for_each_cell(c, [&](const std::array<int, 3>& g) {
    const double ki = k[lin(g)];
    double s = 0;
    for (int d = 0; d < dims; ++d) {
      const double h = c.length[d] / c.cells[d];
      const bool periodic = c.boundary[2 * d].type == BoundaryType::Periodic;
      for (int side : {-1, 1}) {
        std::array<int, 3> m = g;
        m[d] += side;
        double kf = ki;
        if (m[d] < 0 || m[d] >= n[d]) {
          if (periodic) m[d] = (m[d] + n[d]) % n[d];
        }
        if (m[d] >= 0 && m[d] < n[d]) {
          const double kn = k[lin(m)];
          kf = 2 * ki * kn / (ki + kn);
        }
        s += kf / (h * h);
      }
    }
    best = std::min(best, heat[lin(g)] / s);
  });
  return best;
}

}  // namespace heatsolve::materials_reference
