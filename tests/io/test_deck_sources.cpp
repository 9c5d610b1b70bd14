// Sources and the initial field in the deck: `source` as one mapping or a list of terms (the
// same Config for every existing deck), the compatibility check of singular Poisson decks
// (io/source_balance.hpp, solver.singular), and `initial: {type: file}` (io/initial_field.hpp):
// validation at the key concerned, and each block read against the whole grid.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/deck.hpp"
#include "io/field_writer.hpp"
#include "io/hdf5_writer.hpp"
#include "io/initial_field.hpp"
#include "io/source_balance.hpp"
#include "tests/io/deck_error.hpp"
#include "tests/io/h5_test_file.hpp"
#include "tests/temp_dir.hpp"

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
  return test_support::deck_error_of(text, [&] { parse(text, source); });
}

using test_support::expect_deck_error_at;

// Four lines each; tests append sections from line 5 on.
const std::string kHeat =
    "name: t\n"
    "problem: {type: heat, dimensions: 3}\n"
    "grid: {cells: [8, 8, 8]}\n"
    "time: {end: 0.01}\n";
const std::string kPoisson =
    "name: t\n"
    "problem: {type: poisson, dimensions: 3}\n"
    "grid: {cells: [8, 8, 8]}\n"
    "solver: {method: multigrid}\n";

bool same_shape(const Shape& a, const Shape& b) {
  return a.type == b.type && a.value == b.value && a.amplitude == b.amplitude &&
         a.width == b.width && a.center == b.center && a.lower == b.lower && a.upper == b.upper &&
         a.value_table == b.value_table && a.amplitude_table == b.amplitude_table;
}

// ---- source: one mapping or a list ----------------------------------------------------------

TEST(DeckSources, OneMappingIsSourceAndTheOnlyTerm) {
  const Config cfg = parse(kHeat +
                           "source: {type: gaussian, amplitude: 2, center: [0.5, 0.5, "
                           "0.5], width: 0.1}\n");
  EXPECT_EQ(cfg.source.type, ShapeType::Gaussian);
  ASSERT_EQ(cfg.sources.size(), 1u);
  EXPECT_TRUE(same_shape(cfg.sources[0], cfg.source));
  EXPECT_TRUE(parse(kHeat + "source: {type: none}\n").sources.empty());
  EXPECT_TRUE(parse(kHeat).sources.empty());
  EXPECT_EQ(parse(kHeat).source.type, ShapeType::None);
}

TEST(DeckSources, AListIsSummedTerms) {
  const Config cfg = parse(kHeat +
                           "source:\n"
                           "  - {type: uniform, value: 1.5}\n"
                           "  - {type: box, value: 2, lower: [0, 0, 0], upper: [0.5, 0.5, 0.5]}\n"
                           "  - {type: sine, amplitude: {table: [[0, 0], [1, 1]]}}\n");
  ASSERT_EQ(cfg.sources.size(), 3u);
  EXPECT_EQ(cfg.sources[0].type, ShapeType::Uniform);
  EXPECT_EQ(cfg.sources[1].type, ShapeType::Box);
  EXPECT_EQ(cfg.sources[2].type, ShapeType::Sine);
  EXPECT_TRUE(same_shape(cfg.source, cfg.sources[0]));  // the first, for single-source code
  const Config none = parse(kHeat + "source: []\n");
  EXPECT_TRUE(none.sources.empty());
  EXPECT_EQ(none.source.type, ShapeType::None);
}

