// Materials by region (io/materials.hpp) and the deck keys behind them: parsing and defaults,
// region membership at cell centres, later entries winning, the sampler's ghost rules against
// a whole-grid sample, the per-cell stability limit against stable_dt and a brute-force
// minimum, and the summary description. File regions: test_materials_file.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "io/deck.hpp"
#include "io/materials.hpp"
#include "tests/io/materials_reference.hpp"

namespace heatsolve {
namespace {

using namespace materials_reference;

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

}  // namespace
}  // namespace heatsolve
