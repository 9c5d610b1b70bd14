// MPI tests, run under mpirun with 1..8 ranks (tests/CMakeLists.txt, MPI section):
//   * decomposition rules (pure functions, rank 0);
//   * halo exchange: every Exchange ghost holds the neighbour's value (periodic wrap too);
//   * equivalence: heat and Jacobi runs on every decomposition of the rank count (and the
//     automatic one), 2D and 3D, every boundary type, uneven splits, float and double: the
//     field at every output step is BITWISE equal to the single-rank run (inputs over time too);
//   * parallel HDF5 output (collective, and gathered to rank 0) holds the same steps, times
//     and bits as the serial writer's file;
//   * multigrid/mg-cg Poisson and implicit heat (tests/mpi/test_mpi_multigrid.cpp), constant
//     and variable coefficients, with the
//     first coarse level gathered and with several coarse levels distributed
//     (agglomerate_below small): every decomposition agrees with the single-rank run to 1e-8
//     (tolerance 1e-10), same cycle counts when every block halves evenly, within one
//     otherwise (inputs over time too); a decomposed multigrid run restarted from a checkpoint
//     ends bit for bit as the uninterrupted one;
//   * Jacobi and Anderson on a singular Poisson problem (compatible-mean): to 1e-7 of the
//     single-rank run, zero mean.
// Shared helpers: tests/mpi/mpi_test_support.hpp. Usage: heatsolve_mpi_tests <work-directory>
#include <fmt/format.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/config.hpp"
#include "io/materials.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "solvers/parallel/decomposition.hpp"
#include "solvers/parallel/halo_exchange.hpp"
#include "solvers/parallel/ipc_allgather.hpp"
#include "solvers/solver.hpp"
#include "tests/mpi/mpi_test_support.hpp"
#ifdef HEATSOLVE_HAVE_HDF5
#include "io/hdf5_writer.hpp"
#endif

namespace heatsolve::mpi_tests {
namespace {

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

}  // namespace
}  // namespace heatsolve::mpi_tests

using namespace heatsolve;
using namespace heatsolve::mpi_tests;

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
