// HDF5/XDMF writer: format contract, read-back, atomic publication, error reporting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "io/atomic_file.hpp"
#include "io/field_writer.hpp"
#include "io/hdf5_writer.hpp"
#include "tests/file_bytes.hpp"
#include "tests/temp_dir.hpp"

#ifdef HEATSOLVE_HAVE_HDF5
#include "io/hdf5_handle.hpp"
#endif

namespace fs = std::filesystem;
using namespace heatsolve;

namespace {

// Set HEATSOLVE_TEST_KEEP=1 to keep the files (e.g. to open them in ParaView).
using test_support::TempDir;

// Minimal well-formedness check: every tag closes in order, nothing outside the root.
bool xml_well_formed(const std::string& text, std::string& why) {
  std::vector<std::string> stack;
  std::size_t pos = 0;
  bool seen_root = false;
  while ((pos = text.find('<', pos)) != std::string::npos) {
    std::size_t end = text.find('>', pos);
    if (end == std::string::npos) return why = "unterminated tag", false;
    std::string tag = text.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.empty()) return why = "empty tag", false;
    if (tag[0] == '?' || tag[0] == '!') continue;  // declaration, doctype
    if (tag[0] == '/') {
      std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) return why = "mismatched </" + name + ">", false;
      stack.pop_back();
      continue;
    }
    if (stack.empty() && seen_root) return why = "second root element", false;
    seen_root = true;
    if (tag.back() == '/') continue;  // self-closing
    stack.push_back(tag.substr(0, tag.find_first_of(" \t\n")));
  }
  if (!stack.empty()) return why = "unclosed <" + stack.back() + ">", false;
  return seen_root || (why = "no root", false);
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(OutputGrid, FromConfig) {
  Config cfg;
  cfg.dimensions = 3;
  cfg.cells = {10, 20, 40};
  cfg.length = {1.0, 2.0, 8.0};
  cfg.origin = {-1, 0.5, 2};
  OutputGrid g = output_grid(cfg);
  EXPECT_EQ(g.dims, 3);
  EXPECT_EQ(g.cells, (std::array<int, 3>{10, 20, 40}));
  EXPECT_EQ(g.origin, (std::array<double, 3>{-1, 0.5, 2}));
  EXPECT_DOUBLE_EQ(g.spacing[0], 0.1);
  EXPECT_DOUBLE_EQ(g.spacing[1], 0.1);
  EXPECT_DOUBLE_EQ(g.spacing[2], 0.2);

  cfg.dimensions = 2;
  cfg.cells = {8, 4, 7};
  g = output_grid(cfg);
  EXPECT_EQ(g.dims, 2);
  EXPECT_EQ(g.cells, (std::array<int, 3>{8, 4, 1}));
  EXPECT_DOUBLE_EQ(g.spacing[0], 0.125);
  EXPECT_DOUBLE_EQ(g.spacing[1], 0.5);
  EXPECT_DOUBLE_EQ(g.spacing[2], 1.0);
}

TEST(AtomicFile, WritesAndReplaces) {
  TempDir dir;
  const std::string path = (dir.path() / "a.txt").string();
  write_file_atomically(path, "first\n");
  EXPECT_EQ(test_support::file_bytes(path), "first\n");
  write_file_atomically(path, "second\n");
  EXPECT_EQ(test_support::file_bytes(path), "second\n");
  {
    AtomicFile f(path);
    f.write("abandoned");
    EXPECT_TRUE(fs::exists(f.temp_path()));
  }  // destroyed without commit
  EXPECT_EQ(test_support::file_bytes(path), "second\n");
  for (const auto& e : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename(), "a.txt") << "stray file " << e.path();
  }
  EXPECT_THROW(write_file_atomically((dir.path() / "missing" / "x").string(), "x"),
               std::runtime_error);
}

TEST(AtomicFile, PublishRenames) {
  TempDir dir;
  const fs::path tmp = dir.path() / "b.bin.partial", fin = dir.path() / "b.bin";
  std::ofstream(tmp) << "data";
  publish_file(tmp.string(), fin.string());
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_EQ(test_support::file_bytes(fin), "data");
  try {
    publish_file(tmp.string(), fin.string());
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("b.bin.partial"), std::string::npos) << e.what();
  }
}

#ifdef HEATSOLVE_HAVE_HDF5

