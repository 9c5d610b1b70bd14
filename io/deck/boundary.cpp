// Section reader for `boundary`: one condition per face (or `all`), periodic pairs checked.
#include <fmt/format.h>

#include <array>
#include <optional>

#include "io/deck/reader.hpp"

namespace heatsolve::deck_reader {

namespace {

// `convective`: -k du/dn = h (u - ambient); FaceBC value = ambient, coeff = h.
void read_convective_face(const MapView& v, FaceBC& f, ProblemType problem,
                          std::optional<TimeTable>& table) {
  f.coeff = v.required("h", nonnegative_number);
  f.value = v.required("ambient", [&](const DeckNode& e, const std::string& w) {
    return number_or_table(e, w, problem, table);
  });
}

// One face's condition; `table` receives the table over time of its value (dirichlet value,
// neumann flux, convective ambient, heat_flux value) when the deck gave one.
FaceBC read_face(const DeckNode& n, const std::string& path, ProblemType problem,
                 std::optional<TimeTable>& table) {
  FaceBC f;
  table.reset();
  f.type = choice(type_of(n, path), path + ".type",
                  {BoundaryType::Dirichlet, BoundaryType::Neumann, BoundaryType::Periodic,
                   BoundaryType::Convective, BoundaryType::HeatFlux});
  const auto value = [&](const DeckNode& e, const std::string& w) {
    return number_or_table(e, w, problem, table);
  };
  switch (f.type) {
    case BoundaryType::Dirichlet:
      f.value = MapView(n, path, {"type", "value"}).optional("value", 0.0, value);
      break;
    case BoundaryType::Neumann:
      f.value = MapView(n, path, {"type", "flux"}).optional("flux", 0.0, value);
      break;
    case BoundaryType::Convective:
      read_convective_face(MapView(n, path, {"type", "h", "ambient"}), f, problem, table);
      break;
    case BoundaryType::HeatFlux:
      f.value = MapView(n, path, {"type", "value"}).optional("value", 0.0, value);
      break;
    default:
      MapView(n, path, {"type"});
      break;
  }
  return f;
}

void check_periodic_pairs(const BoundaryFaces& faces, const std::array<Location, 6>& where,
                          int dims) {
  for (int axis = 0; axis < dims; ++axis) {
    const int lo = 2 * axis, hi = lo + 1;
    const bool p_lo = faces[lo].type == BoundaryType::Periodic;
    const bool p_hi = faces[hi].type == BoundaryType::Periodic;
    if (p_lo == p_hi) continue;
    const int periodic = p_lo ? lo : hi, other = p_lo ? hi : lo;
    fail(where[periodic],
         fmt::format("boundary.{}: periodic must be set on both {} and {}, but {} is {}",
                     kFaceNames[periodic], kFaceNames[lo], kFaceNames[hi], kFaceNames[other],
                     to_string(faces[other].type)));
  }
}

// A convective or heat-flux face opposite a periodic one: the axis wraps, it has no face.
void check_flux_faces(const BoundaryFaces& faces, const std::array<Location, 6>& where, int dims) {
  for (int f = 0; f < 2 * dims; ++f) {
    const BoundaryType t = faces[f].type;
    if (t != BoundaryType::Convective && t != BoundaryType::HeatFlux) continue;
    const int other = f ^ 1;
    if (faces[other].type == BoundaryType::Periodic)
      fail(where[f], fmt::format("boundary.{}: a {} face cannot lie on a periodic axis ({} is "
                                 "periodic)",
                                 kFaceNames[f], to_string(t), kFaceNames[other]));
  }
}

}  // namespace

void read_boundary(const DeckNode& n, Config& cfg) {
  std::vector<std::string> valid{"all"};
  valid.insert(valid.end(), kFaceNames.begin(), kFaceNames.end());
  const MapView v(n, "boundary", valid);
  FaceBC all;
  std::optional<TimeTable> all_table;
  std::array<Location, 6> where;
  where.fill(v.loc());
  if (const DeckNode* a = v.get("all")) {
    all = read_face(*a, v.path("all"), cfg.problem, all_table);
    where.fill(a->loc);
  }
  cfg.boundary.fill(all);
  cfg.boundary_tables.fill(all_table);
  for (std::size_t i = 0; i < kFaceNames.size(); ++i) {
    const DeckNode* face = v.get(kFaceNames[i]);
    if (!face) continue;
    if (static_cast<int>(i) >= 2 * cfg.dimensions)
      fail(v.key_loc(kFaceNames[i]),
           fmt::format("boundary.{}: a 2D problem has no z faces", kFaceNames[i]));
    cfg.boundary[i] = read_face(*face, v.path(kFaceNames[i]), cfg.problem, cfg.boundary_tables[i]);
    where[i] = face->loc;
  }
  check_flux_faces(cfg.boundary, where, cfg.dimensions);
  check_periodic_pairs(cfg.boundary, where, cfg.dimensions);
}

}  // namespace heatsolve::deck_reader
