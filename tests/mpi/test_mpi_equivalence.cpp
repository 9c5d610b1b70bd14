// MPI tests, run under mpirun with 1..8 ranks (tests/CMakeLists.txt, MPI section):
//   * decomposition rules (pure functions, rank 0);
//   * halo exchange: every Exchange ghost holds the neighbour's value (periodic wrap too);
//   * equivalence: heat and Jacobi runs on every decomposition of the rank count (and the
//     automatic one), 2D and 3D, every boundary type, uneven splits, float and double: the
//     field at every output step is BITWISE equal to the single-rank run (inputs over time too);
//   * parallel HDF5 output (collective, and gathered to rank 0) holds the same steps, times
//     and bits as the serial writer's file;
//   * multigrid/mg-cg Poisson and implicit heat, constant and variable coefficients, with the
//     first coarse level gathered and with several coarse levels distributed
//     (agglomerate_below small): every decomposition agrees with the single-rank run to 1e-8
//     (tolerance 1e-10), same cycle counts when every block halves evenly, within one
//     otherwise (inputs over time too); a decomposed multigrid run restarted from a checkpoint
//     ends bit for bit as the uninterrupted one;
//   * Jacobi and Anderson on a singular Poisson problem (compatible-mean): to 1e-7 of the
//     single-rank run, zero mean.
// Usage: heatsolve_mpi_tests <work-directory>
#include <fmt/format.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "io/checkpoint.hpp"
#include "io/config.hpp"
#include "io/field_writer.hpp"
#include "io/materials.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "solvers/multigrid/multigrid.hpp"
#include "solvers/parallel/decomposition.hpp"
#include "solvers/parallel/halo_exchange.hpp"
#include "solvers/parallel/ipc_allgather.hpp"
#include "solvers/solver.hpp"
#ifdef HEATSOLVE_HAVE_HDF5
#include "io/hdf5_writer.hpp"
#endif

namespace fs = std::filesystem;
using namespace heatsolve;

namespace {

int g_rank = 0, g_size = 1;
int g_failures = 0, g_checks = 0;
std::string g_workdir;

// Records a failed check on this rank (reported by rank 0 at the end via a reduction).
#define CHECK(cond, ...)                                                                          \
  do {                                                                                            \
    ++g_checks;                                                                                   \
    if (!(cond)) {                                                                                \
      ++g_failures;                                                                               \
      std::fprintf(stderr, "[rank %d] FAILED %s:%d: %s: %s\n", g_rank, __FILE__, __LINE__, #cond, \
                   fmt::format(__VA_ARGS__).c_str());                                             \
    }                                                                                             \
  } while (0)

void log(const std::string& s) {
  if (g_rank == 0) std::printf("%s\n", s.c_str()), std::fflush(stdout);
}

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

Config base_config(int dims, std::array<int, 3> cells, std::int64_t steps, Precision prec) {
  Config c;
  c.name = "mpi";
  c.problem = ProblemType::Heat;
  c.dimensions = dims;
  c.cells = {cells[0], cells[1], dims == 3 ? cells[2] : 1};
  c.length = {1.0, 0.8, dims == 3 ? 1.2 : 1.0};
  c.origin = {-0.1, 0.2, 0.0};
  c.diffusivity = 0.7;
  // HEATSOLVE_TEST_BACKEND=cuda runs the equivalence runs on the GPU (one per rank, or
  // shared); the kernel is then fixed (HEATSOLVE_TEST_KERNEL, default naive) so that every
  // block size runs the same arithmetic.
  const char* backend = std::getenv("HEATSOLVE_TEST_BACKEND");
  c.backend = backend && std::string(backend) == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  const char* kernel = std::getenv("HEATSOLVE_TEST_KERNEL");
  c.kernel = kernel ? kernel : (c.backend == BackendKind::Cuda ? "naive" : "auto");
  // HEATSOLVE_TEST_HALO=staged|ipc: the GPU halo transport (default auto).
  const char* halo = std::getenv("HEATSOLVE_TEST_HALO");
  if (halo) c.halo = std::string(halo) == "staged" ? HaloMode::Staged : HaloMode::Ipc;
  c.precision = prec;
  c.dt = 0.9 * stable_dt(c.grid(), c.diffusivity);
  c.steps = steps;
  c.end_time = c.dt * double(steps);
  c.initial.type = ShapeType::Gaussian;
  c.initial.value = 0.1;
  c.initial.amplitude = 1.0;
  c.initial.width = 0.15;
  c.initial.center = {0.3, 0.5, 0.6};
  c.formats.clear();
  c.output_every = steps / 3;
  return c;
}

BoundaryFaces faces(std::initializer_list<FaceBC> list) {
  BoundaryFaces f{};
  int i = 0;
  for (const FaceBC& b : list) f[i++] = b;
  for (; i < 6; ++i) f[i] = FaceBC{BoundaryType::Dirichlet, 0.0};
  return f;
}

// Materials by region (variable coefficients): a conducting sphere and an insulating box in
// a base material, with physical units.
void add_materials(Config& c) {
  Materials& m = c.material;
  m.physical = true;
  m.conductivity = 2.0;
  m.density = 1.0;
  m.specific_heat = 1.5;
  c.diffusivity = m.conductivity / m.heat_capacity();
  MaterialRegion sphere;
  sphere.region.kind = RegionKind::Sphere;
  sphere.region.center = {0.3, 0.6, 0.6};
  sphere.region.radius = 0.25;
  sphere.conductivity = 40.0;
  sphere.density = 2.0;
  MaterialRegion box;
  box.region.kind = RegionKind::Box;
  box.region.lower = {0.5, 0.2, 0.0};
  box.region.upper = {0.9, 0.5, 1.2};
  box.conductivity = 0.1;
  m.regions = {sphere, box};
}

std::vector<Case> cases() {
  const FaceBC P{BoundaryType::Periodic, 0.0};
  std::vector<Case> out;
  {  // 2D, Dirichlet with different values on every face, source, uneven everywhere
    Config c = base_config(2, {37, 29, 1}, 240, Precision::Double);
    c.boundary = faces({{BoundaryType::Dirichlet, 1.0},
                        {BoundaryType::Dirichlet, 0.0},
                        {BoundaryType::Dirichlet, 0.5},
                        {BoundaryType::Dirichlet, -0.25}});
    c.source.type = ShapeType::Box;
    c.source.value = 3.0;
    c.source.lower = {0.2, 0.3, 0};
    c.source.upper = {0.6, 0.7, 0};
    out.push_back({"heat2d-dirichlet", c});
  }
  {  // 2D float, periodic x, Neumann y
    Config c = base_config(2, {30, 23, 1}, 180, Precision::Float);
    c.boundary = faces({P, P, {BoundaryType::Neumann, 0.3}, {BoundaryType::Neumann, -0.2}});
    out.push_back({"heat2d-periodic-neumann-float", c});
  }
  {  // 3D mixed: x Dirichlet, y periodic, z Neumann
    Config c = base_config(3, {17, 13, 11}, 120, Precision::Double);
    c.boundary = faces({{BoundaryType::Dirichlet, 0.4},
                        {BoundaryType::Dirichlet, 0.1},
                        P,
                        P,
                        {BoundaryType::Neumann, 0.5},
                        {BoundaryType::Neumann, 0.0}});
    out.push_back({"heat3d-mixed", c});
  }
  {  // 3D float, periodic on every axis
    Config c = base_config(3, {12, 10, 9}, 90, Precision::Float);
    c.boundary = faces({P, P, P, P, P, P});
    c.source.type = ShapeType::Gaussian;
    c.source.amplitude = 2.0;
    c.source.width = 0.2;
    c.source.center = {0.5, 0.4, 0.6};
    out.push_back({"heat3d-periodic-float", c});
  }
  {  // 2D Jacobi/Poisson with source (residual path fills ghosts of the new iterate)
    Config c = base_config(2, {33, 27, 1}, 0, Precision::Double);
    c.problem = ProblemType::Poisson;
    c.steps = 0;
    c.end_time = 0;
    c.max_iterations = 300;
    c.tolerance = 1e-300;  // never converges: every decomposition runs the same iterations
    c.check_every = 50;
    c.output_every = 100;
    c.boundary = faces({{BoundaryType::Dirichlet, 0.0},
                        {BoundaryType::Neumann, 0.1},
                        {BoundaryType::Dirichlet, 1.0},
                        {BoundaryType::Dirichlet, 0.0}});
    c.source.type = ShapeType::Sine;
    c.source.amplitude = 5.0;
    out.push_back({"jacobi2d-source", c});
  }
  {  // 3D Jacobi, f = 0 (update-norm path), periodic z
    Config c = base_config(3, {15, 14, 13}, 0, Precision::Double);
    c.problem = ProblemType::Poisson;
    c.steps = 0;
    c.end_time = 0;
    c.max_iterations = 150;
    c.tolerance = 1e-300;
    c.check_every = 30;
    c.output_every = 75;
    c.boundary = faces({{BoundaryType::Dirichlet, 1.0},
                        {BoundaryType::Dirichlet, 0.0},
                        {BoundaryType::Neumann, 0.0},
                        {BoundaryType::Dirichlet, 0.5},
                        P,
                        P});
    out.push_back({"jacobi3d-periodic-z", c});
  }
  {  // 3D materials by region: convective and heat-flux faces, a periodic pair
    Config c = base_config(3, {16, 14, 12}, 60, Precision::Double);
    add_materials(c);
    c.boundary = faces({{BoundaryType::Convective, 0.2, 3.0},
                        {BoundaryType::HeatFlux, 0.7},
                        P,
                        P,
                        {BoundaryType::Dirichlet, 0.4},
                        {BoundaryType::Neumann, 0.0}});
    c.dt = 0.9 * stable_dt_materials(c);
    c.end_time = c.dt * double(c.steps);
    c.source.type = ShapeType::Uniform;
    c.source.value = 3.0;
    out.push_back({"heat3d-materials", c});
  }
  {  // 2D, inputs over time (docs/deck.md "Time-varying inputs"): a dirichlet ramp, a neumann
     // flux table, a Gaussian whose amplitude is a table (its separable form rescaled each
     // step); time_block 3 must fall back to single steps on every rank
    Config c = base_config(2, {31, 27, 1}, 120, Precision::Double);
    const double T = c.end_time;
    c.boundary = faces({{BoundaryType::Dirichlet, 0.0},
                        {BoundaryType::Dirichlet, 0.5},
                        {BoundaryType::Neumann, 0.0},
                        {BoundaryType::Dirichlet, -0.25}});
    c.boundary_tables[0] = TimeTable({{0.0, 0.0}, {T / 2, 1.0}});
    c.boundary_tables[2] = TimeTable({{T / 4, 0.0}, {T, -0.4}});
    c.source.type = ShapeType::Gaussian;
    c.source.width = 0.2;
    c.source.center = {0.4, 0.5, 0};
    c.source.amplitude_table = TimeTable({{0.0, 0.0}, {T / 3, 3.0}, {T, 1.0}});
    c.source.amplitude = c.source.amplitude_table->at(0);
    c.sources = {c.source};
    out.push_back({"heat2d-tables", c});
  }
  {  // 3D float, materials by region with tables: a convective ambient, a heat flux (its flux
     // in the stored source), and two source terms summed, one of them over time
    Config c = base_config(3, {14, 12, 10}, 50, Precision::Float);
    add_materials(c);
    c.boundary = faces({{BoundaryType::Convective, 0.2, 3.0},
                        {BoundaryType::HeatFlux, 0.7},
                        {BoundaryType::Neumann, 0.0},
                        {BoundaryType::Dirichlet, 0.4},
                        {BoundaryType::Dirichlet, 0.0},
                        {BoundaryType::Neumann, 0.0}});
    c.dt = 0.9 * stable_dt_materials(c);
    c.end_time = c.dt * double(c.steps);
    c.boundary_tables[0] = TimeTable({{0.0, 0.2}, {c.end_time, -0.5}});
    c.boundary_tables[1] = TimeTable({{0.0, 0.7}, {c.end_time / 2, 2.0}});
    Shape ramp;
    ramp.type = ShapeType::Uniform;
    ramp.value_table = TimeTable({{0.0, 1.0}, {c.end_time, 4.0}});
    ramp.value = 1.0;
    Shape box;
    box.type = ShapeType::Box;
    box.value = 2.0;
    box.lower = {0.1, 0.3, 0.2};
    box.upper = {0.6, 0.7, 0.9};
    c.sources = {ramp, box};
    c.source = ramp;
    out.push_back({"heat3d-materials-tables", c});
  }
  return out;
}

// Every (px, py[, pz]) with product `size` fitting the grid, then auto ({0,0,0}).
std::vector<std::array<int, 3>> decompositions(const Config& c, int size) {
  std::vector<std::array<int, 3>> out;
  for (int px = 1; px <= size; ++px)
    for (int py = 1; py <= size; ++py) {
      const int rest = size / (px * py);
      if (size % (px * py) != 0) continue;
      if (c.dimensions == 2 && rest != 1) continue;
      const int pz = c.dimensions == 3 ? rest : 1;
      if (px > c.cells[0] || py > c.cells[1] || (c.dimensions == 3 && pz > c.cells[2])) continue;
      out.push_back({px, py, pz});
    }
  out.push_back({0, 0, 0});
  return out;
}

// At most n of `all` (the automatic one, last, kept), evenly spread: the multigrid cases' many
// solves on 4 and 8 ranks oversubscribing CI's 2 cores would take minutes each.
std::vector<std::array<int, 3>> spread(const std::vector<std::array<int, 3>>& all, std::size_t n) {
  if (all.size() <= n) return all;
  std::vector<std::array<int, 3>> out;
  const std::size_t explicit_ones = all.size() - 1;
  for (std::size_t i = 0; i + 1 < n; ++i) out.push_back(all[i * explicit_ones / (n - 1)]);
  out.push_back(all.back());
  return out;
}

// ---- capture of output steps -----------------------------------------------------------

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
std::vector<double> gather_global(const CaptureWriter::Step& s, const Config& c, MPI_Comm comm) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  int meta[7] = {s.block.offset[0], s.block.offset[1], s.block.offset[2], s.block.count[0],
                 s.block.count[1],  s.block.count[2],  int(s.data.size())};
  std::vector<int> metas(7 * size);
  MPI_Gather(meta, 7, MPI_INT, metas.data(), 7, MPI_INT, 0, comm);
  std::vector<int> counts(size), displs(size);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = metas[7 * r + 6];
    displs[r] = total;
    total += counts[r];
  }
  std::vector<double> all(rank == 0 ? total : 0);
  MPI_Gatherv(s.data.data(), int(s.data.size()), MPI_DOUBLE, all.data(), counts.data(),
              displs.data(), MPI_DOUBLE, 0, comm);
  if (rank != 0) return {};
  const int nx = c.cells[0], ny = c.cells[1];
  const int nz = c.dimensions == 3 ? c.cells[2] : 1;
  std::vector<double> global(std::size_t(nx) * ny * nz, std::nan(""));
  for (int r = 0; r < size; ++r) {
    const int* m = &metas[7 * r];
    std::size_t n = displs[r];
    for (int k = 0; k < m[5]; ++k)
      for (int j = 0; j < m[4]; ++j)
        for (int i = 0; i < m[3]; ++i)
          global[(std::size_t(m[2] + k) * ny + (m[1] + j)) * nx + (m[0] + i)] = all[n++];
  }
  return global;
}

bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b, std::string* where) {
  if (a.size() != b.size()) {
    *where = fmt::format("size {} vs {}", a.size(), b.size());
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) {
      *where = fmt::format("first difference at {}: {:.17g} vs {:.17g}", i, a[i], b[i]);
      return false;
    }
  return true;
}

RunResult run_any(const Config& cfg, RunContext& ctx, std::vector<FieldWriter*> writers) {
  return run_simulation(cfg, ctx, std::move(writers));
}

// ---- tests -----------------------------------------------------------------------------

// ranks_on_my_node: every rank of a one-node run shares the node (mpirun on one host: CI and
// the GPU machines); the second call on a communicator returns the cached answer, a duplicate
// communicator (attributes not copied) its own, equal one; all_on_one_node agrees.
void test_ranks_on_my_node() {
  const std::vector<char>& first = ranks_on_my_node(MPI_COMM_WORLD);
  CHECK(int(first.size()) == g_size, "{} entries for {} ranks", first.size(), g_size);
  for (int r = 0; r < int(first.size()); ++r)
    CHECK(first[std::size_t(r)] == 1, "rank {} not on this node", r);
  CHECK(&ranks_on_my_node(MPI_COMM_WORLD) == &first, "the answer was not cached");
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  const std::vector<char>& other = ranks_on_my_node(dup);
  CHECK(&other != &first && other == first, "the duplicate's answer");
  CHECK(all_on_one_node(dup), "all_on_one_node");
  MPI_Comm_free(&dup);  // the attribute's delete callback frees its cached answer
}

