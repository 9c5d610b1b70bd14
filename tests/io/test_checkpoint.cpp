// Checkpoint files (io/checkpoint.*) and restart in the engine: round trips, refusals,
// retention, and bitwise equality of interrupted-and-restarted runs with uninterrupted ones.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/checkpoint.hpp"
#include "io/deck.hpp"
#include "tests/solver_test_util.hpp"
#include "solvers/solver.hpp"

#ifdef HEATSOLVE_HAVE_HDF5
#include "io/hdf5_writer.hpp"
#endif

namespace fs = std::filesystem;
using namespace heatsolve;

namespace {

fs::path scratch(const std::string& name) {
  fs::path p =
      fs::temp_directory_path() / ("heatsolve_ckpt_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

template <typename T>
CheckpointField make_field(const std::string& name, std::size_t n, T base) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = base + T(i) / T(7);
  CheckpointField f{name, {}};
  f.bytes.resize(n * sizeof(T));
  std::memcpy(f.bytes.data(), v.data(), f.bytes.size());
  return f;
}

CheckpointState sample_state(Precision p, int dims) {
  CheckpointState s;
  s.problem = "poisson";
  s.method = "anderson";
  s.precision = p;
  s.deck_hash = "0123456789abcdef";
  s.deck_hashed = R"({"name":"x"})";
  s.dims = dims;
  s.cells = {5, 4, dims == 3 ? 3 : 1};
  s.step = 42;
  s.time = 42.0;
  s.dt = 0.125;
  s.residual = 3.5e-4;
  s.anderson_depth = 3;
  s.ring_position = 2;
  s.residual_history = {{10, 1.0}, {20, 0.25}, {42, 3.5e-4}};
  s.block.count = s.cells;
  const std::size_t n = s.block.size();
  for (const char* name : {"u", "F0", "g_prev"}) {
    if (p == Precision::Float)
      s.fields.push_back(make_field<float>(name, n, name[0] == 'u' ? 1.0f : 2.0f));
    else
      s.fields.push_back(make_field<double>(name, n, name[0] == 'u' ? 1.0 : 2.0));
  }
  return s;
}

}  // namespace

#ifdef HEATSOLVE_HAVE_HDF5

class CheckpointRoundTrip : public ::testing::TestWithParam<std::pair<Precision, int>> {};

TEST_P(CheckpointRoundTrip, WholeGridAndBlock) {
  const auto [precision, dims] = GetParam();
  const fs::path dir = scratch("roundtrip");
  const std::string path = checkpoint_path(dir.string(), 42);
  EXPECT_EQ(fs::path(path).filename(), "checkpoint_00000042.h5");
  const CheckpointState s = sample_state(precision, dims);
  write_checkpoint(path, s);
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  const CheckpointState r = read_checkpoint(path, s.block);
  EXPECT_EQ(r.problem, s.problem);
  EXPECT_EQ(r.method, s.method);
  EXPECT_EQ(r.precision, s.precision);
  EXPECT_EQ(r.deck_hash, s.deck_hash);
  EXPECT_EQ(r.deck_hashed, s.deck_hashed);
  EXPECT_EQ(r.dims, s.dims);
  EXPECT_EQ(r.cells, s.cells);
  EXPECT_EQ(r.step, s.step);
  EXPECT_EQ(r.time, s.time);
  EXPECT_EQ(r.dt, s.dt);
  EXPECT_EQ(r.residual, s.residual);
  EXPECT_EQ(r.anderson_depth, 3);
  EXPECT_EQ(r.ring_position, 2);
  EXPECT_EQ(r.residual_history, s.residual_history);
  EXPECT_EQ(r.ranks, 1);
  ASSERT_EQ(r.blocks.size(), 1u);
  EXPECT_EQ(r.blocks[0].count, s.cells);
  ASSERT_EQ(r.fields.size(), 3u);
  for (const CheckpointField& f : s.fields) {
    const CheckpointField* g = r.field(f.name);
    ASSERT_NE(g, nullptr) << f.name;
    EXPECT_EQ(g->bytes, f.bytes) << f.name;  // bitwise
  }

  // A sub-block (another decomposition reading the same file).
  Block b;
  b.offset = {1, 2, 0};
  b.count = {3, 2, dims == 3 ? 2 : 1};
  const CheckpointState part = read_checkpoint(path, b);
  const std::size_t es = precision == Precision::Float ? 4 : 8;
  const std::vector<unsigned char>& whole = s.field("u")->bytes;
  std::vector<unsigned char> expected;
  for (int k = 0; k < b.count[2]; ++k)
    for (int j = 0; j < b.count[1]; ++j) {
      const std::size_t first =
          (std::size_t(k + b.offset[2]) * s.cells[1] + (j + b.offset[1])) * s.cells[0] +
          b.offset[0];
      expected.insert(expected.end(), whole.begin() + first * es,
                      whole.begin() + (first + b.count[0]) * es);
    }
  EXPECT_EQ(part.field("u")->bytes, expected);

  // Header only: no fields.
  EXPECT_TRUE(read_checkpoint_header(path).fields.empty());
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Checkpoint, CheckpointRoundTrip,
                         ::testing::Values(std::make_pair(Precision::Double, 3),
                                           std::make_pair(Precision::Float, 3),
                                           std::make_pair(Precision::Double, 2),
                                           std::make_pair(Precision::Float, 2)));

TEST(Checkpoint, RefusesFilesThatAreNotCheckpoints) {
  const fs::path dir = scratch("refuse");
  const std::string text = (dir / "text.h5").string();
  std::ofstream(text) << "not hdf5\n";
  try {
    read_checkpoint_header(text);
    FAIL() << "accepted a text file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not an HDF5 file"), std::string::npos) << e.what();
  }
  // An HDF5 time series is HDF5 but not a checkpoint.
  OutputGrid g;
  g.cells = {2, 2, 2};
  auto w = make_hdf5_writer(dir.string(), "series", g, Precision::Double);
  std::vector<double> data(8, 1.0);
  Block b;
  b.count = {2, 2, 2};
  w->write(0, 0.0, data.data(), b);
  w->finalize();
  try {
    read_checkpoint_header((dir / "series.h5").string());
    FAIL() << "accepted a time series";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a heatsolve checkpoint"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_checkpoint_header((dir / "missing.h5").string()), std::runtime_error);
  fs::remove_all(dir);
}

