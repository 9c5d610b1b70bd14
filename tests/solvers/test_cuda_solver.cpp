// Whole runs on the CUDA backend against the CPU reference (skipped without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "kernels/device.hpp"
#include "solvers/solver.hpp"
#include "tests/solver_test_util.hpp"

namespace heatsolve {
namespace {

template <typename T>
double max_rel_diff(const std::vector<T>& a, const std::vector<T>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return diff / scale;
}

Config mixed_heat_config(int dims) {
  Config cfg = testing::heat_config(dims, dims == 3 ? 29 : 71, 0.01, 0.9);
  cfg.cells = {dims == 3 ? 29 : 71, dims == 3 ? 23 : 45, dims == 3 ? 19 : 1};
  cfg.boundary[0] = FaceBC{BoundaryType::Dirichlet, 1.0};
  cfg.boundary[1] = FaceBC{BoundaryType::Neumann, -0.5};
  cfg.boundary[2] = cfg.boundary[3] = FaceBC{BoundaryType::Periodic, 0.0};
  cfg.boundary[4] = FaceBC{BoundaryType::Neumann, 0.0};
  cfg.boundary[5] = FaceBC{BoundaryType::Dirichlet, -0.25};
  cfg.initial.type = ShapeType::Gaussian;
  cfg.initial.amplitude = 2.0;
  cfg.initial.width = 0.2;
  cfg.initial.center = {0.3, 0.6, 0.5};
  cfg.source.type = ShapeType::Box;
  cfg.source.value = 3.0;
  cfg.source.lower = {0.5, 0.1, 0.2};
  cfg.source.upper = {0.9, 0.4, 0.7};
  const double dt_max = stable_dt(cfg.grid(), cfg.diffusivity);
  cfg.steps = std::int64_t(std::ceil(cfg.end_time / (0.9 * dt_max)));
  cfg.dt = cfg.end_time / double(cfg.steps);
  return cfg;
}

// Periodic y faces (the backend fills ghosts before each sweep) and, second, Dirichlet and
// Neumann faces only with `kernel: 2.5d-tma` (on sm_90), where the heat loop applies the
// face rules inside the sweep (Backend::stencil_with_boundary).
TEST(CudaSolver, HeatRunMatchesCpu) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  for (int dims : {2, 3})
    for (bool periodic_y : {true, false}) {
      SCOPED_TRACE(std::to_string(dims) + "D, periodic y: " + std::to_string(periodic_y));
      Config cfg = mixed_heat_config(dims);
      if (!periodic_y) {
        cfg.boundary[2] = FaceBC{BoundaryType::Neumann, 0.75};
        cfg.boundary[3] = FaceBC{BoundaryType::Dirichlet, 0.5};
        if (stencil_variant_supported(StencilVariant::Tma25D))
          cfg.kernel = stencil_variant_name(StencilVariant::Tma25D);
      }
      std::vector<double> cpu, gpu;
      run_serial<double>(cfg, &cpu);
      cfg.backend = BackendKind::Cuda;
      const RunResult r = run_serial<double>(cfg, &gpu);
      EXPECT_EQ(r.backend, "cuda");
      EXPECT_LT(max_rel_diff(gpu, cpu), 1e-12) << "dims " << dims;
      std::vector<float> cpu_f, gpu_f;
      cfg.precision = Precision::Float;
      cfg.backend = BackendKind::Cpu;
      run_serial<float>(cfg, &cpu_f);
      cfg.backend = BackendKind::Cuda;
      run_serial<float>(cfg, &gpu_f);
      EXPECT_LT(max_rel_diff(gpu_f, cpu_f), 1e-5) << "dims " << dims;
    }
}

TEST(CudaSolver, AndersonMatchesCpuAndIsDeterministic) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  Config cfg = testing::poisson_config(3, 33);
  cfg.tolerance = 1e-8;
  cfg.check_every = 5;
  cfg.method = SolverMethod::Anderson;
  cfg.anderson_depth = 6;
  cfg.source.type = ShapeType::Gaussian;
  cfg.source.amplitude = 50.0;
  cfg.source.width = 0.15;
  cfg.source.center = {0.4, 0.5, 0.6};
  std::vector<double> cpu, gpu, gpu2;
  const RunResult rc = run_serial<double>(cfg, &cpu);
  cfg.backend = BackendKind::Cuda;
  const RunResult rg = run_serial<double>(cfg, &gpu);
  const RunResult rg2 = run_serial<double>(cfg, &gpu2);
  ASSERT_TRUE(rc.converged);
  ASSERT_TRUE(rg.converged);
  EXPECT_NEAR(double(rg.steps), double(rc.steps), 0.1 * double(rc.steps));
  EXPECT_LT(max_rel_diff(gpu, cpu), 1e-6);
  ASSERT_EQ(rg.residual_history.size(), rg2.residual_history.size());
  for (std::size_t i = 0; i < rg.residual_history.size(); ++i)
    EXPECT_EQ(rg.residual_history[i].second, rg2.residual_history[i].second) << i;
  EXPECT_EQ(gpu, gpu2);
}