void test_decomposition_rules() {
  if (g_rank != 0) return;
  // split_axis tiles the axis, first n % p get one more
  for (int n : {1, 7, 10, 37})
    for (int p = 1; p <= std::min(n, 9); ++p) {
      int next = 0;
      for (int c = 0; c < p; ++c) {
        const AxisSplit s = split_axis(n, p, c);
        CHECK(s.offset == next, "n={} p={} c={}", n, p, c);
        CHECK(s.count == n / p + (c < n % p ? 1 : 0), "n={} p={} c={}", n, p, c);
        next += s.count;
      }
      CHECK(next == n, "n={} p={}", n, p);
    }
  GridDesc g;
  g.dims = 3;
  g.nx = 64, g.ny = 32, g.nz = 16;
  auto p = choose_decomposition(g, {0, 0, 0}, 8);
  CHECK(p[0] * p[1] * p[2] == 8, "auto 8");
  p = choose_decomposition(g, {0, 0, 0}, 2);
  CHECK((p == std::array<int, 3>{2, 1, 1}), "2 ranks split the longest axis x: {}x{}x{}", p[0],
        p[1], p[2]);
  g.nx = g.ny = g.nz = 16;
  p = choose_decomposition(g, {0, 0, 0}, 2);
  CHECK((p == std::array<int, 3>{1, 1, 2}), "ties go to z: {}x{}x{}", p[0], p[1], p[2]);
  g.nx = 3, g.ny = 100, g.nz = 1;
  g.dims = 2;
  p = choose_decomposition(g, {0, 0, 0}, 8);
  CHECK(p[0] <= 3 && p[0] * p[1] == 8 && p[2] == 1, "thin 2D grid: {}x{}", p[0], p[1]);
  bool threw = false;
  try {
    choose_decomposition(g, {2, 2, 1}, 3);
  } catch (const DecompositionError& e) {
    threw = std::string(e.what()).find("needs 4 MPI ranks but the job has 3") != std::string::npos;
  }
  CHECK(threw, "product mismatch must throw DecompositionError with a clear message");
  threw = false;
  try {
    choose_decomposition(g, {4, 2, 1}, 8);  // 4 ranks on 3 cells
  } catch (const DecompositionError&) {
    threw = true;
  }
  CHECK(threw, "more ranks than cells on an axis must throw");
  // faces: interior blocks exchange; global faces keep physical BCs; periodic wraps
  GridDesc h;
  h.dims = 2, h.nx = 10, h.ny = 10;
  BoundaryFaces f = faces({{BoundaryType::Periodic, 0},
                           {BoundaryType::Periodic, 0},
                           {BoundaryType::Neumann, 1},
                           {BoundaryType::Dirichlet, 2}});
  Domain d = block_domain(h, f, {3, 2, 1}, {0, 0, 0}, 0);
  CHECK(d.faces[0].type == BoundaryType::Exchange, "periodic wrap with p>1 exchanges");
  CHECK(d.faces[2].type == BoundaryType::Neumann && d.faces[2].value == 1, "physical y-");
  CHECK(d.faces[3].type == BoundaryType::Exchange, "interior y+");
  CHECK(d.local.nx == 4 && d.local.ny == 5 && d.block.offset[0] == 0, "block 0");
  d = block_domain(h, f, {1, 2, 1}, {0, 1, 0}, 1);
  CHECK(d.faces[0].type == BoundaryType::Periodic, "periodic with p==1 stays local");
  CHECK(d.faces[3].type == BoundaryType::Dirichlet && d.block.offset[1] == 5, "top block");
}

// Ghosts of Exchange faces must hold the global value of the neighbouring cell.
template <typename T>
void test_halo_exchange(int dims, const std::array<int, 3>& procs) {
  GridDesc g;
  g.dims = dims;
  g.nx = 11, g.ny = 9, g.nz = dims == 3 ? 7 : 1;
  const BoundaryFaces f = faces({{BoundaryType::Periodic, 0},
                                 {BoundaryType::Periodic, 0},
                                 {BoundaryType::Dirichlet, 0},
                                 {BoundaryType::Dirichlet, 0},
                                 {BoundaryType::Periodic, 0},
                                 {BoundaryType::Periodic, 0}});
  CartesianDecomposition dec(MPI_COMM_WORLD, g, f, procs);
  const Domain& d = dec.domain();
  const GridDesc& l = d.local;
  const std::array<int, 3> N{g.nx, g.ny, g.nz};
  auto value = [&](int i, int j, int k) {  // global cell id with wrap; -1 outside
    std::array<int, 3> c{i, j, k};
    for (int a = 0; a < 3; ++a) {
      if (a >= dims) continue;
      if (c[a] < 0 || c[a] >= N[a]) {
        if (f[2 * a].type != BoundaryType::Periodic) return T(-1);
        c[a] = (c[a] + N[a]) % N[a];
      }
    }
    return T((c[2] * N[1] + c[1]) * N[0] + c[0]);
  };
  CpuBackend<T> backend;
  std::vector<T> u(l.padded_size(), T(-7));
  const int nz = dims == 3 ? l.nz : 1;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < l.ny; ++j)
      for (int i = 0; i < l.nx; ++i)
        u[l.index(i, j, k)] =
            value(d.block.offset[0] + i, d.block.offset[1] + j, d.block.offset[2] + k);
  MpiHaloExchanger<T> ex(dec, HaloMode::Auto);
  ex.exchange(backend, u.data());
  CHECK(ex.transport() == (ex.active_faces() ? "host" : "none"), "transport {}", ex.transport());
  const auto& o = d.block.offset;
  for (int face = 0; face < 2 * dims; ++face) {
    if (d.faces[face].type != BoundaryType::Exchange) continue;
    const int axis = face / 2;
    const std::array<int, 3> n{l.nx, l.ny, nz};
    const int layer = face % 2 == 0 ? -1 : n[axis];
    int bad = 0;
    for (int k = 0; k < (axis == 2 ? 1 : nz); ++k)
      for (int j = 0; j < (axis == 1 ? 1 : l.ny); ++j)
        for (int i = 0; i < (axis == 0 ? 1 : l.nx); ++i) {
          std::array<int, 3> c{i, j, k};
          c[axis] = layer;
          const T got = u[l.index(c[0], c[1], dims == 3 ? c[2] : 0)];
          const T want = value(o[0] + c[0], o[1] + c[1], o[2] + (dims == 3 ? c[2] : 0));
          bad += got != want;
        }
    CHECK(bad == 0, "{}D {}: face {} has {} wrong ghosts", dims, dec.describe(), face, bad);
  }
}

// A core (core_range, or exchange_core_range for every subset of Exchange faces) plus its
// shell_ranges tile the interior exactly once, and stencil_region over that tiling gives
// stencil()'s bits.
void test_regions() {
  if (g_rank != 0) return;
  for (int dims : {2, 3})
    for (int nx : {1, 2, 3, 6})
      for (int ny : {1, 2, 4})
        for (int nz : {1, 2, 5})
          for (int mask = -1; mask < (1 << (2 * dims)); ++mask) {  // -1: core_range
            if (dims == 2 && nz != 1) continue;
            GridDesc g;
            g.dims = dims;
            g.nx = nx, g.ny = ny, g.nz = nz;
            BoundaryFaces faces{};
            for (int f = 0; f < 2 * dims; ++f)
              faces[f].type =
                  mask >= 0 && (mask >> f) & 1 ? BoundaryType::Exchange : BoundaryType::Dirichlet;
            const CellRange core = mask < 0 ? core_range(g) : exchange_core_range(g, faces);
            if (mask >= 0)  // the core reads no ghost of an Exchange face
              for (int f = 0; f < 2 * dims; ++f) {
                const int a = f / 2, n = a == 0 ? nx : a == 1 ? ny : nz;
                if (faces[f].type != BoundaryType::Exchange || core.empty()) continue;
                CHECK(f % 2 == 0 ? core.lo[a] >= 1 : core.hi[a] <= n - 1,
                      "{}D {}x{}x{} mask {}: core touches Exchange face {}", dims, nx, ny, nz, mask,
                      f);
              }
            std::vector<CellRange> ranges = shell_ranges(g, core);
            ranges.push_back(core);
            std::vector<int> hits(g.padded_size(), 0);
            for (const CellRange& r : ranges)
              for (int k = r.lo[2]; k < r.hi[2]; ++k)
                for (int j = r.lo[1]; j < r.hi[1]; ++j)
                  for (int i = r.lo[0]; i < r.hi[0]; ++i) ++hits[g.index(i, j, k)];
            int bad = 0;
            for (int k = 0; k < (dims == 3 ? nz : 1); ++k)
              for (int j = 0; j < ny; ++j)
                for (int i = 0; i < nx; ++i) bad += hits[g.index(i, j, k)] != 1;
            CHECK(bad == 0, "{}D {}x{}x{}: {} cells not covered exactly once", dims, nx, ny, nz,
                  bad);
            CpuBackend<double> b;
            std::vector<double> u(g.padded_size()), f(g.padded_size()), a(g.padded_size(), 0),
                c2(g.padded_size(), 0);
            for (std::size_t i = 0; i < u.size(); ++i)
              u[i] = std::sin(0.37 * double(i)), f[i] = std::cos(double(i));
            const StencilCoeffs<double> c = heat_coeffs<double>(g, 0.9, 1e-3);
            b.stencil(u.data(), a.data(), f.data(), g, c);
            for (const CellRange& r : ranges)
              CHECK(b.stencil_region(u.data(), c2.data(), f.data(), g, c, r),
                    "cpu supports regions");
            std::string where;
            CHECK(bitwise_equal(a, c2, &where), "{}D {}x{}x{}: split sweep differs: {}", dims, nx,
                  ny, nz, where);
          }
}