#endif  // HEATSOLVE_HAVE_HDF5

TEST(Checkpoint, DeckHashIgnoresOutputExecutionAndRunLength) {
  const std::string base = R"(name: h
problem: {type: heat, dimensions: 2}
grid: {cells: [8, 8]}
time: {end: 0.01}
output: {directory: a, every: 3}
)";
  const Config a = parse_deck(base, "a.yaml");
  const Config b = parse_deck(base, "b.yaml",
                              {"output.directory=b", "output.checkpoint_every=5", "time.end=0.5",
                               "execution.walltime=00:01:00", "execution.backend=cpu"});
  EXPECT_EQ(checkpoint_deck_hash(a), checkpoint_deck_hash(b));
  EXPECT_EQ(checkpoint_deck_hash(a).size(), 16u);
  const Config c = parse_deck(base, "c.yaml", {"material.diffusivity=2"});
  EXPECT_NE(checkpoint_deck_hash(a), checkpoint_deck_hash(c));
}

TEST(Checkpoint, MismatchSaysWhatDiffers) {
  const std::string deck = R"(name: h
problem: {type: heat, dimensions: 2}
grid: {cells: [8, 8]}
time: {end: 0.01}
)";
  const Config cfg = parse_deck(deck, "a.yaml");
  CheckpointState h;
  h.problem = "heat";
  h.precision = Precision::Double;
  h.dims = 2;
  h.cells = {8, 8, 1};
  h.deck_hash = checkpoint_deck_hash(cfg);
  h.deck_hashed = checkpoint_deck_json(cfg);
  EXPECT_NO_THROW(check_checkpoint_matches(h, cfg, "ck.h5"));

  const Config other = parse_deck(deck, "a.yaml", {"material.diffusivity=2"});
  try {
    check_checkpoint_matches(h, other, "ck.h5");
    FAIL() << "accepted another deck";
  } catch (const CheckpointMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("/material"), std::string::npos) << e.what();
  }
  const Config single = parse_deck(deck, "a.yaml", {"execution.precision=float"});
  try {
    check_checkpoint_matches(h, single, "ck.h5");
    FAIL() << "accepted another precision";
  } catch (const CheckpointMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("precision: checkpoint 'double', deck 'float'"),
              std::string::npos)
        << e.what();
  }
}