OutputGrid grid3d() {
  OutputGrid g;
  g.dims = 3;
  g.cells = {5, 4, 3};
  g.origin = {0.5, -1.0, 2.0};
  g.spacing = {0.1, 0.2, 0.3};
  return g;
}

OutputGrid grid2d() {
  OutputGrid g;
  g.dims = 2;
  g.cells = {6, 3, 1};
  g.origin = {-1.0, 0.25, 0.0};
  g.spacing = {0.5, 0.125, 1.0};
  return g;
}

// Values distinct per cell and step, exactly representable in float.
template <typename T>
std::vector<T> field(const OutputGrid& g, std::int64_t step) {
  std::vector<T> v(Block::whole(g).size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<T>(static_cast<double>(step) * 1000.0 + static_cast<double>(i) + 0.25);
  }
  return v;
}

// Reads scalar attribute `name` of `object` (path inside the file) with the raw HDF5 API.
template <typename T>
T raw_attribute(const std::string& file, const std::string& object, const char* name, hid_t type) {
  h5::File f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
  h5::Attribute a(H5Aopen_by_name(f.get(), object.c_str(), name, H5P_DEFAULT, H5P_DEFAULT),
                  "open attribute");
  T value{};
  h5::check(H5Aread(a.get(), type, &value), "read attribute");
  return value;
}

std::size_t raw_type_size(const std::string& file, const std::string& dataset) {
  h5::File f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
  h5::Dataset d(H5Dopen2(f.get(), dataset.c_str(), H5P_DEFAULT), "open dataset");
  h5::Datatype t(H5Dget_type(d.get()), "type");
  return H5Tget_size(t.get());
}

