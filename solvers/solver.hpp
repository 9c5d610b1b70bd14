// Runs a validated Config: builds the fields, drives the backend through the time loop
// (heat) or the Jacobi/Anderson iteration (Poisson), and hands output steps to the writers.
#pragma once

#include <array>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "io/config.hpp"
#include "io/field_writer.hpp"
#include "solvers/parallel/domain.hpp"

#ifdef HEATSOLVE_HAVE_MPI
#include <mpi.h>
#endif

namespace heatsolve {

class CatalystAdaptor;
class DiagnosticsWriter;

// One progress report: step or iteration count, simulated time (heat), latest norm.
struct ProgressInfo {
  std::int64_t step = 0, total = 0;  // total: steps (heat) or max_iterations (Poisson)
  double time = 0;
  double residual = 0;
  double points_per_second = 0;
  double elapsed_seconds = 0;
  double eta_seconds = -1;  // < 0: unknown
};

struct RunResult {
  std::string backend, backend_description, kernel;
  std::string halo_transport;  // decomposed runs: how halos travelled ("ipc", "staged", ...)
  int halo_depth = 0;          // decomposed runs: ghost layers exchanged at once (fused passes)
  // time_block: auto, decomposed: ms a step of single steps and of deep-halo passes as timed
  // before the run ({-1, -1}: not timed).
  std::array<double, 2> time_block_trial_ms{-1, -1};
  // Decomposed runs: seconds spent setting the deep halo up (allocation, margins of the
  // source, auto's trial), like the one-layer exchange's set-up not in wall_seconds.
  double halo_setup_seconds = 0;
  Precision precision = Precision::Double;
  std::int64_t steps = 0;  // time steps (heat) or iterations (Poisson)
  double final_time = 0;
  double final_residual = 0;
  bool converged = false;  // Poisson: tolerance reached
  double wall_seconds = 0;
  double points_per_second = 0;  // interior point updates per second (all ranks)
  double total_heat = 0;         // sum of u * cell volume at the end
  std::vector<std::pair<std::int64_t, double>> residual_history;
  // Multigrid and mg-cg runs (Poisson, implicit heat): levels, cycles, convergence factor
  // per cycle, time per phase; null otherwise.
  nlohmann::json multigrid;
  std::vector<std::string> files;
  nlohmann::json catalyst;  // in-situ output: calls and seconds (CatalystAdaptor::report)
  // Checkpoint/restart (docs/batch.md).
  std::int64_t start_step = 0;  // step/iteration the run started from (restart), else 0
  bool interrupted = false;     // stopped early by a signal or the walltime limit
  std::string stop_reason;      // "SIGTERM", "walltime", ... when interrupted
  std::string checkpoint;       // the last checkpoint written by this run ("" if none)
};

// The solution stopped being finite, or a Poisson residual grew past 1e6 x its initial
// value. Thrown identically on every rank (the checks use global reductions): exit code 1.
struct BlowUpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parallel context of a run; the defaults make a serial run.
struct RunContext {
  Domain domain;
  const Reducer* reducer = nullptr;             // null: serial
  HaloExchanger<float>* exchanger_f = nullptr;  // null: no peers
  HaloExchanger<double>* exchanger_d = nullptr;
  std::function<void(const ProgressInfo&)> on_progress;  // called at most every ~1 s
  BackendOptions backend_options;
  // Checkpoint/restart and graceful stop (docs/batch.md).
  std::string restart_path;  // non-empty: continue from this checkpoint (already validated)
  const volatile std::sig_atomic_t* stop_flag = nullptr;  // non-zero: stop after this step
  std::chrono::steady_clock::time_point start_time = std::chrono::steady_clock::now();  // walltime
  CatalystAdaptor* catalyst = nullptr;  // in-situ output (output.catalyst); null: none
  // diagnostics.csv's writer (output.diagnostics): rank 0's; null on the other ranks and
  // without diagnostics. The rows are computed on every rank (collective) when the deck asks.
  DiagnosticsWriter* diagnostics = nullptr;
#ifdef HEATSOLVE_HAVE_MPI
  MPI_Comm checkpoint_comm = MPI_COMM_NULL;  // ranks writing checkpoints together (multi-rank)
  MPI_Comm comm = MPI_COMM_NULL;             // the decomposition's ranks (multigrid agglomeration)
#endif
};

// The deck's execution choices a backend takes (kernel, block, time_block); the device and
// the MPI timing agreement are the caller's.
BackendOptions backend_options_for(const Config& cfg);

// Runs the whole problem. Writers receive the local block of each output step.
RunResult run_simulation(const Config& cfg, RunContext& ctx, std::vector<FieldWriter*> writers);

// Convenience for tests: a serial run returning the final interior field (x fastest).
template <typename T>
RunResult run_serial(const Config& cfg, std::vector<T>* final_field,
                     std::vector<FieldWriter*> writers = {});

// The deck's source terms, summed: cfg.sources when it holds several, else cfg.source alone
// (none: empty), so that a Config whose `source` was set or changed by hand means it.
std::vector<Shape> source_terms(const Config& cfg);
// Whether a run of cfg keeps a source field f on each rank: a source term, or, with materials
// by region, a neumann or heat_flux face whose flux enters f (a nonzero value or a table).
bool has_source_field(const Config& cfg);
// Whether f is refilled on the host as the run advances: a heat deck whose source terms or,
// with regions, flux faces change with time, and whose f is not one separable term on a
// uniform material (that one the backend rescales in place: Backend::rescale_source).
bool source_refilled_on_host(const Config& cfg);

// Evaluates a Shape at the cell centres of `domain.local` into a padded array.
template <typename T>
void fill_shape(std::vector<T>& padded, const Shape& shape, const Config& cfg,
                const Domain& domain);

// (offset, scale) of a shape's separable form (kernels/stencil/source.hpp) from its `value`
// and `amplitude`; the factors depend on its geometry alone. Throws for None and File.
std::array<double, 2> separable_strength(const Shape& shape);

// A Shape (not None) in separable form on `domain.local` (kernels/stencil/source.hpp): one
// factor per axis at the cell centres, evaluated in double; cells past the global grid (deep
// halo margins across a periodic face) take the factor of the cell they wrap to, as the
// exchanged values do.
template <typename T>
SeparableSource<T> separable_shape(const Shape& shape, const Config& cfg, const Domain& domain);

// The padded field of a separable form on g (ghosts 0): separable_value() at every cell.
template <typename T>
void fill_separable(std::vector<T>& padded, const SeparableSource<T>& form, const GridDesc& g);

}  // namespace heatsolve
