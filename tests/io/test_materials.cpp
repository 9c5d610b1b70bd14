// Materials by region (io/materials.hpp) and the deck keys behind them: parsing and defaults,
// region membership at cell centres, later entries winning, the sampler's ghost rules against
// a whole-grid sample, file regions read back per block, the per-cell stability limit against
// stable_dt and a brute-force minimum, and the summary description.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "io/deck.hpp"
#include "io/materials.hpp"

#ifdef HEATSOLVE_HAVE_HDF5
#include <hdf5.h>
#endif

namespace heatsolve {
namespace {

namespace fs = std::filesystem;

Config parse(const std::string& text, const std::string& source = "test.yaml") {
  return parse_deck(text, source);
}

DeckError parse_error(const std::string& text, const std::string& source = "test.yaml") {
  try {
    parse(text, source);
  } catch (const DeckError& e) {
    return e;
  }
  ADD_FAILURE() << "deck was accepted:\n" << text;
  return DeckError("", 0, 0, "");
}

std::string head(int dims, const std::string& cells, const std::string& problem = "heat") {
  return "name: t\nproblem: {type: " + problem + ", dimensions: " + std::to_string(dims) +
         "}\ngrid: " + cells + "\n" + (problem == "heat" ? "time: {steps: 10}\n" : "time:\n");
}

// Five lines: materials sections start on line 6.
const std::string kHead3 = head(3, "{cells: [8, 8, 8]}") +
                           "material: {conductivity: 45.0, "
                           "density: 7850.0, specific_heat: "
                           "490.0}\n";

// ---- Independent reference: cell centres, membership, properties --------------------------

double centre(const Config& c, int d, int g) {
  return c.origin[d] + (g + 0.5) * (c.length[d] / c.cells[d]);
}

bool inside(const Config& c, const Region& r, const std::array<int, 3>& g) {
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
std::pair<double, double> reference(const Config& c, const std::array<int, 3>& g) {
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

GridDesc block(const Config& c, const std::array<int, 3>& n) {
  GridDesc g = c.grid();
  g.nx = n[0];
  g.ny = n[1];
  g.nz = c.dimensions == 3 ? n[2] : 1;
  return g;
}

// ---- Parsing -------------------------------------------------------------------------------

TEST(DeckMaterials, DiffusivityDecksKeepTheirMeaning) {
  const Config none = parse(head(3, "{cells: [8, 8, 8]}"));
  EXPECT_FALSE(none.material.physical);
  EXPECT_EQ(none.material.conductivity, 1.0);
  EXPECT_EQ(none.diffusivity, 1.0);
  const Config a = parse(head(3, "{cells: [8, 8, 8]}") + "material: {diffusivity: 0.37}\n");
  EXPECT_FALSE(a.material.physical);
  EXPECT_EQ(a.diffusivity, 0.37);
  EXPECT_EQ(a.material.conductivity, 0.37);
  EXPECT_EQ(a.material.density, 1.0);
  EXPECT_EQ(a.material.specific_heat, 1.0);
  EXPECT_EQ(a.material.heat_capacity(), 1.0);
  EXPECT_TRUE(a.material.uniform());
  EXPECT_EQ(a.dt, 0.9 * stable_dt(a.grid(), 0.37));  // bit for bit today's dt
  // Poisson never used the diffusivity: -lap u = f, k = 1.
  const Config p = parse(head(2, "{cells: [8, 8]}", "poisson") + "material: {diffusivity: 3}\n");
  EXPECT_EQ(p.diffusivity, 3.0);
  EXPECT_EQ(p.material.conductivity, 1.0);
  EXPECT_FALSE(p.material.physical);
}

TEST(DeckMaterials, EveryShippedDeckKeepsItsMeaning) {
  const fs::path inputs = fs::path(HEATSOLVE_SOURCE_DIR) / "inputs";
  for (const auto& entry : fs::directory_iterator(inputs)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    DeckFeatures all;
    all.catalyst = true;
    const Config c = load_deck(entry.path().string(), {}, all);
    if (c.material.physical) continue;  // the decks of materials (composite_wall, chip_...)
    EXPECT_FALSE(c.material.physical);
    EXPECT_TRUE(c.material.uniform());
    EXPECT_EQ(c.material.conductivity, c.problem == ProblemType::Heat ? c.diffusivity : 1.0);
    EXPECT_EQ(c.material.heat_capacity(), 1.0);
    if (c.problem == ProblemType::Heat && c.dt_auto && c.end_time == 0)
      EXPECT_EQ(c.dt, c.safety * stable_dt(c.grid(), c.diffusivity));
    EXPECT_EQ(stable_dt_materials(c), stable_dt(c.grid(), c.diffusivity));
  }
}

TEST(DeckMaterials, PhysicalProperties) {
  const Config c = parse(kHead3);
  EXPECT_TRUE(c.material.physical);
  EXPECT_EQ(c.material.conductivity, 45.0);
  EXPECT_EQ(c.material.density, 7850.0);
  EXPECT_EQ(c.material.specific_heat, 490.0);
  EXPECT_EQ(c.diffusivity, 45.0 / (7850.0 * 490.0));
  EXPECT_EQ(c.dt, 0.9 * stable_dt(c.grid(), c.diffusivity));
  // Poisson: density and specific heat are optional (1).
  const Config p =
      parse(head(3, "{cells: [8, 8, 8]}", "poisson") + "material: {conductivity: 2.5}\n");
  EXPECT_TRUE(p.material.physical);
  EXPECT_EQ(p.material.conductivity, 2.5);
  EXPECT_EQ(p.material.density, 1.0);
  EXPECT_EQ(p.material.specific_heat, 1.0);
}

TEST(DeckMaterials, RegionsOfEveryKind) {
  // The example (16^3: on 8^3 its sphere holds no cell centre).
  const Config c = parse(head(3, "{cells: [16, 16, 16]}") +
                         "material: {conductivity: 45.0, density: 7850.0, specific_heat: 490.0}\n" +
                         "materials:\n"
                         "  - {region: {box: {lower: [0.2, 0.0, 0.0], upper: [0.5, 1.0, 1.0]}},"
                         " conductivity: 0.04, density: 30.0}\n"
                         "  - {region: {sphere: {center: [0.5, 0.5, 0.5], radius: 0.1}},"
                         " conductivity: 400.0}\n"
                         "  - {region: {cylinder: {axis: z, center: [0.5, 0.5], radius: 0.05}},"
                         " specific_heat: 900.0}\n"
                         "  - {region: {cylinder: {axis: x, center: [0.25, 0.75], radius: 0.2}},"
                         " density: 1.5}\n");
  const auto& r = c.material.regions;
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].region.kind, RegionKind::Box);
  EXPECT_EQ(r[0].region.lower, (std::array<double, 3>{0.2, 0.0, 0.0}));
  EXPECT_EQ(r[0].region.upper, (std::array<double, 3>{0.5, 1.0, 1.0}));
  EXPECT_EQ(r[0].conductivity, 0.04);
  EXPECT_EQ(r[0].density, 30.0);
  EXPECT_FALSE(r[0].specific_heat);
  EXPECT_EQ(r[1].region.kind, RegionKind::Sphere);
  EXPECT_EQ(r[1].region.center, (std::array<double, 3>{0.5, 0.5, 0.5}));
  EXPECT_EQ(r[1].region.radius, 0.1);
  EXPECT_EQ(r[1].conductivity, 400.0);
  EXPECT_FALSE(r[1].density);
  EXPECT_EQ(r[2].region.kind, RegionKind::Cylinder);
  EXPECT_EQ(r[2].region.axis, 2);
  EXPECT_EQ(r[2].region.center[0], 0.5);
  EXPECT_EQ(r[2].region.radius, 0.05);
  EXPECT_EQ(r[2].specific_heat, 900.0);
  EXPECT_EQ(r[3].region.axis, 0);
  EXPECT_EQ(r[3].region.center[1], 0.75);
  EXPECT_FALSE(c.material.uniform());
  EXPECT_EQ(c.diffusivity, 45.0 / (7850.0 * 490.0));  // the base material's
}

TEST(DeckMaterials, TwoDimensionalRegions) {
  const Config c =
      parse(head(2, "{cells: [16, 8], length: [2, 1]}") +
            "materials:\n"
            "  - {region: {box: {lower: [0.5, 0.25], upper: [1.5, 0.75]}},"
            " conductivity: 3}\n"
            "  - {region: {sphere: {center: [1, 0.5], radius: 0.2}}, conductivity: 4}\n"
            "  - {region: {cylinder: {axis: z, center: [0.2, 0.2], radius: 0.15}},"
            " conductivity: 5}\n");
  ASSERT_EQ(c.material.regions.size(), 3u);
  EXPECT_EQ(c.material.regions[0].region.upper[0], 1.5);
  EXPECT_EQ(c.material.regions[1].region.center[1], 0.5);
  EXPECT_EQ(c.material.regions[2].region.axis, 2);
}

// DeckFeatures::max_region_cells (the fuzz target's bound): a deck with regions on a larger
// grid is refused at `materials`, before any region is checked cell by cell; at the bound, or
// without regions, it reads as without one.
TEST(DeckMaterials, RegionCellBoundRefusesLargerGrids) {
  const std::string regions =
      "materials:\n  - {region: {box: {lower: [0, 0, 0], upper: [0.5, 1, 1]}}, conductivity: 3}\n";
  DeckFeatures bounded = DeckFeatures::of_this_build();
  bounded.max_region_cells = 16 * 16 * 16;
  const std::string big = head(3, "{cells: [16, 16, 17]}") + regions;
  try {
    parse_deck(big, "test.yaml", {}, bounded);
    ADD_FAILURE() << "a grid past the bound was read";
  } catch (const DeckError& e) {
    EXPECT_NE(std::string(e.what()).find("materials: 4352 cells are more than"), std::string::npos)
        << e.what();
    EXPECT_GT(e.line(), 1);
  }
  EXPECT_EQ(parse_deck(head(3, "{cells: [16, 16, 16]}") + regions, "test.yaml", {}, bounded)
                .material.regions.size(),
            1u);
  EXPECT_TRUE(
      parse_deck(head(3, "{cells: [64, 64, 64]}"), "test.yaml", {}, bounded).material.uniform());
  EXPECT_EQ(parse(big).material.regions.size(), 1u);  // heatsolve itself: no bound
}

TEST(DeckMaterials, EmptyMaterialsListIsUniform) {
  EXPECT_TRUE(parse(kHead3 + "materials: []\n").material.uniform());
  EXPECT_TRUE(parse(kHead3 + "materials:\n").material.uniform());
}

TEST(DeckMaterials, DiffusivityDeckRegionsSetConductivity) {
  const Config c = parse(head(3, "{cells: [8, 8, 8]}") +
                         "material: {diffusivity: 2}\n"
                         "materials: [{region: {box: {lower: [0, 0, 0], upper: [0.5, 1, 1]}},"
                         " conductivity: 0.5}]\n");
  EXPECT_EQ(c.material.conductivity, 2.0);
  EXPECT_EQ(c.material.regions[0].conductivity, 0.5);
}

TEST(DeckMaterials, EveryDeckKeyIsEchoed) {
  const Config c = parse(kHead3 +
                         "materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], "
                         "radius: 0.3}}, conductivity: 1}]\n");
  EXPECT_EQ(c.deck["materials"][0]["conductivity"], 1);
  EXPECT_EQ(c.deck["material"]["density"], 7850.0);
}

// ---- Membership, later entries win -----------------------------------------------------------

const std::string kShapes3 =
    "name: t\nproblem: {type: heat, dimensions: 3}\n"
    "grid: {cells: [10, 8, 6], length: [2.0, 1.0, 1.5], origin: [-1.0, 0.5, 0.0]}\n"
    "time: {steps: 1}\n"
    "material: {conductivity: 2, density: 3, specific_heat: 5}\n"
    "materials:\n"
    "  - {region: {box: {lower: [-0.6, 0.6, 0.2], upper: [0.3, 1.21, 0.9]}}, conductivity: 7,"
    " density: 11}\n"
    "  - {region: {sphere: {center: [0.1, 1.0, 0.7], radius: 0.43}}, conductivity: 13}\n"
    "  - {region: {cylinder: {axis: z, center: [-0.5, 0.8], radius: 0.27}}, specific_heat: 17}\n"
    "  - {region: {cylinder: {axis: x, center: [1.2, 1.1], radius: 0.33}}, density: 19}\n"
    "  - {region: {cylinder: {axis: y, center: [0.65, 0.35], radius: 0.31}}, conductivity: 23}\n";

TEST(Materials, RegionCountsMatchAnIndependentCount) {
  const Config c = parse(kShapes3);
  for (std::size_t r = 0; r < c.material.regions.size(); ++r) {
    std::int64_t count = 0;
    for_each_cell(c, [&](const std::array<int, 3>& g) {
      count += inside(c, c.material.regions[r].region, g);
    });
    EXPECT_GT(count, 0) << r;
    EXPECT_LT(count, 480) << r;
    EXPECT_EQ(region_cell_count(c, c.material.regions[r].region), count) << r;
  }
}

TEST(Materials, WholeGridSampleMatchesTheReference) {
  for (const std::string& text :
       {kShapes3, head(2, "{cells: [13, 9], length: [1.3, 0.9], origin: [0.1, -0.2]}") +
                      "material: {conductivity: 1, density: 2, specific_heat: 3}\n"
                      "materials:\n"
                      "  - {region: {box: {lower: [0.3, 0.0], upper: [0.8, 0.5]}}, density: 4}\n"
                      "  - {region: {sphere: {center: [0.6, 0.3], radius: 0.27}},"
                      " conductivity: 6}\n"
                      "  - {region: {cylinder: {axis: z, center: [1.2, 0.6], radius: 0.2}},"
                      " conductivity: 8, specific_heat: 9}\n"}) {
    const Config c = parse(text);
    const GridDesc g = c.grid();
    const CellProperties p = sample_materials(c, g, {0, 0, 0});
    ASSERT_EQ(p.conductivity.size(), g.padded_size());
    ASSERT_EQ(p.heat_capacity.size(), g.padded_size());
    std::vector<int> seen(c.material.regions.size() + 1, 0);
    for_each_cell(c, [&](const std::array<int, 3>& at) {
      const auto [k, heat] = reference(c, at);
      const std::int64_t n = g.index(at[0], at[1], at[2]);
      EXPECT_EQ(p.conductivity[n], k) << at[0] << " " << at[1] << " " << at[2];
      EXPECT_EQ(p.heat_capacity[n], heat) << at[0] << " " << at[1] << " " << at[2];
    });
  }
}

TEST(Materials, LaterEntriesWin) {
  const Config c = parse(kHead3 +
                         "materials:\n"
                         "  - {region: {box: {lower: [0, 0, 0], upper: [0.5, 1, 1]}},"
                         " conductivity: 1, density: 2}\n"
                         "  - {region: {box: {lower: [0.25, 0, 0], upper: [1, 1, 1]}},"
                         " conductivity: 3}\n");
  const GridDesc g = c.grid();
  const CellProperties p = sample_materials(c, g, {0, 0, 0});
  const double cp = 490.0;
  for (int i = 0; i < 8; ++i) {  // centres 0.0625 + i/8
    const std::int64_t n = g.index(i, 3, 4);
    if (i < 2) {  // first box only
      EXPECT_EQ(p.conductivity[n], 1.0);
      EXPECT_EQ(p.heat_capacity[n], 2.0 * cp);
    } else if (i < 4) {  // both: k from the later, density from the earlier
      EXPECT_EQ(p.conductivity[n], 3.0);
      EXPECT_EQ(p.heat_capacity[n], 2.0 * cp);
    } else {  // second only
      EXPECT_EQ(p.conductivity[n], 3.0);
      EXPECT_EQ(p.heat_capacity[n], 7850.0 * cp);
    }
  }
}

TEST(Materials, DiffusivityDeckSamplesTheDiffusivityAndOne) {
  const Config c = parse(head(3, "{cells: [4, 4, 4]}") + "material: {diffusivity: 0.25}\n");
  const CellProperties p = sample_materials(c, c.grid(), {0, 0, 0});
  for (std::size_t n = 0; n < p.conductivity.size(); ++n) {
    EXPECT_EQ(p.conductivity[n], 0.25);
    EXPECT_EQ(p.heat_capacity[n], 1.0);
  }
}

// ---- Ghost rules: each block's padded cells against the whole-grid sample --------------------

// The global cell a padded index stands for under the deck's faces (the contract's rules).
int source_of(const Config& c, int d, int off, int l) {
  const int n = c.cells[d], g = off + l;
  const bool periodic = c.boundary[2 * d].type == BoundaryType::Periodic;
  if (g < 0) return periodic ? g + n : 0;
  if (g >= n) return periodic ? g - n : n - 1;
  return g;
}

// Splits every axis into `parts` blocks and checks each block's interior and face ghosts
// bit for bit against the whole grid's interior; edge and corner ghosts must be finite.
void check_blocks(const Config& c, const std::array<std::vector<int>, 3>& cuts) {
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

TEST(Materials, GhostsTakeNeighbourWrappedOrMirroredCells) {
  const Config c = parse(kShapes3 +
                         "boundary: {x-: {type: periodic}, x+: {type: periodic},"
                         " z+: {type: convective, h: 2, ambient: 1}}\n");
  check_blocks(c, {std::vector<int>{0, 3, 7, 10}, {0, 5, 8}, {0, 1, 6}});
  check_blocks(c, {std::vector<int>{0, 10}, {0, 8}, {0, 6}});  // one block: every face a ghost
  const Config y = parse(kShapes3 +
                         "boundary: {y-: {type: periodic}, y+: {type: periodic},"
                         " z-: {type: periodic}, z+: {type: periodic}}\n");
  check_blocks(y, {std::vector<int>{0, 4, 10}, {0, 1, 2, 8}, {0, 3, 6}});
}

TEST(Materials, GhostRulesIn2D) {
  const Config c =
      parse(head(2, "{cells: [12, 7]}") +
            "materials: [{region: {sphere: {center: [0.1, 0.5], radius: 0.3}},"
            " conductivity: 9}, {region: {box: {lower: [0.5, 0.8], upper: [1.0, 1.0]}},"
            " conductivity: 0.5}]\n"
            "boundary: {y-: {type: periodic}, y+: {type: periodic}}\n");
  check_blocks(c, {std::vector<int>{0, 5, 12}, {0, 2, 7}, {}});
  // A ghost across a physical face mirrors the inner cell; across a periodic one it wraps.
  const GridDesc g = c.grid();
  const CellProperties p = sample_materials(c, g, {0, 0, 0});
  EXPECT_EQ(p.conductivity[g.index(-1, 3, 0)], p.conductivity[g.index(0, 3, 0)]);
  EXPECT_EQ(p.conductivity[g.index(-1, 3, 0)], 9.0);
  EXPECT_EQ(p.conductivity[g.index(11, 6, 0)], 0.5);
  EXPECT_EQ(p.conductivity[g.index(11, -1, 0)], 0.5);  // wrapped from y = 6
  EXPECT_EQ(p.conductivity[g.index(11, 0, 0)], 1.0);
}

TEST(Materials, BlockOutsideTheGridIsRefused) {
  const Config c = parse(kShapes3);
  EXPECT_THROW(sample_materials(c, block(c, {4, 8, 6}), {7, 0, 0}), std::invalid_argument);
  EXPECT_THROW(sample_materials(c, block(c, {4, 8, 6}), {-1, 0, 0}), std::invalid_argument);
}

// ---- Stability limit -----------------------------------------------------------------------

using Properties = std::function<std::pair<double, double>(const std::array<int, 3>&)>;

// min over cells of rho cp / sum_f K_f / h_f^2 from whole-grid arrays of `properties` (default:
// the reference).
double brute_force_dt(const Config& c, Properties properties = {}) {
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

TEST(Materials, UniformLimitIsStableDtBitForBit) {
  const Config a =
      parse(head(3, "{cells: [16, 8, 4], length: [1, 2, 3]}") + "material: {diffusivity: 0.7}\n");
  EXPECT_EQ(stable_dt_materials(a), stable_dt(a.grid(), 0.7));
  const Config p = parse(kHead3);
  EXPECT_EQ(stable_dt_materials(p), stable_dt(p.grid(), 45.0 / (7850.0 * 490.0)));
  // A region as the base: the per-cell path, equal up to rounding.
  const Config r = parse(kHead3 +
                         "materials: [{region: {box: {lower: [0, 0, 0], "
                         "upper: [0.5, 0.5, 0.5]}}, conductivity: 45.0}]\n");
  EXPECT_FALSE(r.material.uniform());
  EXPECT_NEAR(stable_dt_materials(r) / stable_dt(r.grid(), r.diffusivity), 1.0, 1e-14);
}

// Two materials on 2D and 3D grids, periodic faces in some: the stability limit's cases.
std::vector<std::string> two_material_decks() {
  return {
      head(3, "{cells: [9, 7, 5], length: [1.0, 0.5, 2.0]}") +
          "material: {conductivity: 1, density: 1, specific_heat: 1}\n"
          "materials: [{region: {box: {lower: [0.3, 0, 0], upper: [0.7, 0.3, 1.1]}},"
          " conductivity: 30, density: 2}]\n",
      head(3, "{cells: [9, 7, 5]}") +
          "material: {conductivity: 1, density: 1, specific_heat: 1}\n"
          "materials: [{region: {box: {lower: [0.0, 0, 0], upper: [0.1, 1, 1]}},"
          " conductivity: 50}]\n"
          "boundary: {x-: {type: periodic}, x+: {type: periodic}}\n",
      head(2, "{cells: [12, 10], length: [1, 3]}") +
          "material: {diffusivity: 2}\n"
          "materials: [{region: {sphere: {center: [0.5, 1.5], radius: 0.4}}, conductivity: 20}]\n",
      head(2, "{cells: [12, 10]}") +
          "material: {conductivity: 3, density: 2, specific_heat: 0.5}\n"
          "materials: [{region: {box: {lower: [0, 0.9], upper: [1, 1]}}, conductivity: 40,"
          " specific_heat: 0.1}]\n"
          "boundary: {y-: {type: periodic}, y+: {type: periodic}}\n"};
}

TEST(Materials, TwoMaterialLimitIsTheBruteForceMinimum) {
  const std::vector<std::string> decks = two_material_decks();
  for (const std::string& text : decks) {
    SCOPED_TRACE(text);
    const Config c = parse(text);
    const double expected = brute_force_dt(c);
    EXPECT_DOUBLE_EQ(stable_dt_materials(c), expected);
    EXPECT_LT(stable_dt_materials(c), stable_dt(c.grid(), c.diffusivity));
    EXPECT_DOUBLE_EQ(c.dt, 0.9 * expected);  // dt: auto
  }
}

// The limit a tile of the layer plane at a time (bounded memory on any grid): the same bits and
// the same cell whatever the tiles, rings across periodic faces and ties included.
TEST(Materials, TiledLimitIsTheWholeLayerLimit) {
  const std::string k3 = "material: {conductivity: 1, density: 1, specific_heat: 1}\n";
  // Every cell of one material: ties everywhere, the first cell wins.
  const std::string ties = head(3, "{cells: [6, 5, 4]}") + k3 +
                           "materials: [{region: {box: {lower: [0, 0, 0], upper: [1, 1, 1]}},"
                           " density: 3}]\n";
  std::vector<std::string> decks = two_material_decks();
  decks.push_back(decks[0] +  // rings wrapped across every face
                  "boundary: {x-: {type: periodic}, x+: {type: periodic}, y-: {type: periodic},"
                  " y+: {type: periodic}, z-: {type: periodic}, z+: {type: periodic}}\n");
  decks.push_back(decks[2] + "boundary: {x-: {type: periodic}, x+: {type: periodic}}\n");  // 2D
  decks.push_back(kShapes3);
  decks.push_back(ties);
  decks.push_back(head(3, "{cells: [1, 5, 3]}") + k3 +
                  "materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], radius: 0.3}},"
                  " conductivity: 7}]\nboundary: {x-: {type: periodic}, x+: {type: periodic}}\n");
  for (const std::string& text : decks) {
    SCOPED_TRACE(text);
    const Config c = parse(text);
    const MaterialsDtLimit whole = materials_dt_limit(c);
    EXPECT_DOUBLE_EQ(whole.dt_max, brute_force_dt(c));
    for (const auto& [row, cells] : std::vector<std::pair<int, std::int64_t>>{
             {1, 1}, {2, 3}, {3, 7}, {4, 4}, {5, 20}, {100, 2}}) {
      const MaterialsDtLimit t = materials_dt_limit_tiled(c, row, cells);
      EXPECT_EQ(t.dt_max, whole.dt_max) << row << " " << cells;
      EXPECT_EQ(t.cell, whole.cell) << row << " " << cells;
      EXPECT_EQ(t.heat_capacity, whole.heat_capacity) << row << " " << cells;
      EXPECT_EQ(t.face_sum, whole.face_sum) << row << " " << cells;
    }
  }
  // Ties: the first cell in (layer, row, column) order.
  EXPECT_EQ(materials_dt_limit(parse(ties)).cell, (std::array<int, 3>{0, 0, 0}));
}

// The deck's "holds no cell centre" check in O(log cells) per axis: the count's answer, at
// region edges on cell centres, outside the grid, and for tiny spheres and cylinders.
TEST(Materials, RegionHoldsACellIffItsCountIsPositive) {
  Config c = parse(kShapes3);
  const std::vector<double> edges{-0.5, 0.0, 0.0625, 0.1, 0.125, 0.3125, 0.5, 0.9375, 1.0, 1.5};
  int checked = 0, held = 0;
  for (std::size_t r = 0; r < c.material.regions.size(); ++r) {
    Region g = c.material.regions[r].region;
    for (double a : edges)
      for (double b : edges) {
        if (g.kind == RegionKind::Box) {
          g.lower = {a, 0.25 * a, b};
          g.upper = {b, 1.0, a + 0.01};
        } else {
          g.center = {a, b, 0.5 * (a + b)};
          g.radius = 0.02 + 0.1 * b * b;
        }
        const bool holds = region_cell_count(c, g) > 0;
        EXPECT_EQ(region_holds_a_cell(c, g), holds)
            << r << ": " << a << " " << b << " radius " << g.radius;
        ++checked;
        held += holds;
      }
  }
  EXPECT_GT(held, checked / 10);
  EXPECT_LT(held, checked * 9 / 10);
}

TEST(DeckMaterials, DtAboveThePerCellLimitIsRefused) {
  const Config ok = parse(kHead3 +
                          "materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], "
                          "radius: 0.2}}, conductivity: 4000}]\n");
  const double limit = stable_dt_materials(ok);
  const DeckError e = parse_error(
      "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
      "material: {conductivity: 45.0, density: 7850.0, specific_heat: 490.0}\n"
      "materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], radius: 0.2}},"
      " conductivity: 4000}]\n"
      "time: {steps: 2, dt: " +
      std::to_string(limit * 1.01) + "}\n");
  EXPECT_NE(e.message().find("exceeds the stability limit dt_max = "), std::string::npos)
      << e.what();
  EXPECT_NE(e.message().find(
                "(the smallest per-cell limit rho*cp / sum_f K_f/h_f^2, K_f the harmonic mean"),
            std::string::npos)
      << e.what();
  EXPECT_NE(e.message().find("reached at cell (3, 3, 3), where rho*cp = 3.8465e+06"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.column(), 22);
  const MaterialsDtLimit l = materials_dt_limit(ok);
  EXPECT_EQ(l.cell, (std::array<int, 3>{3, 3, 3}));
  EXPECT_EQ(l.heat_capacity / l.face_sum, l.dt_max);
}

// ---- Summary --------------------------------------------------------------------------------

TEST(Materials, DescriptionCountsCells) {
  const Config c = parse(kShapes3);
  const nlohmann::json j = describe_materials(c);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), c.material.regions.size() + 1);
  EXPECT_EQ(j[0]["kind"], "base");
  EXPECT_EQ(j[0]["conductivity"], 2.0);
  EXPECT_EQ(j[0]["physical"], true);
  std::vector<std::int64_t> top(c.material.regions.size() + 1, 0);
  for_each_cell(c, [&](const std::array<int, 3>& g) {
    int t = -1;
    for (std::size_t r = 0; r < c.material.regions.size(); ++r)
      if (inside(c, c.material.regions[r].region, g)) t = static_cast<int>(r);
    ++top[static_cast<std::size_t>(t + 1)];
  });
  EXPECT_EQ(j[0]["cells"], top[0]);
  const char* kinds[] = {"box", "sphere", "cylinder", "cylinder", "cylinder"};
  for (std::size_t r = 0; r < c.material.regions.size(); ++r) {
    EXPECT_EQ(j[r + 1]["kind"], kinds[r]);
    EXPECT_EQ(j[r + 1]["cells"], region_cell_count(c, c.material.regions[r].region));
    EXPECT_EQ(j[r + 1]["cells_topmost"], top[r + 1]);
  }
  EXPECT_EQ(j[1]["conductivity"], 7.0);
  EXPECT_EQ(j[1]["density"], 11.0);
  EXPECT_FALSE(j[1].contains("specific_heat"));
  EXPECT_EQ(j[3]["axis"], "z");
  EXPECT_EQ(j[1]["lower"].size(), 3u);
  const nlohmann::json u = describe_materials(parse(head(2, "{cells: [4, 5]}")));
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0]["cells"], 20);
  EXPECT_EQ(u[0]["physical"], false);
  EXPECT_EQ(u[0]["diffusivity"], 1.0);
}

// ---- File regions ----------------------------------------------------------------------------

#ifdef HEATSOLVE_HAVE_HDF5

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("heatsolve_materials_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Writes `values` ([dims...], slowest first) as `dataset` of `type` (a native HDF5 type).
void write_h5(const fs::path& file, const std::string& dataset, const std::vector<hsize_t>& dims,
              const std::vector<double>& values, hid_t type = H5T_NATIVE_DOUBLE) {
  const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t s = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  const hid_t d = H5Dcreate2(f, dataset.c_str(), type, s, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  ASSERT_GE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  H5Dclose(d);
  H5Pclose(lcpl);
  H5Sclose(s);
  H5Fclose(f);
}

// A distinct positive value per cell.
double cell_value(int i, int j, int k) {
  return 1.0 + i + 100.0 * j + 10000.0 * k;
}

std::vector<double> cell_values(int nx, int ny, int nz) {
  std::vector<double> v;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i) v.push_back(cell_value(i, j, k));
  return v;
}

TEST(MaterialsFile, RoundTripPerBlockIn3D) {
  const TempDir dir;
  for (hid_t type : {H5T_NATIVE_DOUBLE, H5T_NATIVE_FLOAT}) {
    write_h5(dir.path() / "k.h5", "conductivity", {5, 6, 7}, cell_values(7, 6, 5), type);
    const std::string deck = (dir.path() / "deck.yaml").string();
    // Relative to the deck's directory; the dataset's name gives the property.
    const Config c = parse(head(3, "{cells: [7, 6, 5]}") +
                               "material: {conductivity: 1, density: 2, specific_heat: 3}\n"
                               "materials:\n"
                               "  - {region: {box: {lower: [0, 0, 0], upper: [0.5, 1, 1]}},"
                               " conductivity: 0.5, density: 4}\n"
                               "  - {region: {file: {path: k.h5, dataset: conductivity}}}\n"
                               "boundary: {x-: {type: periodic}, x+: {type: periodic}}\n",
                           deck);
    const Region& r = c.material.regions[1].region;
    EXPECT_EQ(r.kind, RegionKind::File);
    EXPECT_EQ(r.path, (dir.path() / "k.h5").string());
    EXPECT_EQ(r.dataset, "conductivity");
    EXPECT_EQ(c.material.regions[1].file_property, MaterialProperty::Conductivity);
    const GridDesc whole = c.grid();
    const CellProperties all = sample_materials(c, whole, {0, 0, 0});
    for_each_cell(c, [&](const std::array<int, 3>& g) {
      const std::int64_t n = whole.index(g[0], g[1], g[2]);
      EXPECT_EQ(all.conductivity[n], cell_value(g[0], g[1], g[2]));  // exact in float too
      EXPECT_EQ(all.heat_capacity[n], (centre(c, 0, g[0]) <= 0.5 ? 4.0 : 2.0) * 3.0);
    });
    check_blocks(c, {std::vector<int>{0, 2, 7}, {0, 3, 6}, {0, 4, 5}});
    EXPECT_DOUBLE_EQ(stable_dt_materials(c), brute_force_dt(c, [&](const std::array<int, 3>& g) {
                       const std::int64_t n = whole.index(g[0], g[1], g[2]);
                       return std::make_pair(all.conductivity[n], all.heat_capacity[n]);
                     }));
  }
}

TEST(MaterialsFile, StabilityLimitReadsTheFile) {
  const TempDir dir;
  // k = 1 everywhere but one cell of k = 100: the limit is that cell's.
  std::vector<double> k(4 * 5 * 6, 1.0);
  k[(2 * 5 + 3) * 6 + 4] = 100.0;  // cell (4, 3, 2)
  write_h5(dir.path() / "k.h5", "data/kappa", {4, 5, 6}, k);
  const Config c = parse(head(3, "{cells: [6, 5, 4]}") +
                             "materials: [{region: {file: {path: k.h5, dataset: data/kappa,"
                             " property: conductivity}}}]\n",
                         (dir.path() / "deck.yaml").string());
  const MaterialsDtLimit l = materials_dt_limit(c);
  EXPECT_EQ(l.cell, (std::array<int, 3>{4, 3, 2}));
  const double h2 = 1.0 / 36, g2 = 1.0 / 25, z2 = 1.0 / 16, kf = 2 * 100.0 / 101.0;
  EXPECT_DOUBLE_EQ(l.dt_max, 1.0 / (2 * kf / h2 + 2 * kf / g2 + 2 * kf / z2));
}

TEST(MaterialsFile, DensityFileIn2D) {
  const TempDir dir;
  write_h5(dir.path() / "rho.h5", "rho", {4, 9}, cell_values(9, 4, 1));
  const Config c = parse(head(2, "{cells: [9, 4]}") +
                             "material: {conductivity: 1, density: 2, specific_heat: 3}\n"
                             "materials: [{region: {file: {path: rho.h5, dataset: rho,"
                             " property: density}}}]\n"
                             "boundary: {y-: {type: periodic}, y+: {type: periodic}}\n",
                         (dir.path() / "deck.yaml").string());
  EXPECT_EQ(c.material.regions[0].file_property, MaterialProperty::Density);
  const GridDesc g = c.grid();
  const CellProperties p = sample_materials(c, g, {0, 0, 0});
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 9; ++i) {
      EXPECT_EQ(p.heat_capacity[g.index(i, j, 0)], cell_value(i, j, 0) * 3.0);
      EXPECT_EQ(p.conductivity[g.index(i, j, 0)], 1.0);
    }
  check_blocks(c, {std::vector<int>{0, 4, 9}, {0, 1, 4}, {}});
  const nlohmann::json d = describe_materials(c);
  EXPECT_EQ(d[1]["kind"], "file");
  EXPECT_EQ(d[1]["property"], "density");
  EXPECT_EQ(d[1]["cells"], 36);
  EXPECT_EQ(d[1]["cells_topmost"], 36);
  EXPECT_EQ(d[0]["cells"], 0);
}

struct BadFile {
  const char* label;
  std::function<void(const fs::path&)> write;  // into the directory
  std::string region;                          // the materials entry's region text
  const char* fragment;
  int column;
};

TEST(MaterialsFile, BadFilesAreDeckErrorsAtTheirKey) {
  const std::string text_head = head(3, "{cells: [4, 3, 2]}") + "materials:\n  - {region: ";
  const std::vector<BadFile> cases{
      {"missing file", [](const fs::path&) {}, "{file: {path: none.h5, dataset: conductivity}}}",
       "file.path: no such file", 28},
      {"not hdf5", [](const fs::path& d) { std::ofstream(d / "text.h5") << "hello"; },
       "{file: {path: text.h5, dataset: conductivity}}}", "is not an HDF5 file", 28},
      {"missing dataset",
       [](const fs::path& d) {
         write_h5(d / "k.h5", "other", {2, 3, 4}, cell_values(4, 3, 2));
       },
       "{file: {path: k.h5, dataset: conductivity}}}", "no dataset 'conductivity'", 43},
      {"wrong shape",
       [](const fs::path& d) {
         write_h5(d / "k.h5", "conductivity", {2, 4, 3}, cell_values(3, 4, 2));
       },
       "{file: {path: k.h5, dataset: conductivity}}}",
       "has shape [2, 4, 3], but the grid's cells are [2, 3, 4] ([nz, ny, nx])", 43},
      {"2D shape in 3D",
       [](const fs::path& d) {
         write_h5(d / "k.h5", "conductivity", {3, 4}, cell_values(4, 3, 1));
       },
       "{file: {path: k.h5, dataset: conductivity}}}", "has shape [3, 4]", 43},
      {"integers",
       [](const fs::path& d) {
         write_h5(d / "k.h5", "conductivity", {2, 3, 4}, cell_values(4, 3, 2), H5T_NATIVE_INT);
       },
       "{file: {path: k.h5, dataset: conductivity}}}", "does not hold floating-point values", 43},
      {"negative value",
       [](const fs::path& d) {
         std::vector<double> v = cell_values(4, 3, 2);
         v[(1 * 3 + 2) * 4 + 1] = -1;
         write_h5(d / "k.h5", "conductivity", {2, 3, 4}, v);
       },
       "{file: {path: k.h5, dataset: conductivity}}}",
       "the value -1 of cell (1, 2, 1) is not a positive, finite number", 43},
      {"nan value",
       [](const fs::path& d) {
         std::vector<double> v = cell_values(4, 3, 2);
         v[0] = std::nan("");
         write_h5(d / "k.h5", "conductivity", {2, 3, 4}, v);
       },
       "{file: {path: k.h5, dataset: conductivity}}}", "of cell (0, 0, 0) is not a positive", 43},
      {"zero value",
       [](const fs::path& d) {
         std::vector<double> v = cell_values(4, 3, 2);
         v[5] = 0;
         write_h5(d / "k.h5", "conductivity", {2, 3, 4}, v);
       },
       "{file: {path: k.h5, dataset: conductivity}}}", "the value 0 of cell (1, 1, 0)", 43},
  };
  for (const BadFile& b : cases) {
    SCOPED_TRACE(b.label);
    const TempDir dir;
    b.write(dir.path());
    const DeckError e = parse_error(text_head + b.region + "\n", (dir.path() / "d.yaml").string());
    EXPECT_NE(e.message().find(b.fragment), std::string::npos) << e.what();
    EXPECT_EQ(e.line(), 6) << e.what();
    EXPECT_EQ(e.column(), b.column) << e.what();
    EXPECT_EQ(e.message().rfind("materials[0].region.file.", 0), 0u) << e.what();
  }
}

TEST(MaterialsFile, DensityFileNeedsPhysicalMaterial) {
  const TempDir dir;
  write_h5(dir.path() / "k.h5", "density", {2, 3, 4}, cell_values(4, 3, 2));
  const DeckError e =
      parse_error(head(3, "{cells: [4, 3, 2]}") +
                      "materials: [{region: {file: {path: k.h5, dataset: density}}}]\n",
                  (dir.path() / "d.yaml").string());
  EXPECT_NE(e.message().find("a density file needs 'material' with conductivity"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(e.line(), 5);
  EXPECT_EQ(e.column(), 51);
}

#endif  // HEATSOLVE_HAVE_HDF5

}  // namespace
}  // namespace heatsolve
