#include "solvers/problem/materials.hpp"

#include <array>

#include "io/materials.hpp"

namespace heatsolve {

namespace {
double spacing(const GridDesc& g, int axis) {
  return axis == 0 ? g.hx : axis == 1 ? g.hy : g.hz;
}
// A face of the domain's boundary (not a neighbour rank's, not periodic).
bool physical_face(const FaceBC& f) {
  return f.type != BoundaryType::Exchange && f.type != BoundaryType::Periodic;
}
}  // namespace

FaceBC lower_uniform_face(const FaceBC& deck, double h, double k) {
  switch (deck.type) {
    case BoundaryType::Convective: {
      // ghost = (1 - beta) inner + beta T_amb, beta = 2 Bi / (Bi + 2), Bi = h_c h / k: the face
      // value (ghost + inner) / 2 and gradient (ghost - inner) / h satisfy
      // -k du/dn = h_c (u - T_amb). h_c = 0: insulated (a = 1, b = 0).
      const double bi = deck.coeff * h / k;
      const double beta = 2 * bi / (bi + 2);
      return FaceBC{BoundaryType::Robin, beta * deck.value, 1 - beta};
    }
    case BoundaryType::HeatFlux:
      return FaceBC{BoundaryType::Neumann, deck.value / k};
    default:
      return deck;
  }
}

BoundaryFaces lower_uniform_faces(const BoundaryFaces& deck, const GridDesc& g, double k) {
  BoundaryFaces out = deck;
  for (int f = 0; f < 2 * g.dims; ++f) out[f] = lower_uniform_face(deck[f], spacing(g, f / 2), k);
  return out;
}

bool anchors(const FaceBC& deck) {
  return deck.type == BoundaryType::Dirichlet ||
         (deck.type == BoundaryType::Convective && deck.coeff > 0) ||
         (deck.type == BoundaryType::Robin && deck.coeff != 1);
}

BoundaryFaces variable_face_rules(const BoundaryFaces& deck, int dims) {
  BoundaryFaces faces = deck;
  for (int f = 0; f < 2 * dims; ++f) {
    FaceBC& face = faces[f];
    if (!physical_face(face)) continue;
    const double v = face.type == BoundaryType::Dirichlet || face.type == BoundaryType::Convective
                         ? face.value
                         : 0.0;
    face = FaceBC{BoundaryType::Fixed, v};
  }
  return faces;
}

void add_face_flux(std::vector<double>& flux, const GridDesc& g, const BoundaryFaces& deck,
                   const std::vector<double>& k) {
  const int ext[3] = {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
  for (int f = 0; f < 2 * g.dims; ++f) {
    const FaceBC& face = deck[f];
    if (face.type != BoundaryType::Neumann && face.type != BoundaryType::HeatFlux) continue;
    const int a = f / 2;
    const double h = spacing(g, a);
    int hi[3] = {ext[0], ext[1], ext[2]};
    hi[a] = 1;
    for (int kk = 0; kk < hi[2]; ++kk)
      for (int jj = 0; jj < hi[1]; ++jj)
        for (int ii = 0; ii < hi[0]; ++ii) {
          int c[3] = {ii, jj, kk};
          if (f % 2 == 1) c[a] = ext[a] - 1;
          const std::int64_t idx = g.index(c[0], c[1], g.dims == 3 ? c[2] : 0);
          // Neumann: outward du/dn = g, heat k g / h per volume; heat flux: q / h.
          flux[idx] +=
              face.type == BoundaryType::Neumann ? k[idx] * face.value / h : face.value / h;
        }
  }
}

template <typename T>
VariableProblem<T> variable_problem(const Config& cfg, const Domain& domain) {
  const GridDesc& g = domain.local;
  CellProperties props = sample_materials(cfg, g, domain.block.offset);
  VariableProblem<T> p;
  const std::size_t n = g.padded_size();
  p.capacity.resize(n);
  for (std::size_t i = 0; i < n; ++i) p.capacity[i] = static_cast<T>(props.heat_capacity[i]);
  auto level = std::make_shared<ConductanceLevel>();
  level->g = g;
  level->k = std::move(props.conductivity);
  p.exterior = exterior_resistances(domain.faces);
  std::vector<T>* w[3] = {&p.wx, &p.wy, &p.wz};
  for (int a = 0; a < g.dims; ++a) {
    const std::vector<double> wa = face_couplings(*level, p.exterior, a);
    w[a]->resize(n);
    for (std::size_t i = 0; i < n; ++i) (*w[a])[i] = static_cast<T>(wa[i]);
  }
  // Heat-flux and Neumann faces couple nothing: their flux enters the cells' source.
  p.flux_source.assign(n, 0.0);
  add_face_flux(p.flux_source, g, domain.faces, level->k);
  p.conductance = std::move(level);
  // Ghost rules: the exterior value where a face couples to one, 0 where it couples nothing.
  p.faces = variable_face_rules(domain.faces, g.dims);
  return p;
}

bool has_material_fields(const Config& cfg) {
  return cfg.material.physical || !cfg.material.uniform();
}

MaterialFields material_fields(const Config& cfg, const Domain& domain) {
  const GridDesc& g = domain.local;
  const CellProperties props = sample_materials(cfg, g, domain.block.offset);
  MaterialFields out;
  out.conductivity.reserve(domain.block.size());
  out.heat_capacity.reserve(domain.block.size());
  const int nz = g.dims == 3 ? g.nz : 1;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const std::int64_t idx = g.index(i, j, g.dims == 3 ? k : 0);
        out.conductivity.push_back(props.conductivity[idx]);
        out.heat_capacity.push_back(props.heat_capacity[idx]);
      }
  return out;
}

template VariableProblem<float> variable_problem<float>(const Config&, const Domain&);
template VariableProblem<double> variable_problem<double>(const Config&, const Domain&);

}  // namespace heatsolve