template <typename T>
void check_series(const OutputGrid& g, Precision precision) {
  TempDir dir;
  const std::string name = g.dims == 3 ? "run3d" : "run2d";
  const fs::path h5 = dir.path() / (name + ".h5"), partial = dir.path() / (name + ".h5.partial"),
                 xdmf = dir.path() / (name + ".xdmf");
  const std::vector<std::int64_t> steps{0, 10, 20};
  const std::vector<double> times{0.0, 0.125, 0.1 + 0.2};  // 0.30000000000000004 round-trips

  auto writer = make_hdf5_writer(dir.str(), name, g, precision);
  EXPECT_EQ(writer->files(), (std::vector<std::string>{h5.string(), xdmf.string()}));
  for (std::size_t k = 0; k < steps.size(); ++k) {
    std::vector<T> v = field<T>(g, steps[k]);
    writer->write(steps[k], times[k], v.data(), Block::whole(g));
    EXPECT_FALSE(fs::exists(h5)) << "final name must not exist before finalize()";
    EXPECT_FALSE(fs::exists(xdmf));
    EXPECT_TRUE(fs::exists(partial));
  }
  // The partial file is readable mid-run (flushed after each step).
  EXPECT_EQ(list_hdf5_steps(partial.string()).size(), steps.size());
  writer->finalize();
  writer->finalize();  // idempotent
  EXPECT_TRUE(fs::exists(h5));
  EXPECT_TRUE(fs::exists(xdmf));
  EXPECT_FALSE(fs::exists(partial));
  for (const auto& e : fs::directory_iterator(dir.path())) {
    EXPECT_TRUE(e.path() == h5 || e.path() == xdmf) << "stray file " << e.path();
  }
  EXPECT_THROW(writer->write(30, 1.0, field<T>(g, 30).data(), Block::whole(g)), std::runtime_error);
  writer.reset();

  // Read back.
  auto listed = list_hdf5_steps(h5.string());
  ASSERT_EQ(listed.size(), steps.size());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    EXPECT_EQ(listed[k].step, steps[k]);
    EXPECT_EQ(listed[k].time, times[k]);
    Hdf5StepData s = read_hdf5_step(h5.string(), static_cast<std::int64_t>(k));
    EXPECT_EQ(s.step, steps[k]);
    EXPECT_EQ(s.time, times[k]);
    EXPECT_EQ(s.precision, precision);
    EXPECT_EQ(s.grid.dims, g.dims);
    EXPECT_EQ(s.grid.cells, g.cells);
    EXPECT_EQ(s.grid.origin, g.origin);
    EXPECT_EQ(s.grid.spacing, g.spacing);
    if (g.dims == 3) {
      EXPECT_EQ(s.shape, (std::vector<std::size_t>{3, 4, 5}));
    } else {
      EXPECT_EQ(s.shape, (std::vector<std::size_t>{3, 6}));
    }
    std::vector<T> expect = field<T>(g, steps[k]);
    ASSERT_EQ(s.data.size(), expect.size());
    for (std::size_t i = 0; i < expect.size(); ++i) {
      ASSERT_EQ(s.data[i], static_cast<double>(expect[i])) << "step " << steps[k] << " i " << i;
    }
  }
  EXPECT_EQ(read_hdf5_step(h5.string()).step, 20);  // default: last
  EXPECT_EQ(read_hdf5_step(h5.string(), -3).step, 0);
  EXPECT_THROW(read_hdf5_step(h5.string(), 3), std::runtime_error);
  EXPECT_THROW(read_hdf5_step(h5.string(), -4), std::runtime_error);

  // Raw layout: attributes on group and dataset, stored type per precision.
  const std::string ds = "/steps/00000010/temperature";
  EXPECT_EQ(raw_attribute<double>(h5.string(), ds, "time", H5T_NATIVE_DOUBLE), 0.125);
  EXPECT_EQ(raw_attribute<std::int64_t>(h5.string(), ds, "step", H5T_NATIVE_INT64), 10);
  EXPECT_EQ(raw_attribute<double>(h5.string(), "/steps/00000010", "time", H5T_NATIVE_DOUBLE),
            0.125);
  EXPECT_EQ(raw_attribute<std::int64_t>(h5.string(), "/steps/00000020", "step", H5T_NATIVE_INT64),
            20);
  EXPECT_EQ(raw_attribute<int>(h5.string(), "/", "dimensions", H5T_NATIVE_INT), g.dims);
  EXPECT_EQ(raw_type_size(h5.string(), ds), precision == Precision::Float ? 4u : 8u);

  // XDMF.
  const std::string x = test_support::file_bytes(xdmf);
  std::string why;
  EXPECT_TRUE(xml_well_formed(x, why)) << why << "\n" << x;
  EXPECT_NE(x.find("<Xdmf Version=\"3.0\""), std::string::npos);
  EXPECT_NE(x.find("GridType=\"Collection\" CollectionType=\"Temporal\""), std::string::npos);
  EXPECT_EQ(count_of(x, "GridType=\"Uniform\""), 3u);
  EXPECT_EQ(count_of(x, "Center=\"Cell\""), 3u);
  EXPECT_NE(x.find("<Time Value=\"0\"/>"), std::string::npos) << x;
  EXPECT_NE(x.find("<Time Value=\"0.125\"/>"), std::string::npos) << x;
  EXPECT_NE(x.find("<Time Value=\"0.30000000000000004\"/>"), std::string::npos) << x;
  EXPECT_NE(x.find(">" + name + ".h5:/steps/00000020/temperature<"), std::string::npos) << x;
  EXPECT_EQ(x.find(".partial"), std::string::npos);
  const std::string prec = precision == Precision::Float ? "Precision=\"4\" Format=\"HDF\""
                                                         : "Precision=\"8\" Format=\"HDF\"";
  EXPECT_EQ(count_of(x, prec), 3u) << x;
  if (g.dims == 3) {
    EXPECT_NE(x.find("TopologyType=\"3DCoRectMesh\" Dimensions=\"4 5 6\""), std::string::npos);
    EXPECT_NE(x.find("GeometryType=\"ORIGIN_DXDYDZ\""), std::string::npos);
    EXPECT_NE(x.find(">2 -1 0.5</DataItem>"), std::string::npos) << x;     // origin z y x
    EXPECT_NE(x.find(">0.3 0.2 0.1</DataItem>"), std::string::npos) << x;  // spacing z y x
    EXPECT_NE(x.find("<DataItem Dimensions=\"3 4 5\""), std::string::npos) << x;
  } else {
    // 2D: a 3D mesh one point thick in z (ParaView puts 2DCoRectMesh in the y-z plane).
    EXPECT_NE(x.find("TopologyType=\"3DCoRectMesh\" Dimensions=\"1 4 7\""), std::string::npos);
    EXPECT_NE(x.find("GeometryType=\"ORIGIN_DXDYDZ\""), std::string::npos);
    EXPECT_NE(x.find(">0 0.25 -1</DataItem>"), std::string::npos) << x;
    EXPECT_NE(x.find(">1 0.125 0.5</DataItem>"), std::string::npos) << x;
    EXPECT_NE(x.find("<DataItem Dimensions=\"3 6\""), std::string::npos) << x;
  }
}