void test_equivalence() {
  const fs::path work = fs::path(g_workdir);
  for (const Case& cs : cases()) {
    const Config& cfg = cs.cfg;
    // Reference: single-rank run on rank 0 (serial domain, no MPI involved).
    CaptureWriter ref;
#ifdef HEATSOLVE_HAVE_HDF5
    const std::string ref_dir = (work / (cs.name + "-serial")).string();
#endif
    if (g_rank == 0) {
      RunContext sctx;
      sctx.domain = serial_domain(cfg.grid(), cfg.boundary);
      sctx.backend_options.kernel = cfg.kernel;
      std::vector<FieldWriter*> ws{&ref};
#ifdef HEATSOLVE_HAVE_HDF5
      auto h5 = make_hdf5_writer(ref_dir, cfg.name, output_grid(cfg), cfg.precision);
      ws.push_back(h5.get());
#endif
      run_any(cfg, sctx, ws);
#ifdef HEATSOLVE_HAVE_HDF5
      h5->finalize();
#endif
    }
    const auto decs = decompositions(cfg, g_size);
    for (std::size_t di = 0; di < decs.size(); ++di) {
      const auto& req = decs[di];
      CartesianDecomposition dec(MPI_COMM_WORLD, cfg.grid(), cfg.boundary, req);
      MpiReducer reducer(dec.comm());
      // time_block 3: fused passes through deep halos (margins 3 cells deep, or as deep as
      // the thinnest block allows), which must give the same bits as single steps; with the
      // automatic decomposition also auto (0): the ranks time both ways and agree on one.
      const bool auto_decomposition = req[0] == 0;
      for (const int time_block : {1, 3, 0}) {
        if (time_block == 0 && !auto_decomposition) continue;
        DecomposedRun run(dec, cfg, reducer);
        RunContext& ctx = run.ctx;
        // Alternate overlapped (interior computed during the exchange) and plain sweeps.
        Config run_cfg = cfg;
        run_cfg.overlap = di % 2 == 0;
        run_cfg.time_block = time_block;
        CaptureWriter cap;
        std::vector<FieldWriter*> ws{&cap};
        // Parallel HDF5 for the automatic decomposition (collective) and the first explicit
        // one (gathered to rank 0): both must reproduce the serial file's content.
        const bool with_h5 = time_block == 1 && (di == 0 || di + 1 == decs.size());
#ifdef HEATSOLVE_HAVE_HDF5
        const std::string par_dir =
            (work / fmt::format("{}-np{}-{}", cs.name, g_size, di)).string();
        std::unique_ptr<FieldWriter> h5;
        if (with_h5) {
          if (di == 0) setenv("HEATSOLVE_HDF5_GATHER", "1", 1);
          h5 = make_hdf5_writer(par_dir, cfg.name, output_grid(cfg), cfg.precision, dec.io_comm());
          unsetenv("HEATSOLVE_HDF5_GATHER");
          ws.push_back(h5.get());
        }
#endif
        const RunResult r = run_any(run_cfg, ctx, ws);
#ifdef HEATSOLVE_HAVE_HDF5
        if (h5) h5->finalize();
#endif
        const std::string label =
            fmt::format("{} np{} {}{}{}{}", cs.name, g_size, dec.describe(),
                        req[0] == 0 ? " (auto)" : "", run_cfg.overlap ? " overlap" : "",
                        time_block == 3   ? " tb3"
                        : time_block == 0 ? " tb-auto"
                                          : "");
        // Every rank must see the same number of output steps as the reference.
        int nsteps = int(cap.steps.size()), ref_steps = int(ref.steps.size());
        MPI_Bcast(&ref_steps, 1, MPI_INT, 0, MPI_COMM_WORLD);
        CHECK(nsteps == ref_steps, "{}: {} output steps, reference {}", label, nsteps, ref_steps);
        int mismatches = 0;
        for (int s = 0; s < std::min(nsteps, ref_steps); ++s) {
          const std::vector<double> global = gather_global(cap.steps[s], cfg, dec.comm());
          if (g_rank == 0) {
            std::string where;
            const bool same = bitwise_equal(global, ref.steps[s].data, &where);
            CHECK(same, "{}: step {} differs from the single-rank run: {}", label,
                  cap.steps[s].step, where);
            CHECK(cap.steps[s].step == ref.steps[s].step && cap.steps[s].time == ref.steps[s].time,
                  "{}: step numbering", label);
            mismatches += !same;
          }
        }
        CHECK(r.steps == (cfg.problem == ProblemType::Heat ? cfg.steps : cfg.max_iterations),
              "{}: ran {} steps", label, r.steps);
#ifdef HEATSOLVE_HAVE_HDF5
        if (with_h5 && g_rank == 0) {
          const std::string a = ref_dir + "/" + cfg.name + ".h5";
          const std::string b = par_dir + "/" + cfg.name + ".h5";
          const auto la = list_hdf5_steps(a), lb = list_hdf5_steps(b);
          CHECK(la.size() == lb.size() && !la.empty(), "{}: HDF5 step lists {} vs {}", label,
                la.size(), lb.size());
          for (std::size_t i = 0; i < std::min(la.size(), lb.size()); ++i) {
            const Hdf5StepData da = read_hdf5_step(a, std::int64_t(i));
            const Hdf5StepData db = read_hdf5_step(b, std::int64_t(i));
            std::string where;
            CHECK(da.step == db.step && da.time == db.time && da.shape == db.shape &&
                      da.precision == db.precision,
                  "{}: HDF5 step {} metadata", label, i);
            CHECK(bitwise_equal(da.data, db.data, &where), "{}: HDF5 step {} data: {}", label,
                  da.step, where);
          }
          CHECK(fs::exists(par_dir + "/" + cfg.name + ".xdmf"), "{}: xdmf written", label);
        }
#endif
        const std::string transport =
            cfg.precision == Precision::Float ? run.ex_f.transport() : run.ex_d.transport();
        log(fmt::format("  {:<56} {} ({}, halo {}, depth {})", label,
                        mismatches == 0 ? "bitwise equal" : "DIFFERS", r.backend, transport,
                        r.halo_depth));
      }
    }
  }
}

// ---- multigrid: distributed levels, the first small one gathered ---------------------------

