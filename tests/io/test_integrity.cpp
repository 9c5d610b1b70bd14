// Integrity of what heatsolve writes (issue #31, docs/robustness.md): checksummed checkpoints
// and series steps (a flipped byte is detected, never read back as data), the run identity
// that ties a series to its run, the checkpoints a restart may fall back to, the disk space
// reserved before HDF5 writes (a file past `ulimit -f` ends with a clean error, the file
// still closes), and files never written through a planted symbolic link.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/atomic_file.hpp"
#include "io/checkpoint.hpp"
#include "io/field_writer.hpp"
#include "io/hdf5_storage.hpp"
#include "io/hdf5_writer.hpp"
#include "io/run_identity.hpp"
#include "io/run_lock.hpp"
#include "tests/file_bytes.hpp"
#include "tests/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace heatsolve;

using test_support::TempDir;

namespace {

// Flips one bit of the first occurrence of `bytes` in `file`; false when not found.
bool flip_inside(const fs::path& file, const std::string& bytes, std::size_t at = 3) {
  std::string text = test_support::file_bytes(file);
  const std::size_t pos = text.find(bytes);
  if (pos == std::string::npos) return false;
  text[pos + at] = static_cast<char>(text[pos + at] ^ 0x10);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
  return true;
}

template <typename T>
std::string raw(const std::vector<T>& v, std::size_t from, std::size_t count) {
  return std::string(reinterpret_cast<const char*>(v.data() + from), count * sizeof(T));
}

// Resets the process-wide run identity and manifest around a test.
struct IdentityGuard {
  IdentityGuard() { clear_series_steps(); }
  ~IdentityGuard() {
    set_run_identity({});
    clear_series_steps();
  }
};

CheckpointState small_state(const std::vector<double>& u) {
  CheckpointState s;
  s.problem = "heat";
  s.precision = Precision::Double;
  s.deck_hash = "0123456789abcdef";
  s.deck_hashed = "{}";
  s.dims = 3;
  s.cells = {8, 4, 2};
  s.step = 20;
  s.time = 0.5;
  s.dt = 0.025;
  s.block.count = s.cells;
  CheckpointField f{"u", {}};
  f.bytes.resize(u.size() * sizeof(double));
  std::memcpy(f.bytes.data(), u.data(), f.bytes.size());
  s.fields.push_back(f);
  return s;
}

std::vector<double> ramp(std::size_t n, double base) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = base + double(i) / 7.0;
  return v;
}

OutputGrid grid_3d() {
  OutputGrid g;
  g.dims = 3;
  g.cells = {8, 4, 2};
  g.spacing = {0.125, 0.25, 0.5};
  return g;
}

}  // namespace

TEST(HdfStorage, ChunksAreWholeRowsAndPlanesUnderTheTarget) {
#ifdef HEATSOLVE_HAVE_HDF5
  EXPECT_EQ(h5::chunk_dims({64, 64, 64}, 8, 1 << 20), (std::vector<hsize_t>{32, 64, 64}));
  EXPECT_EQ(h5::chunk_dims({4, 4, 4}, 8, 1 << 20), (std::vector<hsize_t>{4, 4, 4}));
  EXPECT_EQ(h5::chunk_dims({2, 4096, 4096}, 8, 1 << 20), (std::vector<hsize_t>{1, 32, 4096}));
  EXPECT_EQ(h5::chunk_dims({0, 2}, 8), (std::vector<hsize_t>{1, 2}));
#else
  GTEST_SKIP() << "built without HDF5";
#endif
}

#ifdef HEATSOLVE_HAVE_HDF5