TEST(Checkpoint, KeepsTwoNewestAndNamesTheLatest) {
  const fs::path dir = scratch("retention");
  for (int s : {10, 20, 30, 40, 50}) std::ofstream(checkpoint_path(dir.string(), s)) << "x";
  publish_checkpoint(dir.string(), checkpoint_path(dir.string(), 30), 30);
  // Older than the two newest up to 30 are gone; later ones (another timeline) stay.
  EXPECT_FALSE(fs::exists(checkpoint_path(dir.string(), 10)));
  EXPECT_TRUE(fs::exists(checkpoint_path(dir.string(), 20)));
  EXPECT_TRUE(fs::exists(checkpoint_path(dir.string(), 30)));
  EXPECT_TRUE(fs::exists(checkpoint_path(dir.string(), 50)));
  EXPECT_EQ(resolve_restart_path("latest", dir.string()), checkpoint_path(dir.string(), 30));
  EXPECT_THROW(resolve_restart_path("latest", (dir / "nowhere").string()), CheckpointMismatch);
  EXPECT_THROW(resolve_restart_path((dir / "none.h5").string(), dir.string()), CheckpointMismatch);
  fs::remove_all(dir);
}

#ifdef HEATSOLVE_HAVE_HDF5

namespace {

// Keeps the last field written (the final state of a run).
class LastField final : public FieldWriter {
 public:
  void write(std::int64_t step, double, const float* d, const Block& b) override {
    last_step = step;
    bytes.assign(reinterpret_cast<const unsigned char*>(d),
                 reinterpret_cast<const unsigned char*>(d + b.size()));
  }
  void write(std::int64_t step, double, const double* d, const Block& b) override {
    last_step = step;
    bytes.assign(reinterpret_cast<const unsigned char*>(d),
                 reinterpret_cast<const unsigned char*>(d + b.size()));
  }
  void finalize() override {}
  std::vector<std::string> files() const override { return {}; }
  std::int64_t last_step = -1;
  std::vector<unsigned char> bytes;
};

struct RunOutcome {
  RunResult result;
  std::vector<unsigned char> final_bytes;
};

RunOutcome run_engine(const Config& cfg, const std::string& restart = {},
                      const volatile std::sig_atomic_t* stop = nullptr) {
  RunContext ctx;
  ctx.domain = serial_domain(cfg.grid(), cfg.boundary);
  ctx.restart_path = restart;
  ctx.stop_flag = stop;
  LastField w;
  RunOutcome r;
  r.result = run_simulation(cfg, ctx, {&w});
  r.final_bytes = w.bytes;
  return r;
}

Config engine_config(const std::string& kind, Precision p, const fs::path& dir) {
  Config c = kind == "heat" ? heatsolve::testing::heat_config(2, 24, 0.02)
                            : heatsolve::testing::poisson_config(2, 24);
  if (kind != "heat") {
    c.source.type = ShapeType::Uniform;
    c.source.value = 1.0;
    c.max_iterations = 200;
    c.check_every = 5;
    c.method = kind == "anderson" ? SolverMethod::Anderson : SolverMethod::Jacobi;
    c.anderson_depth = 4;
  } else {
    c.initial.type = ShapeType::Sine;
    c.initial.amplitude = 1.0;
  }
  c.precision = p;
  c.output_directory = dir.string();
  c.deck = {{"name", "engine-" + kind}};
  return c;
}

}  // namespace

class EngineRestart : public ::testing::TestWithParam<std::pair<std::string, Precision>> {};