// Multigrid and mg-cg Poisson solves and implicit heat steps. Reductions run in another
// order on every decomposition, so the fields are compared to the tolerance, not bitwise:
// max |u - u_serial| / max |u_serial| <= 1e-8 with solver.tolerance 1e-10, and the cycle
// counts equal the serial run's when every block halves evenly (coarse levels are then
// distributed while they are at least agglomerate_below cells and every block halves, and
// the first level past that is gathered), within one otherwise (the finest residual itself
// is gathered). The "-dist" cases distribute every level that blocks allow
// (agglomerate_below 0 or 512), so that several levels exchange halos.
std::vector<Case> multigrid_cases() {
  const FaceBC P{BoundaryType::Periodic, 0.0};
  std::vector<Case> out;
  const auto poisson = [](Config c, double tol) {
    c.problem = ProblemType::Poisson;
    c.steps = 0;
    c.end_time = 0;
    c.tolerance = tol;
    c.max_iterations = 60;
    c.output_every = 0;
    return c;
  };
  {  // 3D mixed: Dirichlet values, Neumann fluxes, a periodic pair; Gaussian source
    Config c = poisson(base_config(3, {24, 20, 16}, 0, Precision::Double), 1e-10);
    c.boundary = faces({{BoundaryType::Dirichlet, 0.4},
                        {BoundaryType::Neumann, -0.5},
                        P,
                        P,
                        {BoundaryType::Dirichlet, 0.0},
                        {BoundaryType::Neumann, 1.0}});
    c.source.type = ShapeType::Gaussian;
    c.source.amplitude = 40.0;
    c.source.width = 0.12;
    c.source.center = {0.3, 0.5, 0.7};
    c.method = SolverMethod::Multigrid;
    out.push_back({"mg3d-mixed", c});
    c.method = SolverMethod::MultigridCG;
    out.push_back({"mgcg3d-mixed", c});
    // execution.precision: mixed: the float hierarchy exchanges its finest halos in float and
    // agglomerates its coarse levels in float.
    c.mixed_precision = true;
    out.push_back({"mgcg3d-mixed-precision", c});
    c.method = SolverMethod::Multigrid;
    out.push_back({"mg3d-mixed-precision", c});
    // Full multigrid with the finest level alone distributed: the gathered levels' pass
    // prolongated, then a V-cycle; "-dist" below distributes more.
    c.mixed_precision = false;
    c.multigrid.cycle = MultigridCycle::FMG;
    out.push_back({"mg3d-fmg", c, 3});
    // No pre-smoothing: a deep post-smoothing still finds f's margins filled (they are filled
    // once per visit, before the pre-smoothing that has no sweeps here).
    c.multigrid.cycle = MultigridCycle::V;
    c.multigrid.pre_sweeps = 0;
    c.multigrid.post_sweeps = 4;
    out.push_back({"mg3d-post-smoothing-only", c});
  }
  {  // 3D singular (Neumann x, periodic y and z): the source shift and the zero mean are global
    Config c = poisson(base_config(3, {16, 16, 12}, 0, Precision::Double), 1e-10);
    c.boundary = faces({{BoundaryType::Neumann, 0.3}, {BoundaryType::Neumann, 0.0}, P, P, P, P});
    c.source.type = ShapeType::Gaussian;
    c.source.amplitude = 10.0;
    c.source.width = 0.15;
    c.source.center = {0.5, 0.4, 0.6};
    c.method = SolverMethod::Multigrid;
    out.push_back({"mg3d-singular", c});
  }
  {  // 2D with an F-cycle, grid 30 x 22: uneven splits gather the finest residual
    Config c = poisson(base_config(2, {30, 22, 1}, 0, Precision::Double), 1e-10);
    c.boundary = faces({{BoundaryType::Dirichlet, 1.0},
                        {BoundaryType::Dirichlet, 0.0},
                        {BoundaryType::Neumann, 0.5},
                        {BoundaryType::Dirichlet, -0.5}});
    c.source.type = ShapeType::Sine;
    c.source.amplitude = 5.0;
    c.method = SolverMethod::Multigrid;
    c.multigrid.cycle = MultigridCycle::F;
    out.push_back({"mg2d-fcycle", c});
  }
  {  // implicit Euler heat, 3D, dt 50x the explicit limit
    Config c = base_config(3, {20, 16, 12}, 6, Precision::Double);
    c.scheme = TimeScheme::ImplicitEuler;
    c.method = SolverMethod::Multigrid;
    c.dt = 50 * stable_dt(c.grid(), c.diffusivity);
    c.end_time = c.dt * double(c.steps);
    c.tolerance = 1e-10;
    c.max_iterations = 50;
    c.output_every = 0;
    c.boundary = faces({{BoundaryType::Dirichlet, 0.4},
                        {BoundaryType::Dirichlet, 0.1},
                        P,
                        P,
                        {BoundaryType::Neumann, 0.5},
                        {BoundaryType::Neumann, 0.0}});
    c.source.type = ShapeType::Uniform;
    c.source.value = 1.0;
    out.push_back({"implicit-euler3d", c});
    c.scheme = TimeScheme::CrankNicolson;
    c.method = SolverMethod::MultigridCG;
    out.push_back({"crank-nicolson-mgcg3d", c});
    // Inputs over time (docs/deck.md "Time-varying inputs"): the operator's faces at t_{n+1}
    // on every rank, the source the mean of its values at t_n and t_{n+1}
    c.method = SolverMethod::Multigrid;
    c.boundary_tables[0] = TimeTable({{0.0, 0.4}, {c.end_time, 1.4}});
    c.boundary_tables[4] = TimeTable({{0.0, 0.5}, {c.end_time / 2, -1.0}});
    c.source.value_table = TimeTable({{0.0, 1.0}, {c.end_time, 3.0}});
    out.push_back({"crank-nicolson3d-tables", c});
    c.boundary_tables = {};
    c.source.value_table.reset();
    c.method = SolverMethod::MultigridCG;
    c.mixed_precision = true;
    out.push_back({"crank-nicolson-mgcg3d-mixed-precision", c});
  }
  {  // materials by region: mg-cg Poisson and an implicit step, convective and heat-flux faces
    Config c = poisson(base_config(3, {24, 20, 16}, 0, Precision::Double), 1e-10);
    add_materials(c);
    c.multigrid.prolongation = Prolongation::Constant;
    c.boundary = faces({{BoundaryType::Convective, 0.2, 3.0},
                        {BoundaryType::HeatFlux, 0.7},
                        P,
                        P,
                        {BoundaryType::Dirichlet, 0.4},
                        {BoundaryType::Neumann, 0.0}});
    c.source.type = ShapeType::Uniform;
    c.source.value = 3.0;
    c.method = SolverMethod::MultigridCG;
    out.push_back({"mgcg3d-materials", c});
    Config h = base_config(3, {20, 16, 12}, 4, Precision::Double);
    add_materials(h);
    h.multigrid.prolongation = Prolongation::Constant;
    h.boundary = c.boundary;
    h.scheme = TimeScheme::ImplicitEuler;
    h.method = SolverMethod::MultigridCG;
    h.dt = 30 * stable_dt_materials(h);
    h.end_time = h.dt * double(h.steps);
    h.tolerance = 1e-10;
    h.max_iterations = 50;
    h.output_every = 0;
    out.push_back({"implicit-euler3d-materials", h});
  }
  // Several distributed levels: 32^3 blocks halve down to 4 cells a side (on 8 ranks 32^3 ->
  // 16^3 blocks of 8^3 -> ...), then the rest is gathered.
  const auto distributed = [](Config c, long long below) {
    c.multigrid.agglomerate_below = below;
    return c;
  };
  // Mixed faces (y as given) and a Gaussian source.
  const auto mixed_faces = [](Config& c, FaceBC y_lo, FaceBC y_hi) {
    c.boundary = faces({{BoundaryType::Dirichlet, 0.4},
                        {BoundaryType::Neumann, -0.5},
                        y_lo,
                        y_hi,
                        {BoundaryType::Dirichlet, 0.0},
                        {BoundaryType::Neumann, 1.0}});
    c.source.type = ShapeType::Gaussian;
    c.source.amplitude = 40.0;
    c.source.width = 0.12;
    c.source.center = {0.3, 0.5, 0.7};
  };
  {
    Config c = poisson(base_config(3, {32, 32, 32}, 0, Precision::Double), 1e-10);
    mixed_faces(c, P, P);
    c.method = SolverMethod::Multigrid;
    out.push_back({"mg3d-mixed-dist", distributed(c, 0)});
    c.method = SolverMethod::MultigridCG;
    out.push_back({"mgcg3d-mixed-dist", distributed(c, 0)});
    c.method = SolverMethod::Multigrid;
    c.multigrid.cycle = MultigridCycle::F;
    out.push_back({"mg3d-fcycle-dist", distributed(c, 0)});
    // Full multigrid's nested iteration over the distributed levels (from the gathered
    // levels' pass at the last one; one-sided cubic stencils at the blocks' edges).
    c.multigrid.cycle = MultigridCycle::FMG;
    out.push_back({"mg3d-fmg-dist", distributed(c, 0), 3});
    c.mixed_precision = true;  // the float hierarchy's pass (FloatCorrection::fmg), gathered too
    out.push_back({"mg3d-fmg-mixed-precision-dist", distributed(c, 0), 3});
    c.mixed_precision = false;
  }
  {  // 64^3, every level of at least 512 cells distributed (to 8^3 blocks of 4^3 on 8 ranks)
    Config c = poisson(base_config(3, {64, 64, 64}, 0, Precision::Double), 1e-10);
    c.boundary = faces({{BoundaryType::Dirichlet, 1.0}, {BoundaryType::Dirichlet, 0.0}});
    c.source.type = ShapeType::Sine;
    c.source.amplitude = 5.0;
    c.method = SolverMethod::Multigrid;
    out.push_back({"mg3d-64-dist", distributed(c, 512)});
    // The default agglomeration: the finest level is the last distributed one (32^3 gathered
    // on every rank), its post-smoothing corrected in its margins too.
    out.push_back({"mg3d-64-gathered", c});
  }
  if (g_size <= 4) {  // a coarse level past the small ones (48^3) smooths through deep halos
    Config c = poisson(base_config(3, {96, 96, 96}, 0, Precision::Double), 1e-10);
    c.boundary = faces({{BoundaryType::Dirichlet, -0.5}, {BoundaryType::Neumann, 0.25}});
    c.source.type = ShapeType::Sine;
    c.source.amplitude = 5.0;
    c.method = SolverMethod::Multigrid;
    out.push_back({"mg3d-96-deep-coarse-dist", distributed(c, 0)});
  }
  {  // singular: global means on distributed levels
    Config c = poisson(base_config(3, {32, 32, 16}, 0, Precision::Double), 1e-10);
    c.boundary = faces({{BoundaryType::Neumann, 0.3}, {BoundaryType::Neumann, 0.0}, P, P, P, P});
    c.source.type = ShapeType::Gaussian;
    c.source.amplitude = 10.0;
    c.source.width = 0.15;
    c.source.center = {0.5, 0.4, 0.6};
    c.method = SolverMethod::Multigrid;
    out.push_back({"mg3d-singular-dist", distributed(c, 0)});
    c.multigrid.cycle = MultigridCycle::FMG;
    out.push_back({"mg3d-singular-fmg-dist", distributed(c, 0), 3});
  }
  {  // 2D, periodic x over the ranks
    Config c = poisson(base_config(2, {64, 48, 1}, 0, Precision::Double), 1e-10);
    c.boundary = faces({P, P, {BoundaryType::Neumann, 0.5}, {BoundaryType::Dirichlet, -0.5}});
    c.source.type = ShapeType::Sine;
    c.source.amplitude = 5.0;
    c.method = SolverMethod::MultigridCG;
    out.push_back({"mgcg2d-periodic-dist", distributed(c, 0)});
  }
  {  // implicit steps: Euler with cycles, Crank-Nicolson with mg-cg
    Config c = base_config(3, {32, 32, 16}, 5, Precision::Double);
    c.scheme = TimeScheme::ImplicitEuler;
    c.method = SolverMethod::Multigrid;
    c.dt = 50 * stable_dt(c.grid(), c.diffusivity);
    c.end_time = c.dt * double(c.steps);
    c.tolerance = 1e-10;
    c.max_iterations = 50;
    c.output_every = 0;
    c.boundary = faces({{BoundaryType::Dirichlet, 0.4},
                        {BoundaryType::Dirichlet, 0.1},
                        P,
                        P,
                        {BoundaryType::Neumann, 0.5},
                        {BoundaryType::Neumann, 0.0}});
    c.source.type = ShapeType::Uniform;
    c.source.value = 1.0;
    out.push_back({"implicit-euler3d-dist", distributed(c, 0)});
    c.multigrid.cycle = MultigridCycle::FMG;  // each step's first cycle: a correction's pass
    out.push_back({"implicit-euler3d-fmg-dist", distributed(c, 0), 3});
    c.multigrid.cycle = MultigridCycle::V;
    c.scheme = TimeScheme::CrankNicolson;
    c.method = SolverMethod::MultigridCG;
    out.push_back({"crank-nicolson-mgcg3d-dist", distributed(c, 0)});
  }
  {  // materials by region: coarsened resistances need their neighbours' ghost ring
    Config c = poisson(base_config(3, {32, 32, 32}, 0, Precision::Double), 1e-10);
    add_materials(c);
    c.multigrid.prolongation = Prolongation::Constant;
    c.boundary = faces({{BoundaryType::Convective, 0.2, 3.0},
                        {BoundaryType::HeatFlux, 0.7},
                        P,
                        P,
                        {BoundaryType::Dirichlet, 0.4},
                        {BoundaryType::Neumann, 0.0}});
    c.source.type = ShapeType::Uniform;
    c.source.value = 3.0;
    c.method = SolverMethod::MultigridCG;
    out.push_back({"mgcg3d-materials-dist", distributed(c, 0)});
    c.method = SolverMethod::Multigrid;
    out.push_back({"mg3d-materials-dist", distributed(c, 0)});
    c.multigrid.cycle = MultigridCycle::FMG;
    out.push_back({"mg3d-materials-fmg-dist", distributed(c, 0), 3});
    c.multigrid.cycle = MultigridCycle::V;
    Config h = base_config(3, {32, 32, 16}, 3, Precision::Double);
    add_materials(h);
    h.multigrid.prolongation = Prolongation::Constant;
    h.boundary = c.boundary;
    h.scheme = TimeScheme::CrankNicolson;
    h.method = SolverMethod::MultigridCG;
    h.dt = 30 * stable_dt_materials(h);
    h.end_time = h.dt * double(h.steps);
    h.tolerance = 1e-10;
    h.max_iterations = 50;
    h.output_every = 0;
    out.push_back({"crank-nicolson3d-materials-dist", distributed(h, 0)});
  }
  // On the GPU only (too slow for the CPU's runs): blocks of a z split on up to 4 ranks past
  // BackendOptions::fuse_min_cells (256 x 256 x 64), so that the finest level's post-smoothing
  // adds the coarse correction inside its deep-halo pass, its margins too, from the
  // distributed coarse level's own margins (Backend::prolong_add_sweeps), as the serial run's
  // pass does on the whole grid.
  if (base_config(3, {8, 8, 8}, 0, Precision::Double).backend == BackendKind::Cuda) {
    Config c = poisson(base_config(3, {256, 256, 256}, 0, Precision::Double), 1e-10);
    mixed_faces(c, {BoundaryType::Dirichlet, 0.0}, {BoundaryType::Neumann, 0.25});
    c.method = SolverMethod::Multigrid;
    out.push_back({"mg3d-fused-dist", distributed(c, 0)});
  }
  return out;
}

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double d = 0, m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::abs(a[i] - b[i]));
    m = std::max(m, std::abs(b[i]));
  }
  return m > 0 ? d / m : d;
}

