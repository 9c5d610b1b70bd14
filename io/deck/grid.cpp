// Section readers for name, problem, grid, material, materials and time (the time step and
// step count; their alignment to output times is in io/deck.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>

#include "io/deck/reader.hpp"
#include "io/materials.hpp"

namespace heatsolve::deck_reader {

namespace {

// The files a run names after `name` must fit the 255-byte limit of a file name (the longest:
// `<name>_vti/<name>_<step>_<rank>.vti.tmp.<pid>`, about 30 more characters).
constexpr std::size_t kMaxNameLength = 200;
void check_name_length(const DeckNode& n, const std::string& name) {
  if (name.size() > kMaxNameLength)
    fail(n.loc, fmt::format("name: {} characters is too long (at most {}: the output files are "
                            "named after it, and file names have at most 255 bytes)",
                            name.size(), kMaxNameLength));
}

}  // namespace

void read_name(const MapView& top, Config& cfg) {
  const DeckNode& n = top.require("name");
  cfg.name = text(n, "name");
  const auto ok = [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  };
  if (!std::all_of(cfg.name.begin(), cfg.name.end(), ok) || cfg.name[0] == '.' ||
      cfg.name[0] == '-')
    fail(n.loc, fmt::format("name: '{}' may contain only letters, digits, '_', '-' and '.', and "
                            "must start with a letter, digit or '_'",
                            cfg.name));
  check_name_length(n, cfg.name);
}

void read_problem(const DeckNode& n, Config& cfg) {
  const MapView v(n, "problem", {"type", "dimensions"});
  cfg.problem = v.required("type", [](const DeckNode& t, const std::string& what) {
    return choice(t, what, {ProblemType::Heat, ProblemType::Poisson});
  });
  const DeckNode& dims = v.require("dimensions");
  const std::int64_t d = integer(dims, v.path("dimensions"), 1);
  if (d != 2 && d != 3)
    fail(dims.loc, fmt::format("problem.dimensions: expected 2 or 3, got {}", dims.scalar));
  cfg.dimensions = static_cast<int>(d);
}

namespace {

// Keeps the padded array size far from integer overflow.
void check_total_size(const DeckNode& cells_node, const std::array<int, 3>& cells) {
  constexpr double kMaxPadded = 281474976710656.0;  // 2^48 values
  double padded = 1;
  for (int c : cells) padded *= c + 2.0;
  if (padded > kMaxPadded)
    fail(cells_node.loc, fmt::format("grid.cells: {} x {} x {} cells is too large (at most 2^48 "
                                     "values including ghost cells)",
                                     cells[0], cells[1], cells[2]));
}

// Cell sizes whose 1/h^2 stencil weight over- or underflows would only turn into NaN or
// Inf mid-run: refuse them here.
void check_spacing(const MapView& v, const Config& cfg) {
  constexpr double kMinH = 1e-150, kMaxH = 1e150;
  for (int d = 0; d < cfg.dimensions; ++d) {
    const double h = cfg.length[d] / cfg.cells[d];
    const DeckNode* at = v.get("length") ? v.get("length") : v.get("cells");
    if (!(h >= kMinH && h <= kMaxH))
      fail(at->loc, fmt::format("grid: cell size length[{}]/cells[{}] = {:g} is outside the "
                                "usable range [{:g}, {:g}]",
                                d, d, h, kMinH, kMaxH));
  }
}

// Cell centres are computed as origin + (i + 1/2) h in double: an origin so far from 0 that
// the centres' offsets from it lose their digits (grid.origin: 1e17 with h = 1/64 rounds
// every centre to the origin, and a sine field to zeros) is refused. The rounding of a
// coordinate, |x| 2^-52, must stay below 1e-6 of a cell.
void check_origin_precision(const DeckNode& origin, const Config& cfg) {
  constexpr double kMaxRoundingPerCell = 1e-6;
  for (int d = 0; d < cfg.dimensions; ++d) {
    const double h = cfg.length[d] / cfg.cells[d];
    const double far = std::max(std::abs(cfg.origin[d]), std::abs(cfg.origin[d] + cfg.length[d]));
    if (far * std::numeric_limits<double>::epsilon() > kMaxRoundingPerCell * h)
      fail(origin.items[std::size_t(d)].loc,
           fmt::format("grid.origin[{}]: {:g} is too far from 0 for cells of size {:g}: cell "
                       "centres there are rounded by {:.3g} cells in double precision (at most "
                       "{:g}; keep |origin| below {:.3g}, e.g. by shifting the coordinates)",
                       d, cfg.origin[d], h, far * std::numeric_limits<double>::epsilon() / h,
                       kMaxRoundingPerCell,
                       kMaxRoundingPerCell * h / std::numeric_limits<double>::epsilon()));
  }
}

}  // namespace

void read_grid(const DeckNode& n, Config& cfg) {
  constexpr std::int64_t kMaxCells = std::int64_t{1} << 30;
  const MapView v(n, "grid", {"cells", "length", "origin"});
  const int dims = cfg.dimensions;
  cfg.cells = v.required("cells", [&](const DeckNode& c, const std::string& what) {
    return per_axis(c, what, dims, 1, [&](const DeckNode& e, const std::string& w) {
      return static_cast<int>(integer(e, w, 1, kMaxCells));
    });
  });
  check_total_size(*v.get("cells"), cfg.cells);
  const auto lengths = [&](const DeckNode& c, const std::string& what) {
    return per_axis(c, what, dims, 1.0, positive_number);
  };
  const auto points = [&](const DeckNode& c, const std::string& what) {
    return per_axis(c, what, dims, 0.0, number);
  };
  cfg.length = v.optional("length", cfg.length, lengths);
  cfg.origin = v.optional("origin", cfg.origin, points);
  check_spacing(v, cfg);
  if (const DeckNode* origin = v.get("origin")) check_origin_precision(*origin, cfg);
}

// ---- Materials: `material`, `materials` (docs/deck.md "Materials"; io/materials.hpp) --------

namespace {

const std::vector<std::string> kPhysicalKeys{"conductivity", "density", "specific_heat"};

}  // namespace

// `material`: {diffusivity} (today's meaning: k = diffusivity, rho cp = 1; Poisson: k = 1) or
// the physical properties {conductivity, density, specific_heat} (SI).
void read_material(const DeckNode& n, Config& cfg) {
  const MapView v(n, "material", {"diffusivity", "conductivity", "density", "specific_heat"});
  Materials& m = cfg.material;
  const DeckNode* physical = nullptr;  // the first physical key given, in deck order
  std::string physical_key;
  for (std::size_t i = 0; i < n.keys.size() && !physical; ++i)
    if (std::find(kPhysicalKeys.begin(), kPhysicalKeys.end(), n.keys[i]) != kPhysicalKeys.end())
      physical = &n.items[i], physical_key = n.keys[i];
  if (!physical) {
    cfg.diffusivity = v.optional("diffusivity", cfg.diffusivity, positive_number);
    m.physical = false;
    m.conductivity = cfg.problem == ProblemType::Heat ? cfg.diffusivity : 1.0;
    return;
  }
  if (v.get("diffusivity")) {
    // Reported at whichever of the two comes second.
    const bool diffusivity_later = *n.index_of("diffusivity") > *n.index_of(physical_key);
    fail(v.key_loc(diffusivity_later ? "diffusivity" : physical_key),
         fmt::format("material: give either 'diffusivity' (k/(rho cp), today's meaning) or "
                     "'conductivity' with 'density' and 'specific_heat', not both ('{}' and "
                     "'diffusivity' are given)",
                     physical_key));
  }
  m.physical = true;
  if (!v.get("conductivity"))
    fail(v.loc(),
         fmt::format("missing required key 'material.conductivity' ('{}' needs it)", physical_key));
  m.conductivity = v.required("conductivity", positive_number);
  if (cfg.problem == ProblemType::Heat)
    for (const char* key : {"density", "specific_heat"})
      if (!v.get(key))
        fail(v.loc(), fmt::format("missing required key 'material.{}' (a heat problem with "
                                  "material.conductivity needs density and specific_heat; or "
                                  "give material.diffusivity alone)",
                                  key));
  m.density = v.optional("density", 1.0, positive_number);
  m.specific_heat = v.optional("specific_heat", 1.0, positive_number);
  cfg.diffusivity = m.conductivity / m.heat_capacity();
  if (!std::isfinite(cfg.diffusivity) || cfg.diffusivity <= 0)
    fail(v.loc(), fmt::format("material: the diffusivity k/(rho cp) = {:g}/({:g}*{:g}) = {:g} is "
                              "outside the usable range",
                              m.conductivity, m.density, m.specific_heat, cfg.diffusivity));
}

namespace {

const std::vector<std::string> kRegionKinds{"box", "sphere", "cylinder", "file"};

// Upper corner above the lower one on every axis (a box region).
void check_corners(const MapView& v, int dims, const Region& r) {
  for (int d = 0; d < dims; ++d)
    if (r.upper[d] <= r.lower[d])
      fail(v.require("upper").items[d].loc,
           fmt::format("{}: upper corner must exceed the lower one on every axis, but upper[{}] "
                       "= {} <= lower[{}] = {}",
                       v.path("upper"), d, r.upper[d], d, r.lower[d]));
}

// A region's file: `path` (relative to the deck's directory), `dataset`, `property` (default:
// the dataset's name when it names a property).
void read_file_region(const MapView& v, Region& r, MaterialRegion& entry) {
  const DeckNode& path = v.require("path");
  r.path = deck_relative_path(text(path, v.path("path")), path.loc);
  r.dataset = v.required("dataset", text);
  if (const DeckNode* p = v.get("property")) {
    entry.file_property =
        static_cast<MaterialProperty>(choice_index(*p, v.path("property"), kPhysicalKeys));
    return;
  }
  const std::string name = r.dataset.substr(r.dataset.find_last_of('/') + 1);
  const auto it = std::find(kPhysicalKeys.begin(), kPhysicalKeys.end(), name);
  if (it == kPhysicalKeys.end())
    fail(v.loc(), fmt::format("missing required key '{}' (the dataset's name '{}' is not a "
                              "property: {})",
                              v.path("property"), name, join(kPhysicalKeys)));
  entry.file_property = static_cast<MaterialProperty>(it - kPhysicalKeys.begin());
}

// `region: {box | sphere | cylinder | file: {...}}`: exactly one kind.
Region read_region(const DeckNode& n, const std::string& path, const Config& cfg,
                   MaterialRegion& entry) {
  if (n.kind != Kind::Map)
    expected(n, path, fmt::format("a mapping with one region kind ({})", join(kRegionKinds)));
  for (std::size_t i = 0; i < n.keys.size(); ++i)
    if (std::find(kRegionKinds.begin(), kRegionKinds.end(), n.keys[i]) == kRegionKinds.end())
      fail(n.key_locs[i],
           fmt::format("unknown region kind '{}' in '{}'{}; valid kinds: {}", n.keys[i], path,
                       did_you_mean(n.keys[i], kRegionKinds), join(kRegionKinds)));
  if (n.keys.empty())
    fail(n.loc, fmt::format("{}: expected one region kind ({})", path, join(kRegionKinds)));
  if (n.keys.size() > 1)
    fail(n.key_locs[1], fmt::format("{}: give one region kind, not both '{}' and '{}'", path,
                                    n.keys[0], n.keys[1]));
  const std::string& kind = n.keys[0];
  const std::string kind_path = path + "." + kind;
  const DeckNode& body = n.items[0];
  const int dims = cfg.dimensions;
  const auto points = [&](const DeckNode& c, const std::string& what) {
    return per_axis(c, what, dims, 0.0, number);
  };
  Region r;
  r.kind = static_cast<RegionKind>(std::find(kRegionKinds.begin(), kRegionKinds.end(), kind) -
                                   kRegionKinds.begin());
  switch (r.kind) {
    case RegionKind::Box: {
      const MapView v(body, kind_path, {"lower", "upper"});
      r.lower = v.required("lower", points);
      r.upper = v.required("upper", points);
      check_corners(v, dims, r);
      break;
    }
    case RegionKind::Sphere: {
      const MapView v(body, kind_path, {"center", "radius"});
      r.center = v.required("center", points);
      r.radius = v.required("radius", positive_number);
      break;
    }
    case RegionKind::Cylinder: {
      const MapView v(body, kind_path, {"axis", "center", "radius"});
      const DeckNode& axis = v.require("axis");
      r.axis = static_cast<int>(choice_index(axis, v.path("axis"), {"x", "y", "z"}));
      if (dims == 2 && r.axis != 2)
        fail(axis.loc, fmt::format("{}: a 2D cylinder is a disk: its axis must be z, got '{}'",
                                   v.path("axis"), axis.scalar));
      const char* others[] = {"y, z", "x, z", "x, y"};
      r.center = v.required("center", [&](const DeckNode& c, const std::string& what) {
        const auto& items =
            list(c, what, 2, fmt::format(" (the axis' position in {})", others[r.axis]));
        return std::array<double, 3>{number(items[0], element(what, 0)),
                                     number(items[1], element(what, 1)), 0.0};
      });
      r.radius = v.required("radius", positive_number);
      break;
    }
    case RegionKind::File:
      read_file_region(MapView(body, kind_path, {"path", "dataset", "property"}), r, entry);
      break;
  }
  return r;
}

// A file region's data must be usable (HDF5, the grid's shape, positive finite values),
// reported at the key concerned.
void check_file_data(const DeckNode& region, const std::string& path, const Config& cfg,
                     const Region& r) {
  const DeckNode& file = region.items[0];
  try {
    check_file_region(cfg, r);
  } catch (const MaterialsError& e) {
    switch (e.part()) {
      case MaterialsError::Part::Kind:
        fail(region.key_locs[0], fmt::format("{}.file: {}", path, e.what()));
      case MaterialsError::Part::Path:
        fail(file.find("path")->loc, fmt::format("{}.file.path: {}", path, e.what()));
      case MaterialsError::Part::Dataset:
        fail(file.find("dataset")->loc, fmt::format("{}.file.dataset: {}", path, e.what()));
    }
    throw;
  } catch (const std::exception& e) {  // an HDF5 failure past the checks (a damaged file)
    fail(file.find("dataset")->loc, fmt::format("{}.file.dataset: {}", path, e.what()));
  }
}

// One `materials` entry: {region: {...}, conductivity, density, specific_heat}.
MaterialRegion read_material_entry(const DeckNode& n, const std::string& path, const Config& cfg) {
  if (n.kind != Kind::Map)
    expected(n, path, "a mapping {region: {...}, conductivity: ..., density: ..., ...}");
  const MapView v(n, path, {"region", "conductivity", "density", "specific_heat"});
  MaterialRegion e;
  const DeckNode& region = v.require("region");
  e.region = read_region(region, v.path("region"), cfg, e);
  const bool file = e.region.kind == RegionKind::File;
  for (const std::string& key : kPhysicalKeys) {
    if (!v.get(key)) continue;
    if (file)
      fail(v.key_loc(key), fmt::format("{}: a file region takes its values from its dataset "
                                       "(region.file.property); a value for every cell "
                                       "belongs in 'material'",
                                       v.path(key)));
    if (!cfg.material.physical && key != "conductivity")
      fail(v.key_loc(key), fmt::format("{}: regions set density and specific_heat only when "
                                       "'material' gives conductivity, density and "
                                       "specific_heat; with material.diffusivity a region sets "
                                       "conductivity alone (its diffusivity)",
                                       v.path(key)));
  }
  if (file) {
    if (!cfg.material.physical && e.file_property != MaterialProperty::Conductivity) {
      const DeckNode& body = region.items[0];
      const DeckNode* at = body.find("property") ? body.find("property") : body.find("dataset");
      fail(at->loc, fmt::format("{}.file: a {} file needs 'material' with conductivity, density "
                                "and specific_heat; with material.diffusivity a file region "
                                "gives conductivity alone",
                                v.path("region"), to_string(e.file_property)));
    }
    check_file_data(region, v.path("region"), cfg, e.region);
    return e;
  }
  e.conductivity = v.optional("conductivity", e.conductivity, positive_number);
  e.density = v.optional("density", e.density, positive_number);
  e.specific_heat = v.optional("specific_heat", e.specific_heat, positive_number);
  if (!e.conductivity && !e.density && !e.specific_heat)
    fail(v.loc(), fmt::format("{}: sets no property (give conductivity, density or "
                              "specific_heat)",
                              path));
  if (!region_holds_a_cell(cfg, e.region))
    fail(region.key_locs[0],
         fmt::format("{}.{}: holds no cell centre of the grid (a cell takes a region's "
                     "properties when its centre, origin + (i + 1/2) length/cells, lies inside)",
                     v.path("region"), region.keys[0]));
  return e;
}

}  // namespace

// `materials`: a list of entries over the base material; later entries win.
void read_materials(const DeckNode& n, Config& cfg) {
  if (n.kind == Kind::Null) return;
  if (n.kind != Kind::Sequence)
    expected(n, "materials", "a list of entries {region: {...}, conductivity: ..., ...}");
  for (std::size_t i = 0; i < n.items.size(); ++i)
    cfg.material.regions.push_back(read_material_entry(n.items[i], element("materials", i), cfg));
}

namespace {

// The explicit limit's formula and where it is reached, for messages (materials by region).
std::string cell_limit_text(const Config& cfg, const MaterialsDtLimit& l) {
  const auto& c = l.cell;
  return fmt::format(
      "the smallest per-cell limit rho*cp / sum_f K_f/h_f^2, K_f the harmonic "
      "mean of the conductivities across face f; reached at cell ({}, {}{}), "
      "where rho*cp = {:g} and sum_f K_f/h_f^2 = {:g}",
      c[0], c[1], cfg.dimensions == 3 ? fmt::format(", {}", c[2]) : "", l.heat_capacity,
      l.face_sum);
}

// Chooses dt and steps; see docs/deck.md "Time resolution". Step counters are 64-bit, so runs
// of more than 2^31 steps are fine; more than kMaxSteps is refused as a surely mistaken deck.
void resolve_steps(const MapView& v, const DeckNode* end, const DeckNode* steps, Config& cfg) {
  constexpr std::int64_t kMaxSteps = 1000000000000000;  // 1e15
  if (end && steps) fail(v.key_loc("steps"), "time: give either 'end' or 'steps', not both");
  if (!end && !steps) fail(v.loc(), "missing required key 'time.end' (or 'time.steps')");
  if (steps) {
    cfg.steps = integer(*steps, v.path("steps"), 0, kMaxSteps);
    cfg.end_time = static_cast<double>(cfg.steps) * cfg.dt;
    if (!std::isfinite(cfg.end_time))
      fail(steps->loc, fmt::format("time.steps: {} steps of dt = {:g} overflow the end time",
                                   cfg.steps, cfg.dt));
    return;
  }
  cfg.end_time = nonnegative_number(*end, v.path("end"));
  double n = std::ceil(cfg.end_time / cfg.dt - 1e-9);
  if (cfg.end_time > 0) n = std::max(n, 1.0);  // end/dt below 1e-9 (tiny alpha) is one step
  if (!(n <= static_cast<double>(kMaxSteps)))  // also catches NaN
    fail(end->loc, fmt::format("time.end: {} needs {:g} steps of dt = {:g} (more than {:g})",
                               cfg.end_time, n, cfg.dt, static_cast<double>(kMaxSteps)));
  cfg.steps = static_cast<std::int64_t>(std::max(n, 0.0));
  if (cfg.steps > 0) cfg.dt = cfg.end_time / static_cast<double>(cfg.steps);
}

}  // namespace

void read_time(const DeckNode& n, Config& cfg) {
  const MapView v(n, "time", {"end", "steps", "dt", "safety", "scheme"});
  if (cfg.problem != ProblemType::Heat) return;  // steady problems ignore the section
  cfg.safety = v.optional("safety", cfg.safety, fraction);
  cfg.scheme = v.optional("scheme", cfg.scheme, [](const DeckNode& e, const std::string& w) {
    return choice(e, w,
                  {TimeScheme::Explicit, TimeScheme::ImplicitEuler, TimeScheme::CrankNicolson});
  });
  const bool implicit = cfg.scheme != TimeScheme::Explicit;
  const GridDesc g = cfg.grid();
  // Uniform materials: stable_dt(g, cfg.diffusivity); regions: the per-cell limit.
  const MaterialsDtLimit limit = materials_dt_limit(cfg);
  const double dt_max = limit.dt_max;
  // Extreme diffusivities or spacings make the limit underflow to 0 or overflow to inf.
  if ((!std::isfinite(dt_max) || dt_max <= 0) && !cfg.material.uniform())
    fail(v.loc(), fmt::format("time: the stability limit dt_max = {:g} ({}) is not a usable "
                              "time step; check the conductivities, densities and specific "
                              "heats of material and materials, grid.length and grid.cells",
                              dt_max, cell_limit_text(cfg, limit)));
  if (!std::isfinite(dt_max) || dt_max <= 0)
    fail(v.loc(), fmt::format("time: the stability limit dt_max = 1/(2*alpha*sum_d 1/h_d^2) = "
                              "{:g} is not a usable time step (alpha = {:g}, h = [{:g}, {:g}{}]); "
                              "check material.diffusivity, grid.length and grid.cells",
                              dt_max, cfg.diffusivity, g.hx, g.hy,
                              g.dims == 3 ? fmt::format(", {:g}", g.hz) : ""));
  const DeckNode* dt = v.get("dt");
  cfg.dt_auto = !dt || is_auto(*dt);
  if (cfg.dt_auto) {
    cfg.dt = cfg.safety * dt_max;
  } else {
    cfg.dt = auto_or(*dt, v.path("dt"), "a positive number", 0.0, positive_number);
    if (!implicit && cfg.dt > dt_max * (1 + 1e-12) && !cfg.material.uniform())
      fail(dt->loc, fmt::format("time.dt: {} exceeds the stability limit dt_max = {:.6g} ({}); "
                                "use a smaller dt, dt: auto, or an implicit time.scheme",
                                dt->scalar, dt_max, cell_limit_text(cfg, limit)));
    if (!implicit && cfg.dt > dt_max * (1 + 1e-12))
      fail(dt->loc,
           fmt::format("time.dt: {} exceeds the stability limit dt_max = {:.6g} (dt_max = "
                       "1/(2*alpha*sum_d 1/h_d^2) with alpha = {}, h = [{:g}, {:g}{}]); use a "
                       "smaller dt, dt: auto, or an implicit time.scheme",
                       dt->scalar, dt_max, cfg.diffusivity, g.hx, g.hy,
                       g.dims == 3 ? fmt::format(", {:g}", g.hz) : ""));
  }
  resolve_steps(v, v.get("end"), v.get("steps"), cfg);
}

}  // namespace heatsolve::deck_reader
