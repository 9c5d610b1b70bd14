#include "solvers/operator/conductance.hpp"

#include <cmath>
#include <stdexcept>

namespace heatsolve {

namespace {
double spacing(const GridDesc& g, int a) {
  return a == 0 ? g.hx : a == 1 ? g.hy : g.hz;
}
int extent(const GridDesc& g, int a) {
  return a == 0 ? g.nx : a == 1 ? g.ny : (g.dims == 3 ? g.nz : 1);
}
std::int64_t stride(const GridDesc& g, int a) {
  return a == 0 ? 1 : a == 1 ? g.stride_y() : g.stride_z();
}
}  // namespace

double ConductanceLevel::lower(int a, std::int64_t i) const {
  return k.empty() ? half[2 * a][i] : spacing(g, a) / (2 * k[i]);
}
double ConductanceLevel::upper(int a, std::int64_t i) const {
  return k.empty() ? half[2 * a + 1][i] : spacing(g, a) / (2 * k[i]);
}

Exterior exterior_resistances(const BoundaryFaces& faces) {
  Exterior e;
  for (int f = 0; f < 6; ++f) {
    switch (faces[f].type) {
      case BoundaryType::Dirichlet:
        e[f] = 0;
        break;
      case BoundaryType::Convective:
        e[f] = faces[f].coeff > 0 ? 1 / faces[f].coeff : kNoCoupling;
        break;
      case BoundaryType::Neumann:
      case BoundaryType::HeatFlux:
        e[f] = kNoCoupling;
        break;
      default:  // Exchange, Periodic: cells on the other side
        e[f] = std::numeric_limits<double>::quiet_NaN();
        break;
    }
  }
  return e;
}

std::vector<double> face_couplings(const ConductanceLevel& level, const Exterior& exterior, int a) {
  const GridDesc& g = level.g;
  std::vector<double> w(g.padded_size(), 0.0);
  const int n[3] = {extent(g, 0), extent(g, 1), extent(g, 2)};
  int hi[3] = {n[0], n[1], n[2]};
  hi[a] = n[a] + 1;
  const std::int64_t s = stride(g, a);
  const double h = spacing(g, a);
  const bool d3 = g.dims == 3;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < hi[2]; ++k)
    for (int j = 0; j < hi[1]; ++j)
      for (int i = 0; i < hi[0]; ++i) {
        const int c[3] = {i, j, k};
        const std::int64_t idx = g.index(i, j, d3 ? k : 0);
        const double lo_ext = exterior[2 * a], hi_ext = exterior[2 * a + 1];
        double r;
        if (c[a] == 0 && !std::isnan(lo_ext))
          r = level.lower(a, idx) + lo_ext;
        else if (c[a] == n[a] && !std::isnan(hi_ext))
          r = level.upper(a, idx - s) + hi_ext;
        else
          r = level.upper(a, idx - s) + level.lower(a, idx);
        w[idx] = std::isinf(r) ? 0.0 : 1.0 / (r * h);
      }
  return w;
}

ConductanceLevel coarsen(const ConductanceLevel& fine, const GridDesc& coarse) {
  const GridDesc& gf = fine.g;
  ConductanceLevel c;
  c.g = coarse;
  int r[3] = {1, 1, 1};
  for (int a = 0; a < gf.dims; ++a) r[a] = spacing(coarse, a) != spacing(gf, a) ? 2 : 1;
  const bool d3 = gf.dims == 3;
  for (int a = 0; a < gf.dims; ++a) {
    std::vector<double>& lo = c.half[2 * a];
    std::vector<double>& up = c.half[2 * a + 1];
    lo.assign(coarse.padded_size(), 0.0);
    up.assign(coarse.padded_size(), 0.0);
    // The transverse children are parallel columns; along a a coarse half is one fine cell
    // (ratio 2: both its halves in series) or the fine cell's own half (ratio 1).
    const int cols[3] = {a == 0 ? 1 : r[0], a == 1 ? 1 : r[1], a == 2 ? 1 : r[2]};
    const double ncols = double(cols[0] * cols[1] * (d3 ? cols[2] : 1));
#pragma omp parallel for collapse(2) schedule(static)
    for (int K = 0; K < extent(coarse, 2); ++K)
      for (int J = 0; J < coarse.ny; ++J)
        for (int I = 0; I < coarse.nx; ++I) {
          const int C[3] = {I, J, K};
          double g_lo = 0, g_up = 0;  // conductances of the columns, summed
          for (int dk = 0; dk < (d3 ? cols[2] : 1); ++dk)
            for (int dj = 0; dj < cols[1]; ++dj)
              for (int di = 0; di < cols[0]; ++di) {
                int f[3] = {C[0] * r[0] + di, C[1] * r[1] + dj, C[2] * r[2] + dk};
                f[a] = C[a] * r[a];
                const std::int64_t first = gf.index(f[0], f[1], d3 ? f[2] : 0);
                if (r[a] == 2) {
                  const std::int64_t second = first + stride(gf, a);
                  g_lo += 1 / (fine.lower(a, first) + fine.upper(a, first));
                  g_up += 1 / (fine.lower(a, second) + fine.upper(a, second));
                } else {
                  g_lo += 1 / fine.lower(a, first);
                  g_up += 1 / fine.upper(a, first);
                }
              }
          const std::int64_t idx = coarse.index(I, J, d3 ? K : 0);
          lo[idx] = ncols / g_lo;
          up[idx] = ncols / g_up;
        }
  }
  return c;
}

void wrap_periodic(ConductanceLevel& level, const BoundaryFaces& faces) {
  const GridDesc& g = level.g;
  const bool d3 = g.dims == 3;
  for (int a = 0; a < g.dims; ++a) {
    if (faces[2 * a].type != BoundaryType::Periodic) continue;
    const int n = extent(g, a);
    const std::int64_t s = stride(g, a);
    int hi[3] = {extent(g, 0), extent(g, 1), extent(g, 2)};
    hi[a] = 1;
    for (int k = 0; k < hi[2]; ++k)
      for (int j = 0; j < hi[1]; ++j)
        for (int i = 0; i < hi[0]; ++i) {
          const std::int64_t first = g.index(i, j, d3 ? k : 0);  // the cell at 0 along a
          const std::int64_t last = first + (n - 1) * s;
          if (!level.k.empty()) {
            level.k[first - s] = level.k[last];
            level.k[last + s] = level.k[first];
            continue;
          }
          for (int b = 0; b < 6; ++b) {
            std::vector<double>& h = level.half[b];
            if (h.empty()) continue;
            h[first - s] = h[last];
            h[last + s] = h[first];
          }
        }
  }
}

}  // namespace heatsolve