void test_multigrid_equivalence() {
  for (const Case& cs : multigrid_cases()) {
    const Config& cfg = cs.cfg;
    CaptureWriter ref;
    double ref_cycles = 0;
    if (g_rank == 0) {
      RunContext sctx;
      sctx.domain = serial_domain(cfg.grid(), cfg.boundary);
      sctx.backend_options.kernel = cfg.kernel;
      const RunResult r = run_any(cfg, sctx, {&ref});
      CHECK(cfg.problem == ProblemType::Heat || r.converged, "{}: serial run did not converge",
            cs.name);
      ref_cycles = double(r.multigrid.at("cycles"));
    }
    MPI_Bcast(&ref_cycles, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    const auto decs = spread(decompositions(cfg, g_size), 4);
    for (std::size_t di = 0; di < decs.size(); ++di) {
      const auto& req = decs[di];
      CartesianDecomposition dec(MPI_COMM_WORLD, cfg.grid(), cfg.boundary, req);
      MpiReducer reducer(dec.comm());
      DecomposedRun run(dec, cfg, reducer);
      RunContext& ctx = run.ctx;
      // The first decomposition of each case has rank 0 solve the gathered levels alone
      // (gather, then scatter: what grids too large for every rank to hold get); the others
      // solve them on every rank.
      const bool root_solve = di == 0;
      if (root_solve) setenv("HEATSOLVE_TEST_MG_ROOT", "1", 1);
      CaptureWriter cap;
      // Alternate sweeps that overlap their halos with their core and plain ones.
      Config run_cfg = cfg;
      run_cfg.overlap = di % 2 == 1;
      const RunResult r = run_any(run_cfg, ctx, {&cap});
      unsetenv("HEATSOLVE_TEST_MG_ROOT");
      // Does every block halve evenly along the axes the global grid halves?
      std::array<int, 3> ratio{};
      coarsen(cfg.grid(), &ratio);
      int uneven = 0;
      for (int a = 0; a < cfg.dimensions; ++a)
        uneven |=
            ctx.domain.block.offset[a] % ratio[a] != 0 || ctx.domain.block.count[a] % ratio[a] != 0;
      MPI_Allreduce(MPI_IN_PLACE, &uneven, 1, MPI_INT, MPI_MAX, dec.comm());
      const std::string label =
          fmt::format("{} np{} {}{}{}", cs.name, g_size, dec.describe(),
                      req[0] == 0 ? " (auto)" : "", run_cfg.overlap ? " overlap" : "");
      // How many levels stayed distributed, and where the rest went.
      std::string placement = "serial";
      if (r.multigrid.contains("decomposed")) {
        const auto& d = r.multigrid.at("decomposed");
        placement =
            fmt::format("{} distributed, {} gathered on {}", int(d.at("distributed_levels")),
                        std::string(d.at("gathered_level")), std::string(d.at("gathered_on")));
        CHECK(std::string(d.at("gathered_on")) == (root_solve ? "rank 0" : "every rank"),
              "{}: gathered levels solved on {}", label, std::string(d.at("gathered_on")));
      }
      // Split along the stream axis alone into blocks at least as thick as the margins, a
      // uniform material's finest level smooths through deep halos.
      const int stream = cfg.dimensions == 3 ? 2 : 1;
      bool stream_only = dec.procs()[stream] > 1;
      for (int a = 0; a < cfg.dimensions; ++a) stream_only &= a == stream || dec.procs()[a] == 1;
      const bool slabs = stream_only;
      const int thickness = stream == 2 ? ctx.domain.local.nz : ctx.domain.local.ny;
      stream_only &= -reducer.max(-double(thickness)) >= cfg.multigrid.margin_depth();
      // Every rank solving the gathered levels on one node's GPUs, slab blocks: the gather goes
      // device to device; through the host otherwise.
      if (r.multigrid.contains("decomposed")) {
        const std::string gather = r.multigrid.at("decomposed").at("gather");
        const bool device = cfg.backend == BackendKind::Cuda && !root_solve && slabs;
        CHECK(gather == (device ? "device" : "host"), "{}: gathered through the {}", label, gather);
      }
      // `agglomerate_below: auto` keeps 128^3 levels distributed (64^3 gathered) where the
      // gathered level goes device to device, 64^3 (32^3 gathered) where it goes by the host.
      if (r.multigrid.contains("decomposed")) {
        const long long below = r.multigrid.at("decomposed").at("agglomerate_below");
        const long long want = cfg.multigrid.agglomerate_below != kAgglomerateAuto
                                   ? cfg.multigrid.agglomerate_below
                               : cfg.backend == BackendKind::Cuda && slabs ? 128LL * 128 * 128
                                                                           : 64LL * 64 * 64;
        CHECK(below == want, "{}: agglomerate_below {} (expected {})", label, below, want);
      }
      // The set-up's breakdown: a distributed coarse level's buffers take time; IPC mappings,
      // events and the device gather only where device memory travels between processes.
      if (r.multigrid.contains("decomposed")) {
        const auto& d = r.multigrid.at("decomposed");
        const auto& b = d.at("setup_breakdown");
        const double buffers = b.at("buffers"), mappings = b.at("ipc_mappings"),
                     events = b.at("ipc_events"), gather = b.at("device_gather");
        const bool device = cfg.backend == BackendKind::Cuda;
        const bool coarse = int(d.at("distributed_levels")) >= 2;
        CHECK(std::isfinite(buffers + mappings + events + gather) && buffers >= 0 &&
                  mappings >= 0 && events >= 0 && gather >= 0 && (!coarse || buffers > 0) &&
                  (device || mappings + events + gather == 0) &&
                  (std::string(d.at("gather")) != "device" || gather > 0),
              "{}: set-up breakdown buffers {} ipc_mappings {} ipc_events {} device_gather {}",
              label, buffers, mappings, events, gather);
        // Planning, this rank's levels, the gathered hierarchy and the device gather are
        // disjoint parts of the set-up's wall time.
        const double planning = b.at("planning"), levels = b.at("levels"),
                     gathered = b.at("gathered_hierarchy"), setup = r.multigrid.at("setup_seconds");
        CHECK(planning > 0 && levels > 0 && gathered >= 0 &&
                  planning + levels + gathered + gather <= setup,
              "{}: set-up {} s: planning {} levels {} gathered_hierarchy {} device_gather {}",
              label, setup, planning, levels, gathered, gather);
        // Page-locked staging buffers only for faces whose halos go through host memory.
        const long long pinned = d.at("staging_pinned_bytes");
        const bool staged = device && cfg.halo == HaloMode::Staged;
        const bool none = !device || r.halo_transport == "ipc";
        CHECK((!staged || !coarse || pinned > 0) && (!none || pinned == 0),
              "{}: {} bytes of pinned staging buffers (halos {})", label, pinned, r.halo_transport);
      }
      if (r.multigrid.contains("decomposed") && stream_only && cfg.multigrid.fused &&
          cfg.material.uniform()) {
        const auto& finest = r.multigrid.at("decomposed").at("levels").at(0);
        const long long passes = finest.at("deep_passes");
        CHECK(passes > 0 && int(finest.at("deep_smoothing_depth")) == cfg.multigrid.margin_depth(),
              "{}: the finest level smoothed {} times through deep halos", label, passes);
        // Deep exchanges saved (Multigrid::zero_with_margins, prefill_margins): a pass that
        // needed none counts as zeroed, an exchange on the side lane as one too.
        for (const auto& lv : r.multigrid.at("decomposed").at("levels")) {
          if (!lv.contains("margins_zeroed")) continue;
          const long long zeroed = lv.at("margins_zeroed"), deep = lv.at("deep_passes"),
                          alongside = lv.at("margins_exchanged_alongside"),
                          exchanges = lv.at("exchanges");
          CHECK(zeroed <= deep && alongside <= exchanges,
                "{}: level {}: {} passes on zeroed margins of {}, {} of {} exchanges alongside",
                label, int(lv.at("level")), zeroed, deep, alongside, exchanges);
        }
        // mg-cg's preconditioner starts from zero (one application per iteration and one
        // before): its first pass finds the margins zeroed with the field.
        const long long finest_zeroed = finest.at("margins_zeroed");
        const long long iterations = r.multigrid.at("cycles");
        CHECK(cfg.method != SolverMethod::MultigridCG || cfg.precision != Precision::Double ||
                  finest_zeroed >= iterations,
              "{}: {} of the finest level's passes on zeroed margins in {} iterations", label,
              finest_zeroed, iterations);
        // The GPU's post-smoothing pass adds the correction (fused 256^3 case): its margins
        // were exchanged alongside the restriction and the coarser levels, and its output's
        // alongside its own planes past the ones the neighbour needs, every cycle.
        const long long alongside = finest.at("margins_exchanged_alongside");
        CHECK(label.rfind("mg3d-fused-dist", 0) != 0 || alongside >= 2 * iterations,
              "{}: {} of the finest level's exchanges alongside in {} cycles", label, alongside,
              iterations);
        // The GPU's V-cycles measure the residual in the next cycle's first pass: per cycle the
        // iterate's margins before that pass and before the post-smoothing, the right side's
        // once a solve (Multigrid::begin_cycle), not once a cycle.
        const long long finest_exchanges = finest.at("exchanges");
        CHECK(label.rfind("mg3d-fused-dist", 0) != 0 || finest_exchanges <= 2 * iterations + 2,
              "{}: the finest level exchanged {} times in {} cycles", label, finest_exchanges,
              iterations);
        // On the GPU the first coarse levels' margins are deeper than their post-smoothing's
        // sweeps by what the finer level's pass reads of them: each hands its correction over
        // in the margins its own pass left valid, without an exchange, every cycle; and its
        // two exchanges of a cycle (the right side's, in the restriction that computes it, and
        // the iterate's before the post-smoothing) run alongside other work.
        if (label.rfind("mg3d-fused-dist", 0) == 0) {
          for (std::size_t l : {std::size_t(1), std::size_t(2)}) {
            const auto& lv = r.multigrid.at("decomposed").at("levels").at(l);
            const long long kept = lv.at("margins_kept");
            const long long level_alongside = lv.at("margins_exchanged_alongside");
            CHECK(level_alongside >= 2 * iterations,
                  "{}: level {}: {} exchanges alongside in {} cycles", label, l, level_alongside,
                  iterations);
            CHECK(kept >= iterations &&
                      int(lv.at("deep_smoothing_depth")) > cfg.multigrid.margin_depth(),
                  "{}: level {} (margins {} deep) kept its correction's margins {} times in {} "
                  "cycles",
                  label, l, int(lv.at("deep_smoothing_depth")), kept, iterations);
          }
        }
        // The last distributed level's post-smoothing, where every rank holds the gathered
        // correction: its margins exchanged alongside the gathered levels and corrected from
        // that correction (Multigrid::corrects_margins), every cycle.
        const auto& dm = r.multigrid.at("decomposed");
        const int last = int(dm.at("distributed_levels")) - 1;
        const long long last_alongside =
            dm.at("levels").at(std::size_t(last)).at("margins_exchanged_alongside");
        const bool corrects_margins = label.rfind("mg3d-64-gathered", 0) == 0 &&
                                      std::string(dm.at("gathered_on")) == "every rank";
        CHECK(!corrects_margins || last_alongside >= iterations,
              "{}: level {}: {} exchanges alongside in {} cycles", label, last, last_alongside,
              iterations);
        // A distributed coarse level that smooths deep, under a finer one whose pass left its
        // ghosts filled: its right side's margins are exchanged inside the restriction that
        // computes it (Multigrid::restrict_sending), every cycle, where sweeps do not overlap
        // their exchanges (the CPU's overlapped sweeps restrict in one piece).
        if (!run_cfg.overlap) {
          for (int l = 1; l <= last; ++l) {
            const auto& lv = dm.at("levels").at(std::size_t(l));
            const auto& up = dm.at("levels").at(std::size_t(l - 1));
            if (lv.at("deep_passes") == 0 || up.at("deep_passes") == 0) continue;
            const long long sent = lv.at("margins_exchanged_alongside");
            CHECK(sent >= iterations, "{}: level {}: {} exchanges alongside in {} cycles", label, l,
                  sent, iterations);
          }
        }
      }
      const double cycles = double(r.multigrid.at("cycles"));
      // Full multigrid: within one cycle where its nested iteration ran over distributed
      // levels; where the finest level alone is distributed, cs.extra_cycles (one per
      // implicit step).
      double extra = cs.extra_cycles;
      if (cfg.multigrid.cycle == MultigridCycle::FMG) {
        const bool nested = r.multigrid.contains("decomposed") &&
                            int(r.multigrid.at("decomposed").at("distributed_levels")) >= 2;
        if (nested)
          extra = std::min(extra, 1.0);
        else if (cfg.problem == ProblemType::Heat)
          extra = double(cfg.steps);
      }
      CHECK(cfg.problem == ProblemType::Heat || r.converged, "{}: did not converge ({:.3e})", label,
            r.final_residual);
      if (cfg.problem == ProblemType::Heat) {
        CHECK(r.steps == cfg.steps, "{}: {} steps", label, r.steps);
        // Per step within one cycle of the serial run.
        CHECK(std::abs(cycles - ref_cycles) <= (uneven ? double(cfg.steps) : 0.0) + extra,
              "{}: {} cycles, serial {}", label, cycles, ref_cycles);
      } else {
        CHECK(cycles - ref_cycles <= (uneven ? 1.0 : 0.0) + extra &&
                  ref_cycles - cycles <= (uneven ? 1.0 : 0.0) + extra,
              "{}: {} cycles, serial {}", label, cycles, ref_cycles);
      }
      // Blocks of at least 8 cells a side keep the first coarse level distributed too.
      if (cfg.multigrid.agglomerate_below == 0 && g_size > 1 && !uneven) {
        int thinnest = ctx.domain.local.nx;
        for (int a = 1; a < cfg.dimensions; ++a)
          thinnest = std::min(thinnest, a == 1 ? ctx.domain.local.ny : ctx.domain.local.nz);
        thinnest = int(-reducer.max(-double(thinnest)));
        const int distributed = r.multigrid.contains("decomposed")
                                    ? int(r.multigrid.at("decomposed").at("distributed_levels"))
                                    : 0;
        CHECK(thinnest < 8 || distributed >= 2, "{}: {} distributed levels with {}-cell blocks",
              label, distributed, thinnest);
      }
      CHECK(!cap.steps.empty(), "{}: no output", label);
      double diff = INFINITY;
      if (!cap.steps.empty()) {
        const std::vector<double> global = gather_global(cap.steps.back(), cfg, dec.comm());
        if (g_rank == 0) {
          diff = max_relative_difference(global, ref.steps.back().data);
          CHECK(diff <= 1e-8, "{}: max relative difference {:.3e} from the serial run", label,
                diff);
          // A Poisson solve's final step is its cycle count (checked above with its slack).
          CHECK(cs.extra_cycles > 0 || cap.steps.back().step == ref.steps.back().step,
                "{}: final step {} vs {}", label, cap.steps.back().step, ref.steps.back().step);
        }
      }
      log(fmt::format("  {:<56} {} cycles (serial {}){}, max rel. diff {:.1e}; {}", label, cycles,
                      ref_cycles, uneven ? ", uneven blocks" : "", diff, placement));
    }
  }
}

// ---- Jacobi and Anderson on a singular problem ------------------------------------------

// solver.singular: compatible-mean (docs/deck.md "Singular problems"): the source's shift and
// the solution's mean are global reductions, in another order on every decomposition, so the
// solution equals the serial one to the solver's tolerance (not bitwise), of zero mean.
void test_singular_sweeps() {
  const FaceBC P{BoundaryType::Periodic, 0.0};
  for (SolverMethod method : {SolverMethod::Jacobi, SolverMethod::Anderson}) {
    Config cfg = base_config(2, {16, 12, 1}, 0, Precision::Double);
    cfg.problem = ProblemType::Poisson;
    cfg.steps = 0;
    cfg.end_time = 0;
    cfg.tolerance = 1e-10;
    cfg.max_iterations = 100000;
    cfg.output_every = 0;
    cfg.method = method;
    cfg.singular = SingularPolicy::CompatibleMean;
    cfg.boundary = faces({{BoundaryType::Neumann, 0.75}, {BoundaryType::Neumann, 0.0}, P, P});
    cfg.source.type = ShapeType::Gaussian;
    cfg.source.amplitude = 5.0;
    cfg.source.width = 0.15;
    cfg.source.center = {0.3, 0.5, 0.0};
    const std::string name = fmt::format("{}2d-singular", to_string(method));
    CaptureWriter ref;
    if (g_rank == 0) {
      RunContext sctx;
      sctx.domain = serial_domain(cfg.grid(), cfg.boundary);
      const RunResult r = run_any(cfg, sctx, {&ref});
      CHECK(r.converged, "{}: serial run did not converge", name);
    }
    for (const auto& req : spread(decompositions(cfg, g_size), 3)) {
      CartesianDecomposition dec(MPI_COMM_WORLD, cfg.grid(), cfg.boundary, req);
      MpiReducer reducer(dec.comm());
      DecomposedRun run(dec, cfg, reducer);
      CaptureWriter cap;
      const RunResult r = run_any(cfg, run.ctx, {&cap});
      const std::string label =
          fmt::format("{} np{} {}{}", name, g_size, dec.describe(), req[0] == 0 ? " (auto)" : "");
      CHECK(r.converged, "{}: did not converge ({:.3e})", label, r.final_residual);
      CHECK(!cap.steps.empty(), "{}: no output", label);
      double diff = INFINITY, mean = INFINITY;
      if (!cap.steps.empty()) {
        const std::vector<double> global = gather_global(cap.steps.back(), cfg, dec.comm());
        if (g_rank == 0) {
          diff = max_relative_difference(global, ref.steps.back().data);
          double sum = 0, top = 0;
          for (double v : global) sum += v, top = std::max(top, std::abs(v));
          mean = sum / double(global.size());
          CHECK(diff <= 1e-7, "{}: max relative difference {:.3e} from the serial run", label,
                diff);
          CHECK(std::abs(mean) <= 1e-13 * top, "{}: mean {:.3e}", label, mean);
        }
      }
      log(fmt::format("  {:<56} {} iterations, max rel. diff {:.1e}, mean {:.1e}", label, r.steps,
                      diff, mean));
    }
  }
}
#ifdef HEATSOLVE_HAVE_HDF5
// A decomposed multigrid run (several distributed levels) continued from a checkpoint ends
// bit for bit where the uninterrupted run ends: the cycles' arithmetic does not depend on
// where the run started (multigrid cycles and implicit steps; mg-cg restarts a Krylov space).
void test_multigrid_restart() {
  const fs::path work = fs::path(g_workdir);
  for (const Case& cs : multigrid_cases()) {
    if (cs.name != "mg3d-mixed-dist" && cs.name != "mg3d-materials-dist" &&
        cs.name != "implicit-euler3d-dist")
      continue;
    const std::int64_t first = 3;  // cycles or steps before the checkpoint
    Config cfg = cs.cfg;
    const std::string dir = (work / fmt::format("{}-restart", cs.name)).string();
    if (g_rank == 0) {
      fs::remove_all(dir);
      fs::create_directories(dir);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    cfg.output_directory = dir;
    cfg.deck = {{"name", "mpi-multigrid-restart-" + cs.name}};
    CartesianDecomposition dec(MPI_COMM_WORLD, cfg.grid(), cfg.boundary, {0, 0, 0});
    MpiReducer reducer(dec.comm());
    const auto run = [&](const Config& c, const std::string& restart, CaptureWriter* cap) {
      DecomposedRun mpi(dec, c, reducer);
      mpi.ctx.checkpoint_comm = dec.io_comm();
      mpi.ctx.restart_path = restart;
      return run_any(c, mpi.ctx, {cap});
    };
    CaptureWriter whole, part_out, resumed;
    const RunResult ref = run(cfg, "", &whole);
    Config part = cfg;
    part.checkpoint_every = first;
    if (cfg.problem == ProblemType::Poisson) {
      part.max_iterations = first;
    } else {
      part.steps = first;
      part.end_time = cfg.dt * double(first);
    }
    run(part, "", &part_out);
    const RunResult r = run(cfg, checkpoint_path(dir, first), &resumed);
    const std::string label =
        fmt::format("{} np{} {} restarted at {}", cs.name, g_size, dec.describe(), first);
    CHECK(ref.steps > first, "{}: the whole run took {} steps", label, ref.steps);
    CHECK(r.start_step == first, "{}: started at {}", label, r.start_step);
    CHECK(r.steps == ref.steps && r.converged == ref.converged, "{}: {} steps, whole run {}", label,
          r.steps, ref.steps);
    CHECK(r.final_residual == ref.final_residual, "{}: final residual {:.17g}, whole run {:.17g}",
          label, r.final_residual, ref.final_residual);
    bool same = false;
    if (!whole.steps.empty() && !resumed.steps.empty()) {
      const std::vector<double> a = gather_global(whole.steps.back(), cfg, dec.comm());
      const std::vector<double> b = gather_global(resumed.steps.back(), cfg, dec.comm());
      std::string where;
      if (g_rank == 0) {
        same = bitwise_equal(a, b, &where);
        CHECK(same, "{}: final field differs from the whole run's: {}", label, where);
      }
    }
    log(fmt::format("  {:<64} {}", label, same ? "bitwise equal" : "DIFFERS"));
  }
}
#endif

}  // namespace

// One exchanger over two runs, as a library caller may keep it: the second run's backend
// (which may sit at the first one's address) has the buffers set up anew on every rank
// (Backend::instance()), and both runs give the same bits on each block. Keyed by the
// backend's address, a rank that found its old set-up skipped the handshake its neighbour
// started (a hang where halos go through CUDA IPC).
void test_exchanger_reused() {
  for (const Case& cs : multigrid_cases()) {
    if (cs.cfg.problem != ProblemType::Poisson) continue;
    const Config& cfg = cs.cfg;
    CartesianDecomposition dec(MPI_COMM_WORLD, cfg.grid(), cfg.boundary, {0, 0, 0});
    MpiReducer reducer(dec.comm());
    DecomposedRun run(dec, cfg, reducer);
    std::vector<double> cycles;
    std::vector<std::vector<double>> fields;
    for (int rep = 0; rep < 2; ++rep) {
      CaptureWriter cap;
      const RunResult r = run_any(cfg, run.ctx, {&cap});
      cycles.push_back(double(r.multigrid.at("cycles")));
      fields.push_back(cap.steps.empty() ? std::vector<double>{} : cap.steps.back().data);
    }
    const std::string label =
        fmt::format("{} np{} {}, one exchanger for two runs", cs.name, g_size, dec.describe());
    std::string where;
    CHECK(cycles[0] == cycles[1], "{}: {} then {} cycles", label, cycles[0], cycles[1]);
    CHECK(!fields[0].empty() && bitwise_equal(fields[0], fields[1], &where), "{}: {}", label,
          where);
    log(label + ": the same bits");
    return;
  }
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  g_workdir = argc > 1 ? argv[1] : "mpi-test-work";
  int rc = 0;
  try {
    if (g_rank == 0) {
      fs::remove_all(g_workdir);
      fs::create_directories(g_workdir);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    log(fmt::format("heatsolve MPI tests on {} ranks", g_size));
    test_decomposition_rules();
    test_ranks_on_my_node();
    log("decomposition rules, ranks on the node: done");
    for (int dims : {2, 3}) {
      Config shape;
      shape.dimensions = dims;
      shape.cells = {11, 9, dims == 3 ? 7 : 1};
      for (const auto& p : decompositions(shape, g_size)) {
        test_halo_exchange<double>(dims, p);
        test_halo_exchange<float>(dims, p);
      }
    }
    log("halo exchange ghosts: done");
    test_regions();
    log("core/shell regions: done");
    test_equivalence();
    test_multigrid_equivalence();
    test_exchanger_reused();
    test_singular_sweeps();
#ifdef HEATSOLVE_HAVE_HDF5
    test_multigrid_restart();
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] exception: %s\n", g_rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int failures = 0, checks = 0;
  MPI_Reduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&g_checks, &checks, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (g_rank == 0) {
    std::printf("%s: %d checks, %d failed\n", failures ? "FAILED" : "PASSED", checks, failures);
    rc = failures ? 1 : 0;
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