TEST(Hdf5Writer, Series3DFloat) {
  check_series<float>(grid3d(), Precision::Float);
}
TEST(Hdf5Writer, Series3DDouble) {
  check_series<double>(grid3d(), Precision::Double);
}
TEST(Hdf5Writer, Series2DFloat) {
  check_series<float>(grid2d(), Precision::Float);
}
TEST(Hdf5Writer, Series2DDouble) {
  check_series<double>(grid2d(), Precision::Double);
}

TEST(Hdf5Writer, ConvertsBetweenPrecisions) {
  TempDir dir;
  const OutputGrid g = grid3d();
  {
    auto w = make_hdf5_writer(dir.str(), "f2d", g, Precision::Double);
    w->write(1, 0.5, field<float>(g, 1).data(), Block::whole(g));
    w->finalize();
  }
  {
    auto w = make_hdf5_writer(dir.str(), "d2f", g, Precision::Float);
    w->write(1, 0.5, field<double>(g, 1).data(), Block::whole(g));
    w->finalize();
  }
  auto a = read_hdf5_step((dir.path() / "f2d.h5").string());
  auto b = read_hdf5_step((dir.path() / "d2f.h5").string());
  EXPECT_EQ(a.precision, Precision::Double);
  EXPECT_EQ(b.precision, Precision::Float);
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(a.data, field<double>(g, 1));
}

// Blocks written separately land at their hyperslab (the path a decomposed run takes), and the
// reader returns a block on request.
TEST(Hdf5Writer, BlocksComposeAndReadBack) {
  TempDir dir;
  const OutputGrid g = grid3d();  // 5 x 4 x 3
  const std::vector<double> full = field<double>(g, 7);
  auto extract = [&](const Block& b) {
    std::vector<double> out;
    for (int k = 0; k < b.count[2]; ++k)
      for (int j = 0; j < b.count[1]; ++j)
        for (int i = 0; i < b.count[0]; ++i)
          out.push_back(
              full[(std::size_t(b.offset[2] + k) * 4 + (b.offset[1] + j)) * 5 + (b.offset[0] + i)]);
    return out;
  };
  Block lo, hi;
  lo.offset = {0, 0, 0};
  lo.count = {2, 4, 3};
  hi.offset = {2, 0, 0};
  hi.count = {3, 4, 3};
  auto w = make_hdf5_writer(dir.str(), "blocks", g, Precision::Double);
  w->write(7, 1.5, extract(hi).data(), hi);
  w->write(7, 1.5, extract(lo).data(), lo);
  w->finalize();
  const std::string h5 = (dir.path() / "blocks.h5").string();
  EXPECT_EQ(list_hdf5_steps(h5).size(), 1u);
  EXPECT_EQ(read_hdf5_step(h5).data, full);
  Block mid;
  mid.offset = {1, 1, 1};
  mid.count = {3, 2, 2};
  EXPECT_EQ(read_hdf5_step(h5, kLastStep, &mid).data, extract(mid));
  EXPECT_EQ(count_of(test_support::file_bytes(dir.path() / "blocks.xdmf"), "<Time "), 1u);
}