// Multigrid with its smoothing sweeps fused into temporal passes and its residuals restricted
// and measured without storing them (solver.multigrid.fused, the default) gives the bits of
// one sweep at a time: V-cycles, mg-cg and FMG, float and double, 3D and 2D grids with
// Dirichlet and Neumann faces and with a periodic pair (single sweeps). The large 3D grid is
// above BackendOptions::fuse_min_cells, so its finest level runs fused passes, its double
// V-cycles check convergence inside the next cycle's first pass (Multigrid::begin_cycle) and
// add the coarse correction inside the post-smoothing pass (Backend::prolong_add_sweeps); the
// small ones are also checked against the CPU.
TEST(CudaSolver, FusedMultigridIsBitwiseTheUnfusedCycle) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  for (int dims : {3, 2})
    for (bool large : {false, true})
      for (bool periodic : {false, true})
        for (SolverMethod method : {SolverMethod::Multigrid, SolverMethod::MultigridCG})
          for (MultigridCycle cycle : {MultigridCycle::V, MultigridCycle::FMG}) {
            if (method == SolverMethod::MultigridCG && cycle == MultigridCycle::FMG) continue;
            if (large && periodic) continue;
            SCOPED_TRACE(std::to_string(dims) + "D large " + std::to_string(large) + " periodic " +
                         std::to_string(periodic) + " method " + std::to_string(int(method)) +
                         " cycle " + std::to_string(int(cycle)));
            Config cfg = testing::poisson_config(dims, 8);
            if (dims == 3)
              cfg.cells =
                  large ? std::array<int, 3>{168, 164, 160} : std::array<int, 3>{44, 36, 28};
            else
              cfg.cells = large ? std::array<int, 3>{1500, 1420, 1} : std::array<int, 3>{92, 76, 1};
            cfg.boundary[0] = FaceBC{BoundaryType::Dirichlet, 1.0};
            cfg.boundary[1] = FaceBC{BoundaryType::Neumann, -0.5};
            cfg.boundary[2] = FaceBC{BoundaryType::Neumann, 0.25};
            cfg.boundary[3] = FaceBC{BoundaryType::Dirichlet, -0.75};
            if (periodic) cfg.boundary[2] = cfg.boundary[3] = FaceBC{BoundaryType::Periodic, 0.0};
            cfg.boundary[4] = FaceBC{BoundaryType::Dirichlet, 0.5};
            cfg.boundary[5] = FaceBC{BoundaryType::Neumann, 0.0};
            cfg.source.type = ShapeType::Gaussian;
            cfg.source.amplitude = 50.0;
            cfg.source.width = 0.15;
            cfg.source.center = {0.4, 0.5, 0.6};
            cfg.method = method;
            cfg.multigrid.cycle = cycle;
            cfg.tolerance = 1e-9;
            cfg.max_iterations = 40;
            std::vector<double> cpu, fused, single;
            cfg.backend = BackendKind::Cuda;
            const RunResult rf = run_serial<double>(cfg, &fused);
            cfg.multigrid.fused = false;
            const RunResult rs = run_serial<double>(cfg, &single);
            ASSERT_TRUE(rf.converged);
            EXPECT_EQ(rf.steps, rs.steps);
            EXPECT_TRUE(fused == single) << "fused and single sweeps differ";
            if (!large) {
              cfg.backend = BackendKind::Cpu;
              const RunResult rc = run_serial<double>(cfg, &cpu);
              EXPECT_EQ(rf.steps, rc.steps);
              EXPECT_LT(max_rel_diff(fused, cpu), 1e-8);
              cfg.backend = BackendKind::Cuda;
            }
            std::vector<float> fused_f, single_f;
            cfg.precision = Precision::Float;
            cfg.tolerance = 1e-5;
            cfg.multigrid.fused = true;
            const RunResult ff = run_serial<float>(cfg, &fused_f);
            cfg.multigrid.fused = false;
            const RunResult sf = run_serial<float>(cfg, &single_f);
            EXPECT_EQ(ff.steps, sf.steps);
            EXPECT_TRUE(fused_f == single_f) << "float: fused and single sweeps differ";
          }
}