TEST(DeckSources, BadListEntriesAreReportedAtThem) {
  // line 6 is the second entry.
  expect_deck_error_at(
      parse_error(kHeat + "source:\n  - {type: uniform, value: 1}\n  - {type: none}\n"), 7, 12,
      "source[1].type: unknown value 'none'");
  expect_deck_error_at(parse_error(kHeat + "source:\n  - {type: uniform, value: 1}\n  - 3\n"), 7, 5,
                       "source[1]: expected a mapping");
  expect_deck_error_at(
      parse_error(kHeat + "source:\n  - {type: box, value: 1, lower: [2, 2, 2], upper: [3, "
                          "3, 3]}\n"),
      6, 34, "source[0]: the box");
  expect_deck_error_at(parse_error(kHeat + "source:\n  - {type: uniform, valu: 1}\n"), 6, 21,
                       "unknown key 'valu' in 'source[0]'");
}

TEST(DeckSources, EveryShippedDeckKeepsItsSource) {
  const fs::path inputs = fs::path(HEATSOLVE_SOURCE_DIR) / "inputs";
  int count = 0;
  for (const auto& entry : fs::directory_iterator(inputs)) {
    if (entry.path().extension() != ".yaml") continue;
    DeckFeatures all;
    all.catalyst = true;
    const Config cfg = load_deck(entry.path().string(), {}, all);
    if (cfg.source.type == ShapeType::None) {
      EXPECT_TRUE(cfg.sources.empty()) << entry.path();
    } else {
      ASSERT_EQ(cfg.sources.size(), 1u) << entry.path();
      EXPECT_TRUE(same_shape(cfg.sources[0], cfg.source)) << entry.path();
      EXPECT_FALSE(cfg.source.value_table || cfg.source.amplitude_table) << entry.path();
    }
    for (const auto& t : cfg.boundary_tables) EXPECT_FALSE(t) << entry.path();
    EXPECT_EQ(cfg.output_interval, 0.0);
    EXPECT_FALSE(cfg.diagnostics.enabled());
    ++count;
  }
  EXPECT_GE(count, 6);
}

// ---- Singular steady problems ----------------------------------------------------------------

TEST(DeckSingular, UnbalancedInsulatedPoissonDeckIsRefusedAtTheSource) {
  const std::string deck = kPoisson +
                           "boundary: {all: {type: neumann}}\n"
                           "source: {type: uniform, value: 1}\n";
  const DeckError e = parse_error(deck);
  expect_deck_error_at(e, 6, 9, "source: this Poisson problem has no dirichlet face");
  EXPECT_NE(e.message().find("solver.singular: compatible-mean"), std::string::npos);
  EXPECT_NE(e.message().find("sum of f dV = 1"), std::string::npos) << e.what();
  // Asked for explicitly: the compatible part.
  std::string compatible = deck;
  compatible.replace(compatible.find("solver: {method: multigrid}"), 27,
                     "solver: {method: multigrid, singular: compatible-mean}");
  EXPECT_EQ(parse(compatible).singular, SingularPolicy::CompatibleMean);
}

