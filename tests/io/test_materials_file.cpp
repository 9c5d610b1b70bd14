// Materials from HDF5 file regions (io/materials.hpp): read back per block in 3D and 2D, the
// stability limit reading the file, bad files refused as deck errors at their key. Without HDF5
// the file is empty.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/deck.hpp"
#include "io/materials.hpp"
#include "tests/io/h5_test_file.hpp"
#include "tests/io/materials_reference.hpp"
#include "tests/temp_dir.hpp"

#ifdef HEATSOLVE_HAVE_HDF5
#include <hdf5.h>

namespace heatsolve {
namespace {

using namespace materials_reference;

using test_support::TempDir;

using test_support::write_h5;

// A distinct positive value per cell.
double cell_value(int i, int j, int k) {
  return 1.0 + i + 100.0 * j + 10000.0 * k;
}

std::vector<double> cell_values(int nx, int ny, int nz) {
  return test_support::values_by_cell(nx, ny, nz, cell_value);
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

}  // namespace
}  // namespace heatsolve
#endif  // HEATSOLVE_HAVE_HDF5