TEST(CudaSolver, JacobiMatchesCpu) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  Config cfg = testing::poisson_config(2, 41);
  cfg.tolerance = 1e-9;
  cfg.source.type = ShapeType::Sine;
  cfg.source.amplitude = 2 * M_PI * M_PI;
  std::vector<double> cpu, gpu;
  const RunResult rc = run_serial<double>(cfg, &cpu);
  cfg.backend = BackendKind::Cuda;
  const RunResult rg = run_serial<double>(cfg, &gpu);
  EXPECT_EQ(rc.steps, rg.steps);
  EXPECT_LT(max_rel_diff(gpu, cpu), 1e-10);
}

// Jacobi through the fused kernel (kernel: temporal): the sweeps between residual checks run
// as k-sweep passes; the same iterations and solution as the CPU's single sweeps, in 3D
// (temporal passes) with a source and Dirichlet/Neumann faces.
TEST(CudaSolver, JacobiInTemporalPassesMatchesCpu) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  for (const Precision p : {Precision::Double, Precision::Float}) {
    Config cfg = testing::poisson_config(3, 40);
    cfg.tolerance = p == Precision::Double ? 1e-9 : 1e-4;  // float's floor: ~2e-5 here
    cfg.check_every = 50;
    cfg.precision = p;
    cfg.source.type = ShapeType::Sine;
    cfg.source.amplitude = 3 * M_PI * M_PI;
    cfg.boundary[3] = FaceBC{BoundaryType::Neumann, 0.0};
    std::vector<double> cpu, gpu;
    const RunResult rc = run_serial<double>(cfg, &cpu);
    cfg.backend = BackendKind::Cuda;
    cfg.kernel = "temporal";
    if (p == Precision::Double) {
      const RunResult rg = run_serial<double>(cfg, &gpu);
      EXPECT_EQ(rc.steps, rg.steps);
      EXPECT_LT(max_rel_diff(gpu, cpu), 1e-9);
    } else {
      std::vector<float> gf;
      const RunResult rg = run_serial<float>(cfg, &gf);
      EXPECT_NEAR(double(rg.steps), double(rc.steps), 100.0);
      gpu.assign(gf.begin(), gf.end());
      EXPECT_LT(max_rel_diff(gpu, cpu), 1e-4);
    }
  }
}