// Materials as cell fields: written once in blocks (as ranks do), stored in double whatever
// the series' precision, read back whole, and listed in every step of the XDMF.
TEST(Hdf5Writer, CellFieldsComposeAndAppearInEveryStep) {
  TempDir dir;
  const OutputGrid g = grid3d();  // 5 x 4 x 3
  std::vector<double> k(Block::whole(g).size()), c(k.size());
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = 0.1 + 1e-3 * double(i), c[i] = 4e6 + double(i);
  Block lo, hi;
  lo.count = {5, 4, 1};
  hi.offset = {0, 0, 1};
  hi.count = {5, 4, 2};
  auto w = make_hdf5_writer(dir.str(), "mat", g, Precision::Float);
  w->write_cell_fields({{"conductivity", k.data()}, {"heat_capacity", c.data()}}, lo);
  w->write_cell_fields({{"conductivity", k.data() + 20}, {"heat_capacity", c.data() + 20}}, hi);
  for (std::int64_t s : {0, 4})
    w->write(s, 0.5 * double(s), field<float>(g, s).data(), Block::whole(g));
  w->finalize();
  const std::string h5 = (dir.path() / "mat.h5").string();
  EXPECT_EQ(read_hdf5_cell_field(h5, "conductivity"), k);  // double: no rounding to float
  EXPECT_EQ(read_hdf5_cell_field(h5, "heat_capacity"), c);
  EXPECT_EQ(raw_type_size(h5, "/cell_fields/conductivity"), 8u);
  EXPECT_EQ(list_hdf5_steps(h5).size(), 2u);  // the cell fields are no step
  EXPECT_THROW(read_hdf5_cell_field(h5, "density"), std::runtime_error);
  const std::string xdmf = test_support::file_bytes(dir.path() / "mat.xdmf");
  EXPECT_EQ(count_of(xdmf, "mat.h5:/cell_fields/conductivity</DataItem>"), 2u);
  EXPECT_EQ(count_of(xdmf, "mat.h5:/cell_fields/heat_capacity</DataItem>"), 2u);
  std::string why;
  EXPECT_TRUE(xml_well_formed(xdmf, why)) << why;
}

TEST(Hdf5Writer, RewritingAStepReplacesIt) {
  TempDir dir;
  const OutputGrid g = grid2d();
  auto w = make_hdf5_writer(dir.str(), "again", g, Precision::Float);
  w->write(5, 1.0, field<float>(g, 1).data(), Block::whole(g));
  w->write(5, 2.0, field<float>(g, 2).data(), Block::whole(g));
  w->finalize();
  auto s = read_hdf5_step((dir.path() / "again.h5").string());
  EXPECT_EQ(list_hdf5_steps((dir.path() / "again.h5").string()).size(), 1u);
  EXPECT_EQ(s.time, 2.0);
  EXPECT_EQ(s.data, field<double>(g, 2));
  EXPECT_EQ(count_of(test_support::file_bytes(dir.path() / "again.xdmf"), "<Time "), 1u);
}

TEST(Hdf5Writer, CrashLeavesPreviousFilesIntact) {
  TempDir dir;
  const OutputGrid g = grid3d();
  const fs::path h5 = dir.path() / "run.h5", xdmf = dir.path() / "run.xdmf";
  {
    auto good = make_hdf5_writer(dir.str(), "run", g, Precision::Double);
    good->write(0, 0.0, field<double>(g, 0).data(), Block::whole(g));
    good->write(1, 0.1, field<double>(g, 1).data(), Block::whole(g));
    good->finalize();
  }
  const std::string good_h5 = test_support::file_bytes(h5),
                    good_xdmf = test_support::file_bytes(xdmf);
  {
    auto crashed = make_hdf5_writer(dir.str(), "run", g, Precision::Double);
    crashed->write(0, 0.0, field<double>(g, 5).data(), Block::whole(g));
    crashed->write(9, 9.0, field<double>(g, 9).data(), Block::whole(g));
  }  // destroyed without finalize(): a simulated crash
  EXPECT_EQ(test_support::file_bytes(h5), good_h5);
  EXPECT_EQ(test_support::file_bytes(xdmf), good_xdmf);
  EXPECT_EQ(read_hdf5_step(h5.string()).step, 1);
  EXPECT_EQ(read_hdf5_step(h5.string()).data, field<double>(g, 1));
  // The partial file is left for inspection and still holds the steps written before.
  const fs::path partial = dir.path() / "run.h5.partial";
  ASSERT_TRUE(fs::exists(partial));
  EXPECT_EQ(read_hdf5_step(partial.string()).step, 9);

  // The next run truncates the stale partial file and publishes normally.
  {
    auto next = make_hdf5_writer(dir.str(), "run", g, Precision::Double);
    next->write(3, 0.3, field<double>(g, 3).data(), Block::whole(g));
    next->finalize();
  }
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_EQ(list_hdf5_steps(h5.string()).size(), 1u);
  EXPECT_EQ(read_hdf5_step(h5.string()).data, field<double>(g, 3));
  EXPECT_EQ(count_of(test_support::file_bytes(xdmf), "<Time "), 1u);
}

