// What a run's series call their field, through real runs of the binary: `temperature` for
// heat (steps at simulated times), `solution` for Poisson (steps are iterations: the HDF5 step
// attribute `iteration` instead of `time`; XDMF and PVD list the iteration as the time value
// and say so). A killed Poisson run restarted from its checkpoint reads its own series back
// (the restart copy) and ends with the uninterrupted run's series.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "io/hdf5_writer.hpp"
#include "tests/file_bytes.hpp"
#include "tests/temp_dir.hpp"

#ifdef HEATSOLVE_HAVE_HDF5
#include <hdf5.h>
#endif

namespace heatsolve {
namespace {

namespace fs = std::filesystem;

using test_support::TempDir;

// Runs the heatsolve binary with `args` (and `env` assignments before it); the exit status.
int run(const std::string& args, const std::string& env = "") {
  const std::string cmd = env + " OMP_NUM_THREADS=1 '" + std::string(HEATSOLVE_BINARY) + "' " +
                          args + " -q > /dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

fs::path write_deck(const fs::path& dir, const std::string& text) {
  const fs::path deck = dir / "deck.yaml";
  std::ofstream(deck) << text;
  return deck;
}

std::string poisson_deck(const fs::path& out) {
  return "name: p\n"
         "problem: {type: poisson, dimensions: 2}\n"
         "grid: {cells: [16, 16]}\n"
         "source: {type: sine, amplitude: 19.739208802178716}\n"
         "solver: {method: jacobi, tolerance: 1.0e-6, check_every: 10}\n"
         "execution: {backend: cpu}\n"
         "output: {directory: " +
         out.string() + ", every: 100, formats: [hdf5, vtk], checkpoint_every: 200}\n";
}

#if defined(HEATSOLVE_HAVE_HDF5) && defined(HEATSOLVE_HAVE_VTK)

bool has_attribute(const fs::path& file, const std::string& object, const char* name) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0) << file;
  const hid_t o = H5Oopen(f, object.c_str(), H5P_DEFAULT);
  EXPECT_GE(o, 0) << object;
  const bool has = H5Aexists(o, name) > 0;
  H5Oclose(o);
  H5Fclose(f);
  return has;
}

TEST(FieldNaming, PoissonSeriesHoldSolutionAtIterations) {
  const TempDir dir;
  const fs::path out = dir.path() / "out";
  ASSERT_EQ(run("run " + write_deck(dir.path(), poisson_deck(out)).string()), 0);
  const fs::path h5 = out / "p.h5";
  const std::vector<Hdf5StepInfo> steps = list_hdf5_steps(h5.string());
  ASSERT_GE(steps.size(), 3u);
  for (const Hdf5StepInfo& s : steps) {
    EXPECT_TRUE(std::regex_match(s.dataset, std::regex(R"(/steps/\d{8}/solution)"))) << s.dataset;
    EXPECT_EQ(s.time, double(s.step));  // readers see the iteration where a time would be
    const std::string group = s.dataset.substr(0, s.dataset.rfind('/'));
    EXPECT_TRUE(has_attribute(h5, group, "iteration")) << group;
    EXPECT_FALSE(has_attribute(h5, group, "time")) << group;
    EXPECT_TRUE(has_attribute(h5, s.dataset, "iteration")) << s.dataset;
  }
  EXPECT_EQ(read_hdf5_step(h5.string()).grid.problem, ProblemType::Poisson);
  const std::string xdmf = test_support::file_bytes(out / "p.xdmf");
  EXPECT_NE(xdmf.find("<Attribute Name=\"solution\""), std::string::npos) << xdmf;
  EXPECT_NE(xdmf.find(":/steps/00000100/solution</DataItem>"), std::string::npos);
  EXPECT_NE(xdmf.find("<Time Value=\"100\"/>"), std::string::npos);
  EXPECT_NE(xdmf.find("each Time Value is the iteration number"), std::string::npos);
  EXPECT_EQ(xdmf.find("temperature"), std::string::npos);
  const std::string pvd = test_support::file_bytes(out / "p.pvd");
  EXPECT_NE(pvd.find("timestep=\"100\" group=\"\" part=\"0\" file=\"p_vti/p_00000100.vti\""),
            std::string::npos)
      << pvd;
  EXPECT_NE(pvd.find("each timestep is the iteration number"), std::string::npos);
  const std::string vti = test_support::file_bytes(out / "p_vti" / "p_00000100.vti");
  EXPECT_NE(vti.find("Name=\"solution\""), std::string::npos);
  EXPECT_EQ(vti.find("temperature"), std::string::npos);
}

TEST(FieldNaming, HeatSeriesHoldTemperatureAtTimes) {
  const TempDir dir;
  const fs::path out = dir.path() / "out";
  const fs::path deck = write_deck(dir.path(),
                                   "name: h\nproblem: {type: heat, dimensions: 2}\n"
                                   "grid: {cells: [8, 8]}\ntime: {steps: 20, dt: 0.001}\n"
                                   "initial: {type: sine, amplitude: 1}\n"
                                   "execution: {backend: cpu}\n"
                                   "output: {directory: " +
                                       out.string() + ", every: 10, formats: [hdf5, vtk]}\n");
  ASSERT_EQ(run("run " + deck.string()), 0);
  const fs::path h5 = out / "h.h5";
  for (const Hdf5StepInfo& s : list_hdf5_steps(h5.string())) {
    EXPECT_TRUE(std::regex_match(s.dataset, std::regex(R"(/steps/\d{8}/temperature)")));
    EXPECT_NEAR(s.time, 0.001 * double(s.step), 1e-15);
    const std::string group = s.dataset.substr(0, s.dataset.rfind('/'));
    EXPECT_TRUE(has_attribute(h5, group, "time"));
    EXPECT_FALSE(has_attribute(h5, group, "iteration"));
  }
  EXPECT_NE(test_support::file_bytes(out / "h.xdmf").find("<Attribute Name=\"temperature\""),
            std::string::npos);
  EXPECT_NE(test_support::file_bytes(out / "h_vti" / "h_00000010.vti").find("Name=\"temperature\""),
            std::string::npos);
  EXPECT_NE(test_support::file_bytes(out / "h.pvd").find("timestep=\"0.01\""), std::string::npos);
}

TEST(FieldNaming, KilledPoissonRunRestartsItsSolutionSeries) {
  const TempDir dir;
  const fs::path whole = dir.path() / "whole", parts = dir.path() / "parts";
  fs::create_directories(whole);
  fs::create_directories(parts);
  ASSERT_EQ(run("run " + write_deck(whole, poisson_deck(whole / "out")).string()), 0);
  const fs::path deck = write_deck(parts, poisson_deck(parts / "out"));
  ASSERT_EQ(run("run " + deck.string(), "HEATSOLVE_TEST_FAULT=checkpoint@400:KILL"), 128 + 9);
  ASSERT_EQ(run("run " + deck.string() + " --restart latest"), 0);
  const std::string a = (whole / "out" / "p.h5").string(), b = (parts / "out" / "p.h5").string();
  const std::vector<Hdf5StepInfo> sa = list_hdf5_steps(a), sb = list_hdf5_steps(b);
  ASSERT_EQ(sa.size(), sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].step, sb[i].step);
    EXPECT_EQ(sa[i].dataset, sb[i].dataset);
    EXPECT_EQ(read_hdf5_step(a, std::int64_t(i)).data, read_hdf5_step(b, std::int64_t(i)).data)
        << sa[i].step;
  }
  EXPECT_EQ(test_support::file_bytes(whole / "out" / "p.xdmf"),
            test_support::file_bytes(parts / "out" / "p.xdmf"));
}

#endif

}  // namespace
}  // namespace heatsolve