// Inputs over time (docs/deck.md "Time-varying inputs") on the GPU: a dirichlet ramp, the box
// source's value and a Gaussian term's amplitude as tables. A single term is generated in the
// sweeps from its separable form, rescaled each step (Backend::rescale_source); a list is a
// stored field refilled from the host. `kernel: temporal` falls back to single steps. The
// explicit run, implicit Euler and Crank-Nicolson against the CPU.
TEST(CudaSolver, InputsOverTimeMatchCpu) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  for (int dims : {2, 3})
    for (const char* kernel : {"auto", "temporal"})
      for (bool list : {false, true}) {
        SCOPED_TRACE(std::to_string(dims) + "D " + kernel + (list ? ", a source list" : ""));
        Config cfg = mixed_heat_config(dims);
        cfg.kernel = kernel;
        const double T = cfg.end_time;
        cfg.boundary_tables[0] = TimeTable({{0.0, 1.0}, {T / 2, 3.0}, {T, 0.5}});
        cfg.source.value_table = TimeTable({{0.0, 3.0}, {T, -1.0}});
        cfg.sources = {cfg.source};
        if (list) {
          Shape g;
          g.type = ShapeType::Gaussian;
          g.width = 0.2;
          g.center = {0.6, 0.4, 0.5};
          g.amplitude_table = TimeTable({{T / 4, 0.0}, {T, 5.0}});
          cfg.sources.push_back(g);
        }
        std::vector<double> cpu, gpu;
        run_serial<double>(cfg, &cpu);
        cfg.backend = BackendKind::Cuda;
        const RunResult r = run_serial<double>(cfg, &gpu);
        EXPECT_EQ(r.backend, "cuda");
        EXPECT_LT(max_rel_diff(gpu, cpu), 1e-12);
        if (std::string(kernel) == "temporal") continue;
        for (TimeScheme scheme : {TimeScheme::ImplicitEuler, TimeScheme::CrankNicolson}) {
          Config imp = cfg;
          imp.scheme = scheme;
          imp.method = SolverMethod::Multigrid;
          imp.tolerance = 1e-11;
          imp.dt *= 8;
          imp.steps = std::max<std::int64_t>(1, imp.steps / 8);
          imp.end_time = imp.dt * double(imp.steps);
          std::vector<double> ic, ig;
          imp.backend = BackendKind::Cpu;
          run_serial<double>(imp, &ic);
          imp.backend = BackendKind::Cuda;
          run_serial<double>(imp, &ig);
          EXPECT_LT(max_rel_diff(ig, ic), 1e-9) << to_string(scheme);
        }
      }
}

// A singular Poisson problem solved for its compatible part (solver.singular:
// compatible-mean) by Jacobi and Anderson on the GPU: the CPU's zero-mean solution.
TEST(CudaSolver, CompatibleMeanJacobiAndAndersonMatchCpu) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  for (SolverMethod method : {SolverMethod::Jacobi, SolverMethod::Anderson}) {
    Config cfg = testing::poisson_config(2, 33);
    cfg.tolerance = 1e-9;
    cfg.method = method;
    cfg.singular = SingularPolicy::CompatibleMean;
    for (auto& f : cfg.boundary) f = FaceBC{BoundaryType::Neumann, 0.0};
    cfg.boundary[0] = FaceBC{BoundaryType::Neumann, 0.75};
    cfg.source.type = ShapeType::Gaussian;
    cfg.source.amplitude = 5.0;
    cfg.source.width = 0.15;
    cfg.source.center = {0.3, 0.5, 0.0};
    std::vector<double> cpu, gpu;
    const RunResult rc = run_serial<double>(cfg, &cpu);
    cfg.backend = BackendKind::Cuda;
    const RunResult rg = run_serial<double>(cfg, &gpu);
    ASSERT_TRUE(rc.converged);
    ASSERT_TRUE(rg.converged);
    double mean = 0;
    for (double v : gpu) mean += v / double(gpu.size());
    EXPECT_LT(std::abs(mean), 1e-12) << to_string(method);
    EXPECT_LT(max_rel_diff(gpu, cpu), 1e-7) << to_string(method);
  }
}

}  // namespace
}  // namespace heatsolve
