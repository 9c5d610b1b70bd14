// The writer factory: one writer per output.formats entry, in order, each publishing its files
// under output.directory; a format this build lacks is a runtime error that names it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/writer_factory.hpp"

namespace fs = std::filesystem;

namespace heatsolve {
namespace {

#ifdef HEATSOLVE_HAVE_HDF5
constexpr bool kHdf5 = true;
#else
constexpr bool kHdf5 = false;
#endif
#ifdef HEATSOLVE_HAVE_VTK
constexpr bool kVtk = true;
#else
constexpr bool kVtk = false;
#endif

Config small_config(const fs::path& dir, std::vector<std::string> formats) {
  Config cfg;
  cfg.name = "wf";
  cfg.dimensions = 2;
  cfg.cells = {4, 3, 1};
  cfg.precision = Precision::Float;
  cfg.output_directory = dir.string();
  cfg.formats = std::move(formats);
  return cfg;
}

fs::path temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path p = fs::temp_directory_path() /
                     ("heatsolve_wf_" + std::to_string(::getpid()) + "_" + info->name());
  fs::remove_all(p);
  return p;
}

TEST(WriterFactory, NoFormatsNoWriters) {
  const fs::path dir = temp_dir();
  EXPECT_TRUE(make_writers(small_config(dir, {}), output_grid(small_config(dir, {}))).empty());
}

TEST(WriterFactory, OneWriterPerFormatInOrder) {
  const fs::path dir = temp_dir();
  std::vector<std::string> formats;
  if (kVtk) formats.push_back("vtk");
  if (kHdf5) formats.push_back("hdf5");
  if (formats.empty()) GTEST_SKIP() << "built without HDF5 and VTK";
  const Config cfg = small_config(dir, formats);
  const auto writers = make_writers(cfg, output_grid(cfg));
  ASSERT_EQ(writers.size(), formats.size());
  const std::vector<float> field(12, 1.5f);
  Block whole;
  whole.count = {4, 3, 1};
  for (const auto& w : writers) {
    w->write(0, 0.0, field.data(), whole);
    w->finalize();
  }
  // The first writer's files are the first format's: .pvd for VTK, .h5 for HDF5.
  const std::string first = writers.front()->files().front();
  EXPECT_NE(first.find(formats.front() == "vtk" ? ".pvd" : ".h5"), std::string::npos) << first;
  for (const auto& w : writers)
    for (const std::string& f : w->files()) EXPECT_TRUE(fs::exists(f)) << f;
  fs::remove_all(dir);
}

TEST(WriterFactory, MissingFormatIsNamed) {
  const fs::path dir = temp_dir();
  for (const char* format : {"hdf5", "vtk"}) {
    const bool built = std::string(format) == "hdf5" ? kHdf5 : kVtk;
    if (built) continue;
    const Config cfg = small_config(dir, {format});
    try {
      make_writers(cfg, output_grid(cfg));
      ADD_FAILURE() << format << " made without the library";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + format + "'"), std::string::npos)
          << e.what();
    }
  }
  const Config other = small_config(dir, {"netcdf"});
  EXPECT_THROW(make_writers(other, output_grid(other)), std::runtime_error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace heatsolve