TEST(DeckSingular, PolicyKeyAndBalancedDecks) {
  const std::string head =
      "name: t\nproblem: {type: poisson, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n";
  const auto parse_with = [&](const std::string& rest) { return parse(head + rest); };
  EXPECT_EQ(parse_with("boundary: {all: {type: neumann}}\nsource: {type: uniform, value: 1}\n"
                       "solver: {singular: compatible-mean}\n")
                .singular,
            SingularPolicy::CompatibleMean);
  EXPECT_EQ(parse_with("").singular, SingularPolicy::Refuse);
  // No source, insulated: balanced (the solution is any constant).
  EXPECT_NO_THROW(parse_with("boundary: {all: {type: neumann}}\n"));
  // A heat flux in balancing a uniform sink: value * area = -f * volume.
  EXPECT_NO_THROW(
      parse_with("boundary: {all: {type: neumann}, x-: {type: heat_flux, value: "
                 "1000}}\nsource: {type: uniform, value: -1000}\n"));
  // Neumann du/dn = 2 on x- (k = 1 in a diffusivity deck): inflow 2; sink -2.
  EXPECT_NO_THROW(
      parse_with("boundary: {all: {type: neumann}, x-: {type: neumann, flux: 2}}\n"
                 "source: {type: uniform, value: -2}\n"));
  // Physical conductivity multiplies the neumann inflow: 45 * 2 = 90.
  EXPECT_NO_THROW(
      parse_with("material: {conductivity: 45}\n"
                 "boundary: {all: {type: neumann}, x-: {type: neumann, flux: 2}}\n"
                 "source: {type: uniform, value: -90}\n"));
  EXPECT_THROW(parse_with("material: {conductivity: 45}\n"
                          "boundary: {all: {type: neumann}, x-: {type: neumann, flux: 2}}\n"
                          "source: {type: uniform, value: -2}\n"),
               DeckError);
  // One dirichlet face, or a convective face with h > 0: not singular.
  EXPECT_NO_THROW(
      parse_with("boundary: {all: {type: neumann}, x-: {type: dirichlet, value: "
                 "300}}\nsource: {type: uniform, value: 1}\n"));
  EXPECT_NO_THROW(
      parse_with("boundary: {all: {type: neumann}, x-: {type: convective, h: 5, "
                 "ambient: 20}}\nsource: {type: uniform, value: 1}\n"));
  EXPECT_THROW(parse_with("boundary: {all: {type: neumann}, x-: {type: convective, h: 0, "
                          "ambient: 20}}\nsource: {type: uniform, value: 1}\n"),
               DeckError);
  // Periodic everywhere with a net source: refused; the default (dirichlet) deck: fine.
  EXPECT_THROW(parse_with("boundary: {all: {type: periodic}}\nsource: {type: uniform, value: "
                          "1}\n"),
               DeckError);
  EXPECT_NO_THROW(parse_with("source: {type: uniform, value: 1}\n"));
  // A source list summing to zero: balanced.
  EXPECT_NO_THROW(
      parse_with("boundary: {all: {type: periodic}}\n"
                 "source: [{type: uniform, value: 1}, {type: uniform, value: -1}]\n"));
  // Heat decks are never refused: an insulated box heats up.
  EXPECT_NO_THROW(parse(kHeat + "boundary: {all: {type: neumann}}\nsource: {type: uniform, "
                                "value: 1}\n"));
}

TEST(DeckSingular, WithoutASourceTheFaceIsBlamed) {
  const std::string head =
      "name: t\nproblem: {type: poisson, dimensions: 2}\ngrid: {cells: [8, 8]}\n";
  const DeckError e =
      parse_error(head + "boundary:\n  all: {type: neumann}\n  y+: {type: heat_flux, value: 3}\n");
  expect_deck_error_at(e, 6, 7, "boundary.y+: this Poisson problem");
  EXPECT_NE(e.message().find("inflow through the faces = 3"), std::string::npos) << e.what();
  const DeckError a = parse_error(head + "boundary:\n  all: {type: neumann, flux: 1}\n");
  expect_deck_error_at(a, 5, 8, "boundary.all: this Poisson problem");
}