TEST(Hdf5Writer, CreatesTheDirectory) {
  TempDir dir;
  const OutputGrid g = grid2d();
  auto w = make_hdf5_writer((dir.path() / "a" / "b").string(), "nested", g, Precision::Double);
  w->write(0, 0.0, field<double>(g, 0).data(), Block::whole(g));
  w->finalize();
  EXPECT_TRUE(fs::exists(dir.path() / "a" / "b" / "nested.h5"));
}

// Error messages name the file and what failed.
void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "'" << e.what() << "' lacks '" << p << "'";
    }
  }
}

TEST(Hdf5Writer, ErrorsNameFileAndOperation) {
  TempDir dir;
  const OutputGrid g = grid3d();
  const std::string missing = (dir.path() / "nope.h5").string();
  expect_error([&] { read_hdf5_step(missing); }, {"open", missing});
  expect_error([&] { list_hdf5_steps(missing); }, {"open", missing});

  std::ofstream(dir.path() / "garbage.h5") << "not hdf5";
  expect_error([&] { read_hdf5_step((dir.path() / "garbage.h5").string()); },
               {"open", "garbage.h5"});

  auto w = make_hdf5_writer(dir.str(), "bad", g, Precision::Float);
  Block outside;
  outside.offset = {3, 0, 0};
  outside.count = {5, 4, 3};
  std::vector<float> v(outside.size());
  expect_error([&] { w->write(0, 0.0, v.data(), outside); }, {"bad.h5.partial", "outside"});

  // A directory path that is a file.
  std::ofstream(dir.path() / "file") << "x";
  expect_error([&] { make_hdf5_writer((dir.path() / "file").string(), "x", g, Precision::Float); },
               {"file"});
  // A path the HDF5 library cannot create: the partial name is taken by a directory.
  fs::create_directories(dir.path() / "taken.h5.partial");
  expect_error([&] { make_hdf5_writer(dir.str(), "taken", g, Precision::Float); },
               {"create", "taken.h5.partial"});

  OutputGrid bad = g;
  bad.cells[1] = 0;
  expect_error([&] { make_hdf5_writer(dir.str(), "zero", bad, Precision::Float); },
               {"zero.h5", "invalid grid"});
}

// h5::fixed_string_attribute: a fixed-length string's value (a full-length one without its NUL
// too), nullopt for a variable-length string and a number, an error naming the attribute where
// it does not exist.
TEST(Hdf5Attributes, FixedLengthStringsOnly) {
  TempDir dir;
  const std::string path = (dir.path() / "attributes.h5").string();
  h5::File f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "create");
  h5::Dataspace scalar(H5Screate(H5S_SCALAR), "space");
  const auto string_attribute = [&](const char* name, std::size_t size, const void* value) {
    h5::Datatype type(H5Tcopy(H5T_C_S1), "type");
    h5::check(H5Tset_size(type.get(), size), "size");
    h5::Attribute a(H5Acreate2(f.get(), name, type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
                    "create attribute");
    h5::check(H5Awrite(a.get(), type.get(), value), "write");
  };
  string_attribute("padded", 16, "deck\0\0\0\0\0\0\0\0\0\0\0\0");
  string_attribute("full", 4, "heat");  // no room for a NUL: all four characters
  const char* text = "variable";
  string_attribute("variable", H5T_VARIABLE, &text);
  const int number = 7;
  h5::Attribute n(
      H5Acreate2(f.get(), "number", H5T_NATIVE_INT, scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
      "create number");
  h5::check(H5Awrite(n.get(), H5T_NATIVE_INT, &number), "write number");

  EXPECT_EQ(h5::fixed_string_attribute(f.get(), "padded", path), "deck");
  EXPECT_EQ(h5::fixed_string_attribute(f.get(), "full", path), "heat");
  EXPECT_EQ(h5::fixed_string_attribute(f.get(), "variable", path), std::nullopt);
  EXPECT_EQ(h5::fixed_string_attribute(f.get(), "number", path), std::nullopt);
  expect_error([&] { h5::fixed_string_attribute(f.get(), "absent", path); },
               {"attribute 'absent'", path});
}

#else

TEST(Hdf5Writer, UnavailableWithoutHdf5) {
  OutputGrid g;
  EXPECT_THROW(make_hdf5_writer("out", "x", g, Precision::Double), std::runtime_error);
}

#endif  // HEATSOLVE_HAVE_HDF5

}  // namespace
