// The MPI suite's multigrid part (tests/mpi/test_mpi_equivalence.cpp runs it): multigrid and
// mg-cg Poisson and implicit heat, constant and variable coefficients, with the first coarse
// level gathered and with several coarse levels distributed, against the single-rank run; one
// exchanger over two runs; a decomposed run restarted from a checkpoint.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "io/checkpoint.hpp"
#include "io/materials.hpp"
#include "solvers/multigrid/multigrid.hpp"
#include "solvers/parallel/ipc_allgather.hpp"
#include "tests/mpi/mpi_test_support.hpp"
#include "tests/restart_part.hpp"
#ifdef HEATSOLVE_HAVE_HDF5
#include "io/hdf5_writer.hpp"
#endif

namespace heatsolve::mpi_tests {

namespace {

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
  // Implicit steps of `dt`, each solved to 1e-10.
  const auto implicit = [](Config c, TimeScheme scheme, SolverMethod method, double dt) {
    c.scheme = scheme;
    c.method = method;
    c.dt = dt;
    c.end_time = c.dt * double(c.steps);
    c.tolerance = 1e-10;
    c.max_iterations = 50;
    c.output_every = 0;
    return c;
  };
  // Implicit Euler at 50x the explicit limit: Dirichlet x faces, periodic y, Neumann z, a
  // uniform source.
  const auto implicit_euler_heat = [&](std::array<int, 3> cells, std::int64_t steps) {
    Config c = base_config(3, cells, steps, Precision::Double);
    c = implicit(c, TimeScheme::ImplicitEuler, SolverMethod::Multigrid,
                 50 * stable_dt(c.grid(), c.diffusivity));
    c.boundary = faces({{BoundaryType::Dirichlet, 0.4},
                        {BoundaryType::Dirichlet, 0.1},
                        P,
                        P,
                        {BoundaryType::Neumann, 0.5},
                        {BoundaryType::Neumann, 0.0}});
    c.source.type = ShapeType::Uniform;
    c.source.value = 1.0;
    return c;
  };
  // mg-cg Poisson with materials by region, convective, heat-flux, periodic, Dirichlet and
  // Neumann faces, a uniform source.
  const auto materials_poisson = [&](std::array<int, 3> cells) {
    Config c = poisson(base_config(3, cells, 0, Precision::Double), 1e-10);
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
    Config c = implicit_euler_heat({20, 16, 12}, 6);
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
    Config c = materials_poisson({24, 20, 16});
    out.push_back({"mgcg3d-materials", c});
    Config h = base_config(3, {20, 16, 12}, 4, Precision::Double);
    add_materials(h);
    h.multigrid.prolongation = Prolongation::Constant;
    h.boundary = c.boundary;
    h = implicit(h, TimeScheme::ImplicitEuler, SolverMethod::MultigridCG,
                 30 * stable_dt_materials(h));
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
    Config c = implicit_euler_heat({32, 32, 16}, 5);
    out.push_back({"implicit-euler3d-dist", distributed(c, 0)});
    c.multigrid.cycle = MultigridCycle::FMG;  // each step's first cycle: a correction's pass
    out.push_back({"implicit-euler3d-fmg-dist", distributed(c, 0), 3});
    c.multigrid.cycle = MultigridCycle::V;
    c.scheme = TimeScheme::CrankNicolson;
    c.method = SolverMethod::MultigridCG;
    out.push_back({"crank-nicolson-mgcg3d-dist", distributed(c, 0)});
  }
  {  // materials by region: coarsened resistances need their neighbours' ghost ring
    Config c = materials_poisson({32, 32, 32});
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
    h = implicit(h, TimeScheme::CrankNicolson, SolverMethod::MultigridCG,
                 30 * stable_dt_materials(h));
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

}  // namespace

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
    const Config part = test_support::stopped_after(cfg, first);
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

}  // namespace heatsolve::mpi_tests