TEST(SourceBalance, MatchesABruteForceCellSum) {
  const std::string deck =
      "name: t\nproblem: {type: poisson, dimensions: 3}\n"
      "grid: {cells: [8, 6, 4], length: [2, 1, 0.5], origin: [0.1, 0, 0]}\n"
      "material: {conductivity: 3}\n"
      "solver: {singular: compatible-mean}\n"
      "source:\n"
      "  - {type: gaussian, amplitude: 3, center: [0.7, 0.4, 0.3], width: 0.2, value: 0.5}\n"
      "  - {type: box, value: -2, lower: [0.1, 0, 0], upper: [1, 1, 0.2]}\n"
      "  - {type: sine, amplitude: 1.5}\n"
      "boundary: {all: {type: neumann, flux: 0.25}, y+: {type: heat_flux, value: 4}}\n";
  const Config cfg = parse(deck);
  const SourceBalance b = source_balance(cfg);
  EXPECT_TRUE(b.singular);
  // Brute force over the cells, as the solvers evaluate the shapes.
  double f_sum = 0;
  const double hx = 2.0 / 8, hy = 1.0 / 6, hz = 0.5 / 4;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 6; ++j)
      for (int i = 0; i < 8; ++i) {
        const double x = 0.1 + (i + 0.5) * hx, y = (j + 0.5) * hy, z = (k + 0.5) * hz;
        const double r2 = (x - 0.7) * (x - 0.7) + (y - 0.4) * (y - 0.4) + (z - 0.3) * (z - 0.3);
        double f = 0.5 + 3 * std::exp(-r2 / (2 * 0.2 * 0.2));
        if (x >= 0.1 && x <= 1 && y >= 0 && y <= 1 && z >= 0 && z <= 0.2) f += -2;
        f += 1.5 * std::sin(M_PI * (x - 0.1) / 2) * std::sin(M_PI * y / 1) *
             std::sin(M_PI * z / 0.5);
        f_sum += f * hx * hy * hz;
      }
  EXPECT_NEAR(b.source, f_sum, 1e-12 * std::abs(f_sum));
  // Neumann faces: k * flux * area; the heat_flux face y+: value * area (x-z: 2 * 0.5).
  const double areas[3] = {1.0 * 0.5, 2.0 * 0.5, 2.0 * 1.0};
  double inflow = 0;
  for (int f = 0; f < 6; ++f) inflow += f == 3 ? 4 * areas[1] : 3 * 0.25 * areas[f / 2];
  EXPECT_NEAR(b.inflow, inflow, 1e-13 * inflow);
  EXPECT_FALSE(b.balanced());
}

TEST(SourceBalance, RegionsGiveTheConductivityAtTheFace) {
  const std::string deck =
      "name: t\nproblem: {type: poisson, dimensions: 2}\ngrid: {cells: [4, 4]}\n"
      "material: {conductivity: 2}\n"
      "materials: [{region: {box: {lower: [0, 0], upper: [0.2, 0.5]}}, conductivity: 10}]\n"
      "solver: {singular: compatible-mean}\n"
      "boundary: {all: {type: neumann}, x-: {type: neumann, flux: 1}}\n";
  const SourceBalance b = source_balance(parse(deck));
  // x- face: cells (0, 0) and (0, 1) have k = 10, (0, 2), (0, 3) k = 2; each face 0.25 long.
  EXPECT_NEAR(b.inflow, (10 + 10 + 2 + 2) * 0.25, 1e-14);
}

// ---- initial: {type: file} ----------------------------------------------------------------

#ifdef HEATSOLVE_HAVE_HDF5

using test_support::TempDir;

using test_support::write_h5;

double cell_value(int i, int j, int k) {
  return 0.5 + i - 100.0 * j + 10000.0 * k;
}

std::vector<double> cell_values(int nx, int ny, int nz) {
  return test_support::values_by_cell(nx, ny, nz, cell_value);
}

// Deck text of a grid of nx x ny (x nz) cells starting from `initial`, written to dir/deck.yaml.
fs::path write_deck(const fs::path& dir, int dims, const std::string& initial,
                    const std::string& cells) {
  const fs::path deck = dir / "deck.yaml";
  std::ofstream(deck) << "name: t\nproblem: {type: heat, dimensions: " << dims
                      << "}\ngrid: {cells: " << cells << "}\ntime: {steps: 1}\ninitial: " << initial
                      << "\n";
  return deck;
}

DeckError load_error(const fs::path& deck) {
  try {
    load_deck(deck.string());
  } catch (const DeckError& e) {
    return e;
  }
  ADD_FAILURE() << "deck was accepted: " << deck;
  return DeckError("", 0, 0, "");
}