TEST(CheckpointIntegrity, AFlippedByteInAFieldIsDetected) {
  TempDir dir;
  const std::vector<double> u = ramp(64, 1.0);
  const std::string path = (dir.path() / "ck.h5").string();
  write_checkpoint(path, small_state(u));
  const CheckpointState header = read_checkpoint_header(path);
  EXPECT_NO_THROW(verify_checkpoint(path, header));
  ASSERT_TRUE(flip_inside(path, raw(u, 30, 2)));
  try {
    verify_checkpoint(path, header);
    FAIL() << "a damaged field was accepted";
  } catch (const CheckpointDamaged& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("checkpoint '" + path + "' is damaged"), std::string::npos) << what;
    EXPECT_NE(what.find("Fletcher32"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_THROW(read_checkpoint(path, header.block), std::runtime_error);
}

TEST(CheckpointIntegrity, AFlippedByteInAnAttributeIsDetected) {
  TempDir dir;
  const std::string path = (dir.path() / "ck.h5").string();
  write_checkpoint(path, small_state(ramp(64, 1.0)));
  // The deck hash attribute's text: its object header carries a checksum (HDF5 1.10 format).
  ASSERT_TRUE(flip_inside(path, "0123456789abcdef"));
  EXPECT_THROW(read_checkpoint_header(path), std::runtime_error);
}

TEST(CheckpointIntegrity, AMissingFieldIsDamage) {
  TempDir dir;
  CheckpointState s = small_state(ramp(64, 1.0));
  s.fields[0].name = "v";  // no "u"
  const std::string path = (dir.path() / "ck.h5").string();
  write_checkpoint(path, s);
  try {
    verify_checkpoint(path, read_checkpoint_header(path));
    FAIL() << "a checkpoint without u was accepted";
  } catch (const CheckpointDamaged& e) {
    EXPECT_NE(std::string(e.what()).find("field 'u' is missing"), std::string::npos) << e.what();
  }
}

TEST(CheckpointIntegrity, RecordsTheLineageAndTheSeriesSteps) {
  TempDir dir;
  IdentityGuard guard;
  set_run_identity({"feedfacefeedfacefeedfacefeedface", "0123456789abcdef"});
  for (std::int64_t s : {0, 10, 20, 30}) record_series_step(s);
  const std::string path = (dir.path() / "ck.h5").string();
  write_checkpoint(path, small_state(ramp(64, 1.0)));  // step 20
  const CheckpointState h = read_checkpoint_header(path);
  EXPECT_EQ(h.lineage, "feedfacefeedfacefeedfacefeedface");
  EXPECT_TRUE(h.has_series_steps);
  EXPECT_EQ(h.series_steps, (std::vector<std::int64_t>{0, 10, 20}));
}

TEST(CheckpointIntegrity, RestartCandidatesAreTheLatestThenOlderNewestFirst) {
  TempDir dir;
  for (int s : {10, 20, 30, 40}) std::ofstream(checkpoint_path(dir.str(), s)) << "x";
  std::ofstream(checkpoint_latest_path(dir.str())) << "checkpoint_00000030.h5\n";
  const std::vector<std::string> c = restart_candidates("latest", dir.str());
  // 40 belongs to a run restarted from further back: never a fall-back.
  EXPECT_EQ(
      c, (std::vector<std::string>{checkpoint_path(dir.str(), 30), checkpoint_path(dir.str(), 20),
                                   checkpoint_path(dir.str(), 10)}));
  EXPECT_EQ(restart_candidates(checkpoint_path(dir.str(), 20), dir.str()),
            (std::vector<std::string>{checkpoint_path(dir.str(), 20)}));
  // checkpoint_latest naming a missing file still falls back to the older ones.
  fs::remove(checkpoint_path(dir.str(), 30));
  EXPECT_EQ(restart_candidates("latest", dir.str()).size(), 3u);
  for (int s : {10, 20}) fs::remove(checkpoint_path(dir.str(), s));
  EXPECT_THROW(restart_candidates("latest", dir.str()), CheckpointMismatch);
}

// A latest-file that is there but cannot be read says why, not that there is none.
TEST(CheckpointIntegrity, UnreadableLatestFileSaysWhy) {
  TempDir dir;
  std::ofstream(checkpoint_path(dir.str(), 10)) << "x";
  const std::string latest = checkpoint_latest_path(dir.str());
  const auto message = [&] {
    try {
      restart_candidates("latest", dir.str());
    } catch (const CheckpointMismatch& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  fs::create_symlink(latest, latest);  // a loop
  EXPECT_NE(message().find("cannot read '" + latest + "': Too many levels of symbolic links"),
            std::string::npos)
      << message();
  fs::remove(latest);
  fs::create_symlink(dir.path() / "gone", latest);
  EXPECT_NE(message().find("cannot read '" + latest + "': No such file or directory"),
            std::string::npos)
      << message();
  fs::remove(latest);
  fs::create_directory(latest);
  EXPECT_NE(message().find("cannot read '" + latest + "': it is a directory"), std::string::npos)
      << message();
  fs::remove(latest);
  EXPECT_NE(message().find("no '" + latest + "'"), std::string::npos) << message();
}

TEST(CheckpointIntegrity, NeverWritesThroughASymlinkAtTheTemporaryName) {
  TempDir dir;
  const fs::path target = dir.path() / "outside.txt";
  std::ofstream(target) << "precious";
  const std::string path = (dir.path() / "checkpoint_00000020.h5").string();
  fs::create_symlink(target, path + ".tmp");
  try {
    write_checkpoint(path, small_state(ramp(64, 1.0)));
    FAIL() << "wrote through a symbolic link";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test_support::file_bytes(target), "precious");
  EXPECT_FALSE(fs::exists(path));
}

TEST(SeriesIntegrity, StepsAreChecksummedAndTiedToTheirRun) {
  TempDir dir;
  IdentityGuard guard;
  set_run_identity({"00112233445566778899aabbccddeeff", "fedcba9876543210"});
  const OutputGrid g = grid_3d();
  const std::vector<double> a = ramp(64, 1.0), b = ramp(64, 100.0);
  {
    auto w = make_hdf5_writer(dir.str(), "run", g, Precision::Double);
    w->write(0, 0.0, a.data(), Block::whole(g));
    w->write(10, 0.25, b.data(), Block::whole(g));
    w->finalize();
  }
  EXPECT_EQ(series_steps_through(100), (std::vector<std::int64_t>{0, 10}));
  const std::string h5 = (dir.path() / "run.h5").string();
  const Hdf5SeriesInfo info = read_hdf5_series_info(h5);
  EXPECT_EQ(info.format, "heatsolve-timeseries");
  EXPECT_EQ(info.lineage, "00112233445566778899aabbccddeeff");
  EXPECT_EQ(info.deck_hash, "fedcba9876543210");
  EXPECT_EQ(info.steps, (std::vector<std::int64_t>{0, 10}));
  {
    Hdf5SeriesReader r(h5);
    EXPECT_EQ(r.verify(10), 0.25);
    EXPECT_EQ(r.read(10).data, b);
  }
  ASSERT_TRUE(flip_inside(h5, raw(b, 20, 2)));
  Hdf5SeriesReader r(h5);
  EXPECT_NO_THROW(r.verify(0));
  try {
    r.verify(10);
    FAIL() << "a damaged step was accepted";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("step 10 of '" + h5 + "' cannot be read back intact"), std::string::npos)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_THROW(r.read(10), std::runtime_error);
  EXPECT_THROW(r.read(5), std::runtime_error);  // no such step
}

TEST(SeriesIntegrity, AFileSizeLimitEndsCleanlyAndKeepsTheStepsBefore) {
  TempDir dir;
  IdentityGuard guard;
  const OutputGrid g = [] {
    OutputGrid o;
    o.cells = {32, 32, 8};  // 64 KiB a step
    return o;
  }();
  const std::vector<double> v = ramp(std::size_t(32) * 32 * 8, 0.0);
  struct rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGXFSZ, &ignore, &previous);
  struct rlimit limit = old;
  limit.rlim_cur = 400 << 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  std::string error;
  std::int64_t written = 0;
  {
    auto w = make_hdf5_writer(dir.str(), "big", g, Precision::Double);
    try {
      for (; written < 20; ++written) w->write(written, double(written), v.data(), Block::whole(g));
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
  }  // closed without finalize(): the run's error path
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::sigaction(SIGXFSZ, &previous, nullptr);
  EXPECT_NE(error.find("cannot write step " + std::to_string(written) + " to '"), std::string::npos)
      << error;
  EXPECT_NE(error.find("File too large"), std::string::npos) << error;
  EXPECT_GT(written, 1);
  EXPECT_FALSE(hdf5_objects_leaked());
  const Hdf5SeriesInfo info = read_hdf5_series_info((dir.path() / "big.h5.partial").string());
  ASSERT_EQ(info.steps.size(), std::size_t(written));
  Hdf5SeriesReader r((dir.path() / "big.h5.partial").string());
  for (std::int64_t s = 0; s < written; ++s) EXPECT_NO_THROW(r.verify(s));
}

TEST(SeriesIntegrity, NeverWritesThroughASymlinkAtThePartialName) {
  TempDir dir;
  const fs::path target = dir.path() / "outside.h5";
  std::ofstream(target) << "precious";
  fs::create_symlink(target, dir.path() / "run.h5.partial");
  try {
    make_hdf5_writer(dir.str(), "run", grid_3d(), Precision::Double);
    FAIL() << "wrote through a symbolic link";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test_support::file_bytes(target), "precious");
}

#endif  // HEATSOLVE_HAVE_HDF5

TEST(AtomicFileIntegrity, NeverWritesThroughASymlinkAtTheTemporaryName) {
  TempDir dir;
  const fs::path target = dir.path() / "outside.txt";
  std::ofstream(target) << "precious";
  const fs::path file = dir.path() / "summary.json";
  fs::create_symlink(target, file.string() + ".tmp." + std::to_string(::getpid()));
  EXPECT_THROW(write_file_atomically(file.string(), "{}"), std::runtime_error);
  EXPECT_EQ(test_support::file_bytes(target), "precious");
  EXPECT_FALSE(fs::exists(file));
  // A stale regular temporary of the same name is replaced.
  fs::remove(file.string() + ".tmp." + std::to_string(::getpid()));
  std::ofstream(file.string() + ".tmp." + std::to_string(::getpid())) << "stale";
  write_file_atomically(file.string(), "{}");
  EXPECT_EQ(test_support::file_bytes(file), "{}");
}

TEST(RunLockIntegrity, RefusesASymlinkAtTheLockFile) {
  TempDir dir;
  const fs::path target = dir.path() / "outside.txt";
  std::ofstream(target) << "precious";
  fs::create_symlink(target, dir.path() / RunLock::kFileName);
  try {
    RunLock lock(dir.str());
    FAIL() << "locked through a symbolic link";
  } catch (const RunLockError& e) {
    EXPECT_EQ(e.error(), ELOOP);
    EXPECT_NE(std::string(e.what()).find("is a symbolic link"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test_support::file_bytes(target), "precious");
}

TEST(RunIdentity, LineagesAreRandomHex) {
  const std::string a = new_lineage_id(), b = new_lineage_id();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
}
