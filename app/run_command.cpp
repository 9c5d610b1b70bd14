#include "app/run_command.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>

#include "app/exit_codes.hpp"
#include "app/mpi_session.hpp"
#include "app/preflight.hpp"
#include "app/progress.hpp"
#include "app/restart.hpp"
#include "app/signals.hpp"
#include "app/summary.hpp"
#include "io/catalyst_adaptor.hpp"
#include "io/checkpoint.hpp"
#include "io/deck.hpp"
#include "io/diagnostics_writer.hpp"
#include "io/run_identity.hpp"
#include "io/run_lock.hpp"
#include "io/writer_factory.hpp"
#include "kernels/backend.hpp"
#include "kernels/device.hpp"
#include "solvers/parallel/decomposition.hpp"
#include "solvers/parallel/halo_exchange.hpp"
#include "solvers/problem/materials.hpp"
#ifdef HEATSOLVE_HAVE_HDF5
#include "io/hdf5_writer.hpp"  // copy_series reads the previous series
#endif

namespace fs = std::filesystem;

namespace heatsolve {

namespace {

// Refuses to clobber a previous run's results, then makes sure the directory is writable.
// Throws DeckError-free runtime errors (OutputRefused: app/restart.hpp); the caller maps
// them to exit codes.
void prepare_output_directory(const Config& cfg, bool overwrite) {
  const fs::path dir(cfg.output_directory);
  const fs::path previous[] = {dir / "summary.json", dir / (cfg.name + ".h5"),
                               dir / (cfg.name + ".xdmf"), dir / (cfg.name + ".pvd")};
  if (!overwrite)
    for (const fs::path& p : previous)
      if (fs::exists(p))
        throw OutputRefused(fmt::format(
            "output directory '{}' already holds results of a previous run ({}); pass "
            "--overwrite or set output.overwrite: true to replace them, or choose another "
            "output.directory",
            dir.string(), p.filename().string()));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error(
        fmt::format("cannot create output directory '{}': {}", dir.string(), ec.message()));
  const fs::path probe = dir / fmt::format(".heatsolve-write-test.{}", ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error(fmt::format("output directory '{}' is not writable: {}", dir.string(),
                                         std::strerror(errno)));
  ::close(fd);
  fs::remove(probe, ec);
}

// Rank 0: creates the output directory (as prepare_output_directory would) and locks it for
// the life of the run (io/run_lock.hpp). A directory held by another live run is refused
// (exit 2); a stale lock (its holder died) is taken over with a warning. Returns nothing when
// no lock can be had: in a directory we may not write (nothing can be written there either:
// prepare_output_directory reports it as before) or on a file system without flock(2).
std::unique_ptr<RunLock> lock_output_directory(const Config& cfg) {
  const fs::path dir(cfg.output_directory);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error(
        fmt::format("cannot create output directory '{}': {}", dir.string(), ec.message()));
  try {
    auto lock = std::make_unique<RunLock>(dir.string());
    if (const std::optional<LockHolder>& stale = lock->stale_holder()) {
      fmt::print(stderr,
                 "warning: taking over the lock of output directory '{}': the run that held it "
                 "({}) ended without releasing it (killed, crashed or aborted){}\n",
                 dir.string(), stale->describe(),
                 stale->host != lock->holder().host
                     ? "; if that run is in fact still alive, this file system does not share "
                       "locks between hosts (see docs/batch.md)"
                     : "");
    }
    return lock;
  } catch (const RunLockHeld& e) {
    throw OutputRefused(e.what());
  } catch (const RunLockError& e) {
    const int err = e.error();
    if (err == ELOOP) throw OutputRefused(e.what());  // a symbolic link planted at its name
    if ((err == EACCES || err == EPERM || err == EROFS) && ::access(dir.c_str(), W_OK) != 0)
      return nullptr;
    if (err == ENOSYS || err == EOPNOTSUPP || err == ENOLCK) {
      fmt::print(stderr,
                 "warning: {}: this file system does not support flock(2), so other runs "
                 "into '{}' are not kept out (see docs/batch.md)\n",
                 e.what(), dir.string());
      return nullptr;
    }
    throw;
  }
}

// Outcome of a step that only rank 0 performs, shared so that every rank leaves the same way.
struct RootVerdict {
  int status = 0;  // 0 ok, 1 input error (exit 2), 2 runtime error (exit 1)
  std::string message;
};

RootVerdict share_verdict(RootVerdict v) {
#ifdef HEATSOLVE_HAVE_MPI
  if (mpi_active() && world_size() > 1) {
    int header[2] = {v.status, int(v.message.size())};
    MPI_Bcast(header, 2, MPI_INT, 0, MPI_COMM_WORLD);
    v.status = header[0];
    v.message.resize(std::size_t(header[1]));
    if (header[1] > 0) MPI_Bcast(v.message.data(), header[1], MPI_CHAR, 0, MPI_COMM_WORLD);
  }
#endif
  return v;
}

// Runs `fn` on rank 0 only and shares the outcome: an InputError means exit 2 and any other
// failure exit 1, on every rank. Returns the exit code to leave with, or nothing on success.
template <typename InputError, typename Fn>
std::optional<int> on_root_shared(bool root, int nranks, Fn&& fn) {
  RootVerdict v;
  if (root) {
    try {
      fn();
    } catch (const InputError& e) {
      v = {1, e.what()};
    } catch (const std::exception& e) {
      if (nranks == 1) throw;
      v = {2, e.what()};
    }
  }
  v = share_verdict(v);
  if (v.status == 0) return std::nullopt;
  if (root) fmt::print(stderr, "error: {}\n", v.message);
  return v.status == 1 ? exit_code::kInputError : exit_code::kRuntimeError;
}

// Rank 0's `s` on every rank.
std::string share_string(const std::string& s) {
  return share_verdict({0, s}).message;
}

// Rank 0's list on every rank.
std::vector<std::int64_t> share_steps(const std::vector<std::int64_t>& steps) {
  std::string text;
  for (std::int64_t s : steps) text += std::to_string(s) + " ";
  std::vector<std::int64_t> out;
  std::size_t at = 0;
  text = share_string(text);
  while (at < text.size()) {
    const std::size_t end = text.find(' ', at);
    out.push_back(std::stoll(text.substr(at, end - at)));
    at = end + 1;
  }
  return out;
}

// The compute capability of the GPU this rank's backend will use (the device run_command gives
// it below; 0 without one), the lowest over the ranks so that all reach the same verdict on the
// deck. Collective under MPI: every rank parses the same deck and asks at the same point.
int run_compute_capability(int nranks) {
  const int count = device::count();
  int cc = count > 0 ? device::compute_capability(nranks > 1 ? gpu_for_this_rank(count) : -1) : 0;
#ifdef HEATSOLVE_HAVE_MPI
  if (mpi_active() && nranks > 1)
    MPI_Allreduce(MPI_IN_PLACE, &cc, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
#endif
  return cc;
}

// Restores the previous signal dispositions when run_command returns.
struct StopHandlersGuard {
  StopHandlersGuard() { install_stop_handlers(); }
  ~StopHandlersGuard() { restore_stop_handlers(); }
  StopHandlersGuard(const StopHandlersGuard&) = delete;
  StopHandlersGuard& operator=(const StopHandlersGuard&) = delete;
};

#ifdef HEATSOLVE_HAVE_MPI
// Test-only fault injection (tests/mpi): with HEATSOLVE_TEST_FAIL_RANK=R the rank R throws
// at its HEATSOLVE_TEST_FAIL_STEP-th halo exchange (default 5), while its peers are inside
// MPI: the job must still end promptly with an error.
template <typename T>
class FaultInjectingExchanger final : public HaloExchanger<T> {
 public:
  FaultInjectingExchanger(std::unique_ptr<HaloExchanger<T>> inner, int rank, long fail_at)
      : inner_(std::move(inner)), rank_(rank), fail_at_(fail_at) {}
  void exchange(Backend<T>& backend, T* u) override {
    tick();
    inner_->exchange(backend, u);
  }
  void begin(Backend<T>& backend, T* u) override {
    tick();
    inner_->begin(backend, u);
  }
  void send(Backend<T>& backend) override { inner_->send(backend); }
  void finish(Backend<T>& backend, T* u) override { inner_->finish(backend, u); }
  std::string transport() const override { return inner_->transport(); }
  std::unique_ptr<DeepHaloExchanger<T>> make_deep(
      int depth, ExchangeOrdering ordering = ExchangeOrdering::Host) const override {
    return inner_->make_deep(depth, ordering);
  }

 private:
  void tick() {
    if (++count_ == fail_at_)
      throw std::runtime_error(
          rank_ < 0 ? fmt::format("injected failure at halo exchange {} (HEATSOLVE_TEST_FAIL_RANK)",
                                  count_)
                    : fmt::format("injected failure on rank {} at halo exchange {} "
                                  "(HEATSOLVE_TEST_FAIL_RANK)",
                                  rank_, count_));
  }
  std::unique_ptr<HaloExchanger<T>> inner_;
  int rank_;
  long fail_at_, count_ = 0;
};

template <typename T>
std::unique_ptr<HaloExchanger<T>> make_exchanger(const CartesianDecomposition& d, HaloMode mode) {
  std::unique_ptr<HaloExchanger<T>> ex = std::make_unique<MpiHaloExchanger<T>>(d, mode);
  // HEATSOLVE_TEST_FAIL_RANK=<rank>: that rank fails; `all`: every rank, with one message.
  const char* fail_rank = std::getenv("HEATSOLVE_TEST_FAIL_RANK");
  const bool all = fail_rank && std::string(fail_rank) == "all";
  if (fail_rank && *fail_rank && (all || std::atoi(fail_rank) == d.domain().rank)) {
    const char* step = std::getenv("HEATSOLVE_TEST_FAIL_STEP");
    const long at = step && *step ? std::max(1L, std::atol(step)) : 5L;
    ex =
        std::make_unique<FaultInjectingExchanger<T>>(std::move(ex), all ? -1 : d.domain().rank, at);
  }
  return ex;
}
#endif

// Why `execution.backend: cuda` cannot run here ("" when it can): no CUDA in this build, or
// no usable device on this machine (on some rank of the job: collective under MPI, which is
// safe because every rank parses the same deck up to this question).
std::string cuda_device_problem() {
#ifndef HEATSOLVE_HAVE_CUDA
  return "this heatsolve was built without CUDA (`heatsolve info` says what a build has)";
#else
  const bool here = cuda_device_available();
  int everywhere = here ? 1 : 0;
#ifdef HEATSOLVE_HAVE_MPI
  if (mpi_active() && world_size() > 1)
    MPI_Allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
#endif
  if (everywhere) return "";
  return here ? "some rank of this job has no usable CUDA device"
              : "no usable CUDA device on this machine (no GPU, no driver, or none visible "
                "through CUDA_VISIBLE_DEVICES; `heatsolve info`)";
#endif
}

// The deck's checks, including those that depend on this machine (io knows no devices).
DeckFeatures deck_features_here() {
  DeckFeatures f = DeckFeatures::of_this_build();
  f.cuda_device_problem = cuda_device_problem;
  return f;
}

// How the finished HDF5 series is stored (rank 0, after the writers finalized): summary.json's
// "compression"; with compression on, also a log line with the ratio. Null without a series.
nlohmann::json series_storage(const Config& cfg, bool quiet) {
#ifdef HEATSOLVE_HAVE_HDF5
  if (std::find(cfg.formats.begin(), cfg.formats.end(), "hdf5") == cfg.formats.end())
    return nullptr;
  const std::string path = (fs::path(cfg.output_directory) / (cfg.name + ".h5")).string();
  const Compression& c = cfg.compression;
  try {
    const Hdf5StorageReport r = hdf5_storage_report(path);
    nlohmann::json j = {{"type", to_string(c.type)},      {"lossy", c.type == CompressionType::Zfp},
                        {"datasets", r.datasets},         {"data_bytes", r.data_bytes},
                        {"stored_bytes", r.stored_bytes}, {"ratio", r.ratio()}};
    std::string how = to_string(c.type);
    if (c.type == CompressionType::Deflate) {
      j["level"] = c.level;
      how += fmt::format(" level {}", c.level);
    } else if (c.type == CompressionType::Zfp) {
      j["tolerance"] = c.tolerance;
      how += fmt::format(" tolerance {:g}", c.tolerance);
    }
    if (!quiet && c.type != CompressionType::None)
      fmt::print(
          stderr,
          "[heatsolve] {}: {} steps, {:.4g} MB of values stored in {:.4g} MB ({}: {:.2f}x)\n", path,
          r.datasets, r.data_bytes * 1e-6, r.stored_bytes * 1e-6, how, r.ratio());
    return j;
  } catch (const std::exception& e) {
    fmt::print(stderr, "warning: cannot measure how '{}' is stored: {}\n", path, e.what());
  }
#else
  (void)cfg, (void)quiet;
#endif
  return nullptr;
}

}  // namespace

int validate_command(const RunOptions& opts) {
  try {
    const Config cfg = load_deck(opts.deck, opts.overrides, deck_features_here());
    if (!opts.quiet)
      fmt::print("{}: valid ({} {}D, {} cells{})\n", opts.deck, to_string(cfg.problem),
                 cfg.dimensions, cfg.grid().interior_size(),
                 cfg.problem == ProblemType::Heat
                     ? fmt::format(", {} steps of dt={:.6g}", cfg.steps, cfg.dt)
                     : std::string());
    // A closed pipe (SIGPIPE is ignored, main.cpp) or a full disk: an error, not a silent 0.
    if (std::fflush(stdout) != 0)
      throw std::runtime_error(
          fmt::format("cannot write to standard output: {}", std::strerror(errno)));
    return exit_code::kSuccess;
  } catch (const DeckError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return exit_code::kInputError;
  }
}

int run_command(const RunOptions& opts) {
  // Under MPI every rank runs this. Deck and decomposition problems are identical on all
  // ranks: rank 0 reports them, every rank returns the same code (MPI_Finalize cleanly).
  const int nranks = world_size();
  const bool root = world_rank() == 0;
  Config cfg;
  try {
    // The run's GPU is known here (validate cannot know it): a kernel it cannot run is a deck
    // error too, before the output directory exists.
    DeckFeatures features = deck_features_here();
    features.compute_capability = [nranks] { return run_compute_capability(nranks); };
    cfg = load_deck(opts.deck, opts.overrides, features);
  } catch (const DeckError& e) {
    if (root) fmt::print(stderr, "{}\n", e.what());
    return exit_code::kInputError;
  }
  // Which deck, where, when (summary.json); the deck file's bytes as they were validated.
  const RunProvenance provenance =
      root ? collect_provenance(opts.deck, opts.overrides, cfg) : RunProvenance{};
  // Memory preflight (app/preflight.hpp): a run that cannot fit stops here, before the
  // output directory is touched or anything is allocated. Collective: same answer everywhere.
  if (const std::string why = memory_preflight(cfg, nranks); !why.empty()) {
    if (root) fmt::print(stderr, "error: {}\n", why);
    return exit_code::kRuntimeError;
  }
  const bool overwrite = opts.overwrite || cfg.overwrite;
  // SIGTERM/SIGINT/SIGUSR1 from here on stop the run gracefully (checkpoint, exit 75).
  StopHandlersGuard stop_handlers;
  // In-situ scripts that render need a display, a virtual one, or an off-screen ParaView:
  // refused here, before the output directory is touched, when none can be had.
  if (!cfg.catalyst.empty())
    if (auto rc =
            on_root_shared<CatalystUnavailable>(root, nranks, [&] { check_catalyst_display(cfg); }))
      return *rc;
  // A run owns its output directory: rank 0 locks it before anything in it is read, moved or
  // written, and a directory held by another live run (--overwrite and --restart included)
  // is refused on every rank with exit 2. A restart into a directory that does not exist yet
  // checks its checkpoint first, so that a refused restart still leaves no directory behind.
  if (!opts.restart.empty())
    if (auto rc = on_root_shared<CheckpointMismatch>(root, nranks, [&] {
          std::error_code ec;
          if (!fs::exists(cfg.output_directory, ec)) plan_restart(opts.restart, cfg, true);
        }))
      return *rc;
  std::unique_ptr<RunLock> lock;  // released when run_command returns or throws
  if (auto rc = on_root_shared<OutputRefused>(root, nranks, [&] {
        lock = lock_output_directory(cfg);
        refuse_planted_links(cfg);
      }))
    return *rc;
  RestartPlan restart;
  if (!opts.restart.empty()) {
    if (auto rc = on_root_shared<CheckpointMismatch>(
            root, nranks, [&] { restart = plan_restart(opts.restart, cfg); }))
      return *rc;
    restart.checkpoint = share_string(restart.checkpoint);
    restart.series_source = share_string(restart.series_source);
    restart.step = std::stoll(share_string(std::to_string(restart.step)));
    restart.lineage = share_string(restart.lineage);
    restart.series_steps = share_steps(restart.series_steps);
  }
  // A restart continues in its own output directory: no --overwrite needed. A fresh start
  // begins a new lineage (app/restart.hpp).
  if (auto rc = on_root_shared<OutputRefused>(root, nranks, [&] {
        remove_stale_temporaries(cfg);
        prepare_output_directory(cfg, overwrite || !restart.checkpoint.empty());
        if (restart.checkpoint.empty()) start_fresh(cfg, overwrite);
      }))
    return *rc;
  // What ties this run's files together (io/run_identity.hpp): the checkpoint's lineage, or
  // a new one; set on every rank before the writers start.
  set_run_identity(
      {share_string(restart.checkpoint.empty() ? (root ? new_lineage_id() : "") : restart.lineage),
       checkpoint_deck_hash(cfg)});
  clear_series_steps();

  RunContext ctx;
  WriterRanks io_ranks;  // who writes the series: this process alone unless decomposed
  ctx.restart_path = restart.checkpoint;
  ctx.stop_flag = stop_flag();
  ctx.start_time = process_start_time();
#ifdef HEATSOLVE_HAVE_MPI
  // Domain decomposition (also for a single rank under MPI: one block, no peers).
  std::unique_ptr<CartesianDecomposition> decomposition;
  std::unique_ptr<MpiReducer> reducer;
  std::unique_ptr<HaloExchanger<float>> exchanger_f;
  std::unique_ptr<HaloExchanger<double>> exchanger_d;
  if (mpi_active()) {
    try {
      decomposition = std::make_unique<CartesianDecomposition>(MPI_COMM_WORLD, cfg.grid(),
                                                               cfg.boundary, cfg.decomposition);
    } catch (const DecompositionError& e) {
      if (root) fmt::print(stderr, "error: {}\n", e.what());
      return exit_code::kInputError;
    }
    ctx.domain = decomposition->domain();
    reducer = std::make_unique<MpiReducer>(decomposition->comm());
    ctx.reducer = reducer.get();
    ctx.checkpoint_comm = decomposition->io_comm();
    ctx.comm = decomposition->comm();
    if (nranks == 1) {
      // One block, no peers: no exchanger (keeps single-rank-only paths such as temporal
      // blocking available).
    } else if (cfg.precision == Precision::Float) {
      exchanger_f = make_exchanger<float>(*decomposition, cfg.halo);
      ctx.exchanger_f = exchanger_f.get();
    } else {
      exchanger_d = make_exchanger<double>(*decomposition, cfg.halo);
      ctx.exchanger_d = exchanger_d.get();
      if (cfg.mixed_precision) {  // the float hierarchy's finest level exchanges its halos too
        exchanger_f = make_exchanger<float>(*decomposition, cfg.halo);
        ctx.exchanger_f = exchanger_f.get();
      }
    }
  } else {
    ctx.domain = serial_domain(cfg.grid(), cfg.boundary);
  }
  // Collective writers: same ranks as the decomposition, without the Cartesian topology
  // (see CartesianDecomposition::io_comm()). Without MPI (no launcher) the serial writers.
  const bool parallel_io = decomposition != nullptr;
  if (parallel_io) io_ranks.comm = decomposition->io_comm();
#else
  ctx.domain = serial_domain(cfg.grid(), cfg.boundary);
#endif

  // In-situ output: Catalyst starts and loads every script before any step runs (and before
  // the writers open their files); a script that does not load ends the run here.
  std::unique_ptr<CatalystAdaptor> catalyst;
  if (!cfg.catalyst.empty()) {
    try {
#ifdef HEATSOLVE_HAVE_MPI
      catalyst = parallel_io ? std::make_unique<CatalystAdaptor>(cfg, output_grid(cfg),
                                                                 decomposition->io_comm())
                             : std::make_unique<CatalystAdaptor>(cfg, output_grid(cfg));
#else
      catalyst = std::make_unique<CatalystAdaptor>(cfg, output_grid(cfg));
#endif
    } catch (const std::exception& e) {  // the ranks agree on it (CatalystAdaptor)
      if (root) fmt::print(stderr, "error: {}\n", e.what());
      return exit_code::kRuntimeError;
    }
    ctx.catalyst = catalyst.get();
  }

  std::vector<std::unique_ptr<FieldWriter>> writers = make_writers(cfg, output_grid(cfg), io_ranks);
  std::vector<FieldWriter*> writer_ptrs;
  for (auto& w : writers) writer_ptrs.push_back(w.get());
  // The materials as cell fields, once per series, so ParaView shows the regions.
  if (!writers.empty() && has_material_fields(cfg)) {
    const MaterialFields m = material_fields(cfg, ctx.domain);
    // A `diffusivity` heat deck's coefficient is the diffusivity, its rho cp a formal 1.
    const bool heat = cfg.problem == ProblemType::Heat;
    const bool diffusivity = heat && !cfg.material.physical;
    std::vector<CellField> fields{
        {diffusivity ? "diffusivity" : "conductivity", m.conductivity.data()}};
    if (heat && !diffusivity) fields.push_back({"heat_capacity", m.heat_capacity.data()});
    for (auto& w : writers) w->write_cell_fields(fields, ctx.domain.block);
  }
  copy_series(restart, cfg, ctx.domain.block, writer_ptrs);
  // diagnostics.csv (output.diagnostics): rank 0 writes it, starting with the rows the
  // restart's checkpoint counts (io/diagnostics_writer.hpp); the other ranks take part in
  // the reductions its rows come from.
  std::unique_ptr<DiagnosticsWriter> diagnostics;
  if (cfg.diagnostics.enabled())
    if (auto rc = on_root_shared<OutputRefused>(root, nranks, [&] {
          diagnostics = std::make_unique<DiagnosticsWriter>(
              cfg.output_directory, diagnostics_columns(cfg), restart.diagnostics);
        }))
      return *rc;
  ctx.diagnostics = diagnostics.get();

  ctx.backend_options = backend_options_for(cfg);
  // One GPU per rank on multi-GPU nodes: node-local rank modulo the visible devices.
  if (cfg.backend != BackendKind::Cpu && nranks > 1)
    ctx.backend_options.device = gpu_for_this_rank(device::count());
#ifdef HEATSOLVE_HAVE_MPI
  // kernel: auto under decomposition: every rank takes the variant that is fastest on the
  // slowest rank (each rank waits for its neighbours every step).
  if (decomposition) ctx.backend_options.agree_timings = agree_on_slowest(decomposition->comm());
#endif
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  ProgressPrinter progress(cfg.problem == ProblemType::Heat, stderr, tty);
  // Only rank 0 prints. The heat loop decides *locally* (wall clock) when a progress report
  // is due and then runs a global reduction, so with several ranks a callback on rank 0
  // alone would mismatch the collectives: heat runs on more than one rank get no live
  // progress until the engine makes that decision collective (see docs/mpi.md).
  const bool live_progress = root;
  if (!opts.quiet && live_progress)
    ctx.on_progress = [&progress](const ProgressInfo& p) { progress(p); };

  if (!opts.quiet && root) {
    fmt::print(stderr, "[heatsolve] {}: {} {}D, {} cells, {}\n", cfg.name, to_string(cfg.problem),
               cfg.dimensions, cfg.grid().interior_size(), to_string(cfg.precision));
#ifdef HEATSOLVE_HAVE_MPI
    if (nranks > 1)
      fmt::print(stderr, "[heatsolve] {} MPI ranks, decomposition {}, halo {}, overlap {}\n",
                 nranks, decomposition->describe(), to_string(cfg.halo),
                 cfg.overlap ? "on" : "off");
#endif
  }
  if (!restart.checkpoint.empty() && !opts.quiet && root)
    fmt::print(stderr, "[heatsolve] restarting from {} ({} {})\n", restart.checkpoint,
               cfg.problem == ProblemType::Heat ? "step" : "iteration", restart.step);
  const auto finalize_writers = [&](RunResult* result) {
    for (auto& w : writers) {
      w->finalize();  // collective under MPI
      if (result)
        for (const std::string& f : w->files()) result->files.push_back(f);
    }
    if (diagnostics) {
      diagnostics->finalize();
      if (result) result->files.push_back(diagnostics->path());
    }
    if (root) finish_restart(cfg);  // the published series holds everything now
  };
  // A failure every rank agrees on (a blow-up: global reductions; a Catalyst script: the
  // adaptor's agreement) ends the run keeping the outputs written so far.
  const auto stop_keeping_outputs = [&](const std::exception& e) {
    if (live_progress) progress.finish();
    finalize_writers(nullptr);
    if (root) fmt::print(stderr, "error: {}\n", e.what());
    return exit_code::kRuntimeError;
  };
  RunResult result;
  try {
    result = run_simulation(cfg, ctx, writer_ptrs);
    if (nranks > 1 && !opts.quiet)  // which device each rank ran on, for batch logs
      fmt::print(stderr, "[heatsolve] rank {}: {}, {:.3f} s\n", world_rank(),
                 result.backend_description, result.wall_seconds);
  } catch (const BlowUpError& e) {
    return stop_keeping_outputs(e);
  } catch (const CatalystError& e) {
    return stop_keeping_outputs(e);
  } catch (const std::exception& e) {
    // A failure on one rank while its peers wait in MPI: end the job here, before unwinding
    // past the writers (their destructors close MPI-IO files collectively and would wait for
    // those peers forever).
    if (nranks > 1) {
      lock.reset();  // an orderly end: released, not left behind as a killed run's
      abort_job_for(e);
    }
    throw;
  }
  if (live_progress) progress.finish();
  finalize_writers(&result);
  if (catalyst) result.catalyst = catalyst->report();
  if (result.interrupted) {
    if (root) {
      write_residual_history(cfg.output_directory, result);
      fmt::print(
          stderr,
          "[heatsolve] interrupted by {} after {} {}{}: checkpoint {}\n"
          "[heatsolve] continue with: heatsolve run {}{} --restart latest\n",
          result.stop_reason, cfg.problem == ProblemType::Heat ? "step" : "iteration", result.steps,
          cfg.problem == ProblemType::Heat ? fmt::format(" (t = {:.6g})", result.final_time)
                                           : std::string(),
          result.checkpoint, opts.deck, opts.overrides.empty() ? "" : " (the same --set options)");
    }
    return exit_code::kInterrupted;
  }
  if (root) {
    write_residual_history(cfg.output_directory, result);
    nlohmann::json summary = make_summary(cfg, result, nranks);
    add_provenance(summary, provenance);
    if (nlohmann::json storage = series_storage(cfg, opts.quiet); !storage.is_null())
      summary["compression"] = std::move(storage);
    if (diagnostics) summary["diagnostics"] = diagnostics->summary();
    write_summary(cfg.output_directory, summary);
  }
  if (!opts.quiet && root)
    fmt::print(stderr,
               "[heatsolve] done: {} {} on {} ({}), kernel {}, {:.3f} s, {:.3g} Mpoints/s, "
               "final residual {:.3e}\n",
               result.steps, cfg.problem == ProblemType::Heat ? "steps" : "iterations",
               result.backend, result.backend_description, result.kernel, result.wall_seconds,
               result.points_per_second * 1e-6, result.final_residual);
  if (cfg.problem == ProblemType::Poisson && !result.converged) {
    if (root)
      fmt::print(
          stderr,
          "warning: did not converge to tolerance {:.3e} in {} iterations (residual {:.3e}){}\n",
          cfg.tolerance, result.steps, result.final_residual,
          result.stop_reason.empty() ? "" : ": " + result.stop_reason);
    return exit_code::kNotConverged;
  }
  return exit_code::kSuccess;
}

}  // namespace heatsolve