TEST(InitialFile, ReadsEachBlockAsTheWholeGridHolds) {
  const TempDir dir;
  for (hid_t type : {H5T_NATIVE_DOUBLE, H5T_NATIVE_FLOAT}) {
    write_h5(dir.path() / "u0.h5", "fields/u", {5, 6, 7}, cell_values(7, 6, 5), type);
    const Config cfg = load_deck(
        write_deck(dir.path(), 3, "{type: file, path: u0.h5, dataset: fields/u}", "[7, 6, 5]")
            .string());
    ASSERT_EQ(cfg.initial.type, ShapeType::File);
    EXPECT_EQ(cfg.initial.path, (dir.path() / "u0.h5").lexically_normal().string());
    EXPECT_EQ(cfg.initial.dataset, "fields/u");
    // The whole grid, then blocks that tile it: the same values at the same cells.
    const GridDesc whole = cfg.grid();
    const std::vector<double> all = read_initial_field(cfg, whole, {0, 0, 0});
    ASSERT_EQ(all.size(), whole.padded_size());
    for (int k = -1; k <= 5; ++k)
      for (int j = -1; j <= 6; ++j)
        for (int i = -1; i <= 7; ++i) {
          const bool ghost = i < 0 || j < 0 || k < 0 || i == 7 || j == 6 || k == 5;
          const double want = ghost ? 0.0 : cell_value(i, j, k);
          ASSERT_EQ(all[std::size_t(whole.index(i, j, k))], want) << i << " " << j << " " << k;
        }
    const int cuts[3][3] = {{0, 3, 7}, {0, 4, 6}, {0, 1, 5}};
    for (int bz = 0; bz < 2; ++bz)
      for (int by = 0; by < 2; ++by)
        for (int bx = 0; bx < 2; ++bx) {
          GridDesc local = whole;
          const std::array<int, 3> offset{cuts[0][bx], cuts[1][by], cuts[2][bz]};
          local.nx = cuts[0][bx + 1] - offset[0];
          local.ny = cuts[1][by + 1] - offset[1];
          local.nz = cuts[2][bz + 1] - offset[2];
          const std::vector<double> block = read_initial_field(cfg, local, offset);
          ASSERT_EQ(block.size(), local.padded_size());
          for (int k = -1; k <= local.nz; ++k)
            for (int j = -1; j <= local.ny; ++j)
              for (int i = -1; i <= local.nx; ++i) {
                const bool ghost =
                    i < 0 || j < 0 || k < 0 || i == local.nx || j == local.ny || k == local.nz;
                const double want = ghost ? 0.0
                                          : all[std::size_t(whole.index(
                                                offset[0] + i, offset[1] + j, offset[2] + k))];
                ASSERT_EQ(block[std::size_t(local.index(i, j, k))], want);
              }
        }
  }
}

TEST(InitialFile, TwoDimensionalBlocks) {
  const TempDir dir;
  write_h5(dir.path() / "u0.h5", "u", {4, 9}, cell_values(9, 4, 1));
  const Config cfg = load_deck(
      write_deck(dir.path(), 2, "{type: file, path: u0.h5, dataset: u}", "[9, 4]").string());
  GridDesc local = cfg.grid();
  local.nx = 4;
  local.ny = 3;
  const std::vector<double> block = read_initial_field(cfg, local, {5, 1, 0});
  for (int j = -1; j <= 3; ++j)
    for (int i = -1; i <= 4; ++i) {
      const bool ghost = i < 0 || j < 0 || i == 4 || j == 3;
      EXPECT_EQ(block[std::size_t(local.index(i, j, 0))],
                ghost ? 0.0 : cell_value(5 + i, 1 + j, 0));
    }
  local.nx = 5;  // past the grid's edge
  EXPECT_THROW(read_initial_field(cfg, local, {5, 1, 0}), std::invalid_argument);
}