TEST_P(EngineRestart, InterruptedAndRestartedEqualsUninterrupted) {
  const auto& [kind, precision] = GetParam();
  const fs::path dir = scratch("engine_" + kind);
  Config cfg = engine_config(kind, precision, dir);
  const RunOutcome reference = run_engine(cfg);
  ASSERT_FALSE(reference.final_bytes.empty());
  ASSERT_FALSE(reference.result.interrupted);

  // Periodic checkpoints (about 4 per run); restart from the older kept one.
  const std::int64_t every = kind == "heat" ? 20 : 45;
  cfg.checkpoint_every = every;
  const RunOutcome full = run_engine(cfg);
  EXPECT_EQ(full.final_bytes, reference.final_bytes);
  const std::int64_t last = full.result.steps / every * every;
  ASSERT_GE(last, 3 * every);
  EXPECT_TRUE(fs::exists(checkpoint_path(dir.string(), last)));
  EXPECT_TRUE(fs::exists(checkpoint_path(dir.string(), last - every)));
  EXPECT_FALSE(fs::exists(checkpoint_path(dir.string(), last - 2 * every)));
  const RunOutcome resumed = run_engine(cfg, checkpoint_path(dir.string(), last - every));
  EXPECT_EQ(resumed.result.start_step, last - every);
  EXPECT_EQ(resumed.result.steps, reference.result.steps);
  EXPECT_EQ(resumed.final_bytes, reference.final_bytes);
  EXPECT_EQ(resumed.result.final_residual, reference.result.final_residual);

  // A stop request: finishes the step, checkpoints it, reports interruption.
  fs::remove_all(dir);
  fs::create_directories(dir);
  cfg.checkpoint_every = 0;
  volatile std::sig_atomic_t flag = SIGTERM;
  const RunOutcome stopped = run_engine(cfg, {}, &flag);
  EXPECT_TRUE(stopped.result.interrupted);
  EXPECT_EQ(stopped.result.stop_reason, "SIGTERM");
  EXPECT_EQ(stopped.result.steps, 1);
  EXPECT_EQ(stopped.result.checkpoint, checkpoint_path(dir.string(), 1));
  const RunOutcome restarted = run_engine(cfg, resolve_restart_path("latest", dir.string()));
  EXPECT_FALSE(restarted.result.interrupted);
  EXPECT_EQ(restarted.final_bytes, reference.final_bytes);
  EXPECT_EQ(restarted.result.residual_history.size(), reference.result.residual_history.size());
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Checkpoint, EngineRestart,
    ::testing::Values(std::make_pair(std::string("heat"), Precision::Double),
                      std::make_pair(std::string("heat"), Precision::Float),
                      std::make_pair(std::string("jacobi"), Precision::Double),
                      std::make_pair(std::string("anderson"), Precision::Double),
                      std::make_pair(std::string("anderson"), Precision::Float)),
    [](const auto& info) {
      return info.param.first + (info.param.second == Precision::Float ? "Float" : "Double");
    });

TEST(Checkpoint, BlowUpStopsWithoutCheckpointingIt) {
  const fs::path dir = scratch("blowup");
  Config cfg = engine_config("heat", Precision::Double, dir);
  cfg.source.type = ShapeType::Uniform;
  cfg.source.value = 1e308;
  cfg.checkpoint_every = 5;
  try {
    run_engine(cfg);
    FAIL() << "no blow-up detected";
  } catch (const BlowUpError& e) {
    EXPECT_NE(std::string(e.what()).find("not finite"), std::string::npos) << e.what();
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".h5") continue;
    // Any checkpoint left must hold a finite state.
    const CheckpointState s = read_checkpoint(entry.path().string(), Block{{0, 0, 0}, {24, 24, 1}});
    const auto* u = s.field("u");
    ASSERT_NE(u, nullptr);
    std::vector<double> v(u->bytes.size() / 8);
    std::memcpy(v.data(), u->bytes.data(), u->bytes.size());
    for (double x : v) ASSERT_TRUE(std::isfinite(x)) << entry.path();
  }
  fs::remove_all(dir);
}

#endif  // HEATSOLVE_HAVE_HDF5
