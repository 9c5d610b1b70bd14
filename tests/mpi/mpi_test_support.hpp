// What the MPI suite's files share (tests/mpi, one executable heatsolve_mpi_tests): the check
// counter reported by rank 0, deck builders, the decompositions to try, a writer that keeps
// each output step's block, a decomposed run's context and the comparisons of fields.
#pragma once

#include <fmt/format.h>
#include <mpi.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "io/config.hpp"
#include "io/field_writer.hpp"
#include "solvers/parallel/decomposition.hpp"
#include "solvers/parallel/halo_exchange.hpp"
#include "solvers/solver.hpp"

namespace heatsolve::mpi_tests {

namespace fs = std::filesystem;

extern int g_rank, g_size;
extern int g_failures, g_checks;
extern std::string g_workdir;  // the suite's work directory (argv[1])

// Records a failed check on this rank (reported by rank 0 at the end via a reduction).
#define CHECK(cond, ...)                                                                       \
  do {                                                                                         \
    ++::heatsolve::mpi_tests::g_checks;                                                        \
    if (!(cond)) {                                                                             \
      ++::heatsolve::mpi_tests::g_failures;                                                    \
      std::fprintf(stderr, "[rank %d] FAILED %s:%d: %s: %s\n", ::heatsolve::mpi_tests::g_rank, \
                   __FILE__, __LINE__, #cond, fmt::format(__VA_ARGS__).c_str());               \
    }                                                                                          \
  } while (0)

// Prints on rank 0.
void log(const std::string& s);

// ---- configs ---------------------------------------------------------------------------

struct Case {
  std::string name;
  Config cfg;
  // Multigrid: cycles the decomposed run may take beyond the serial one's, or save (full
  // multigrid's nested iteration starts at the last distributed level, prolongates the
  // gathered levels' pass linearly, and its cubic stencils are one-sided at the blocks'
  // edges).
  int extra_cycles = 0;
};

// A heat deck on the unit-ish box: a Gaussian initial field, output every third of `steps`;
// the backend, kernel and halo transport from HEATSOLVE_TEST_BACKEND, _KERNEL, _HALO.
Config base_config(int dims, std::array<int, 3> cells, std::int64_t steps, Precision prec);

// The faces in order (x-, x+, y-, y+, z-, z+), Dirichlet 0 for those not listed.
BoundaryFaces faces(std::initializer_list<FaceBC> list);

// Materials by region (variable coefficients): a conducting sphere and an insulating box in
// a base material, with physical units.
void add_materials(Config& c);

// Every (px, py[, pz]) with product `size` fitting the grid, then auto ({0,0,0}).
std::vector<std::array<int, 3>> decompositions(const Config& c, int size);

// At most n of `all` (the automatic one, last, kept), evenly spread: the multigrid cases' many
// solves on 4 and 8 ranks oversubscribing CI's 2 cores would take minutes each.
std::vector<std::array<int, 3>> spread(const std::vector<std::array<int, 3>>& all, std::size_t n);

// ---- capture of output steps and comparisons -------------------------------------------

// Keeps every output step's local block (as doubles; floats convert exactly).
class CaptureWriter final : public FieldWriter {
 public:
  struct Step {
    std::int64_t step;
    double time;
    Block block;
    std::vector<double> data;
  };
  void write(std::int64_t step, double time, const float* d, const Block& b) override {
    steps.push_back({step, time, b, std::vector<double>(d, d + b.size())});
  }
  void write(std::int64_t step, double time, const double* d, const Block& b) override {
    steps.push_back({step, time, b, std::vector<double>(d, d + b.size())});
  }
  void finalize() override {}
  std::vector<std::string> files() const override { return {}; }
  std::vector<Step> steps;
};

// One decomposed run's context: halo exchangers of both precisions on `dec` and the
// RunContext that names them with the reducer, the communicator and the deck's kernel.
struct DecomposedRun {
  MpiHaloExchanger<float> ex_f;
  MpiHaloExchanger<double> ex_d;
  RunContext ctx;
  DecomposedRun(const CartesianDecomposition& dec, const Config& cfg, MpiReducer& reducer)
      : ex_f(dec, cfg.halo), ex_d(dec, cfg.halo) {
    ctx.domain = dec.domain();
    ctx.backend_options.kernel = cfg.kernel;
    ctx.reducer = &reducer;
    ctx.comm = dec.comm();
    ctx.exchanger_f = &ex_f;
    ctx.exchanger_d = &ex_d;
  }
  DecomposedRun(const DecomposedRun&) = delete;
  DecomposedRun& operator=(const DecomposedRun&) = delete;
};

// Assembles the blocks of all ranks (global grid, x fastest) on rank 0.
std::vector<double> gather_global(const CaptureWriter::Step& s, const Config& c, MPI_Comm comm);

// Whether a and b hold the same bits; where not, the first difference in *where.
bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b, std::string* where);

// run_simulation on a decomposed run's context with the given writers.
RunResult run_any(const Config& cfg, RunContext& ctx, std::vector<FieldWriter*> writers);

// max |a - b| / max |b| (max |a - b| where b is zero; infinite for different sizes).
double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b);

// ---- the suite's parts in other files ------------------------------------------------

// test_mpi_multigrid.cpp: multigrid, mg-cg and implicit heat against the serial run; one
// exchanger kept over two runs; a decomposed run restarted from a checkpoint (HDF5).
void test_multigrid_equivalence();
void test_exchanger_reused();
void test_multigrid_restart();

}  // namespace heatsolve::mpi_tests