TEST(InitialFile, BadFilesAreDeckErrorsAtTheirKey) {
  const TempDir dir;
  write_h5(dir.path() / "u0.h5", "u", {5, 6, 7}, cell_values(7, 6, 5));
  // line 5: "initial: {type: file, path: u0.h5, dataset: u}"
  const auto deck = [&](const std::string& initial) {
    return write_deck(dir.path(), 3, initial, "[7, 6, 5]");
  };
  expect_deck_error_at(load_error(deck("{type: file, path: nope.h5, dataset: u}")), 5, 29,
                       "no such file");
  std::ofstream(dir.path() / "text.h5") << "not hdf5\n";
  expect_deck_error_at(load_error(deck("{type: file, path: text.h5, dataset: u}")), 5, 29,
                       "is not an HDF5 file");
  expect_deck_error_at(load_error(deck("{type: file, path: u0.h5, dataset: v}")), 5, 45,
                       "no dataset 'v'");
  const DeckError shape =
      load_error(write_deck(dir.path(), 3, "{type: file, path: u0.h5, dataset: u}", "[7, 6, 4]"));
  expect_deck_error_at(shape, 5, 45, "has shape [5, 6, 7], but the grid's cells are [4, 6, 7]");
  std::vector<double> bad = cell_values(7, 6, 5);
  bad[3 + 7 * (2 + 6 * 4)] = std::nan("");
  write_h5(dir.path() / "nan.h5", "u", {5, 6, 7}, bad);
  expect_deck_error_at(load_error(deck("{type: file, path: nan.h5, dataset: u}")), 5, 46,
                       "the value nan of cell (3, 2, 4) is not finite");
  write_h5(dir.path() / "int.h5", "u", {5, 6, 7}, cell_values(7, 6, 5), H5T_NATIVE_INT);
  expect_deck_error_at(load_error(deck("{type: file, path: int.h5, dataset: u}")), 5, 46,
                       "does not hold floating-point values");
  expect_deck_error_at(load_error(deck("{type: file, path: u0.h5}")), 5, 10,
                       "missing required key 'initial.dataset'");
  expect_deck_error_at(load_error(deck("{type: file, dataset: u}")), 5, 10,
                       "missing required key 'initial.path'");
  expect_deck_error_at(load_error(deck("{type: file, path: u0.h5, dataset: u, value: 1}")), 5, 48,
                       "unknown key 'value' in 'initial'");
  // A source is no file.
  const DeckError source = parse_error(kHeat + "source: {type: file, path: u0.h5}\n");
  expect_deck_error_at(source, 5, 16, "source.type: unknown value 'file'");
}

TEST(InitialFile, ASeriesStartsFromItsLastStep) {
  const TempDir dir;
  for (ProblemType problem : {ProblemType::Heat, ProblemType::Poisson}) {
    Config run = parse(problem == ProblemType::Heat
                           ? kHeat
                           : "name: t\nproblem: {type: poisson, dimensions: 3}\ngrid: {cells: [8, "
                             "8, 8]}\n");
    const OutputGrid grid = output_grid(run);
    {
      auto w = make_hdf5_writer(dir.path().string(), "prev", grid, Precision::Double);
      Block whole;
      whole.count = grid.cells;
      for (std::int64_t step : {0, 5, 12}) {
        std::vector<double> v(whole.size(), double(step));
        w->write(step, 0.1 * double(step), v.data(), whole);
      }
      w->finalize();
    }
    const fs::path deck = dir.path() / "deck.yaml";
    std::ofstream(deck) << kHeat << "initial: {type: file, path: prev.h5}\n";
    const Config cfg = load_deck(deck.string());
    EXPECT_EQ(cfg.initial.dataset, std::string("/steps/00000012/") +
                                       (problem == ProblemType::Heat ? "temperature" : "solution"));
    const std::vector<double> u = read_initial_field(cfg, cfg.grid(), {0, 0, 0});
    EXPECT_EQ(u[std::size_t(cfg.grid().index(3, 4, 5))], 12.0);
  }
}

#endif  // HEATSOLVE_HAVE_HDF5

}  // namespace
}  // namespace heatsolve
