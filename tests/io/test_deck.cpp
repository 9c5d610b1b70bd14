// Deck parsing and validation: every shipped deck parses, defaults and field mapping,
// overrides, time resolution, output.catalyst. Bad decks: test_deck_errors.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "io/deck.hpp"
#include "tests/io/deck_text.hpp"

namespace heatsolve {
namespace {

namespace fs = std::filesystem;

using namespace deck_text;

// ---- Shipped decks ------------------------------------------------------------------------

TEST(Deck, EveryShippedDeckParses) {
  const fs::path inputs = fs::path(HEATSOLVE_SOURCE_DIR) / "inputs";
  int count = 0;
  for (const auto& entry : fs::directory_iterator(inputs)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    Config cfg;
    DeckFeatures all;  // decks using optional parts (output.catalyst) parse in any build
    all.catalyst = true;
    ASSERT_NO_THROW(cfg = load_deck(entry.path().string(), {}, all)) << entry.path();
    EXPECT_EQ(cfg.name, entry.path().stem().string());
    EXPECT_EQ(cfg.output_directory, "out/" + cfg.name);
    EXPECT_EQ(cfg.deck_path, entry.path().string());
    EXPECT_EQ(cfg.deck["name"], cfg.name);
    if (cfg.problem == ProblemType::Heat) {
      EXPECT_GT(cfg.dt, 0);
      if (cfg.scheme == TimeScheme::Explicit) {
        EXPECT_LE(cfg.dt, stable_dt(cfg.grid(), cfg.diffusivity));
      } else {  // implicit decks are solved by multigrid, at any dt
        EXPECT_TRUE(cfg.method == SolverMethod::Multigrid ||
                    cfg.method == SolverMethod::MultigridCG);
      }
    }
    ++count;
  }
  EXPECT_GE(count, 6);
}

TEST(Deck, HeatedPlateBoundaries) {
  const Config cfg =
      load_deck((fs::path(HEATSOLVE_SOURCE_DIR) / "inputs" / "heated_plate.yaml").string());
  EXPECT_EQ(cfg.dimensions, 2);
  for (int face : {0, 1, 2}) {
    EXPECT_EQ(cfg.boundary[face].type, BoundaryType::Neumann) << face;
    EXPECT_EQ(cfg.boundary[face].value, 0.0);
  }
  EXPECT_EQ(cfg.boundary[3].type, BoundaryType::Dirichlet);
  EXPECT_EQ(cfg.boundary[3].value, 1.0);
  EXPECT_EQ(cfg.source.type, ShapeType::Gaussian);
  EXPECT_EQ(cfg.source.center[0], 0.5);
  EXPECT_EQ(cfg.source.center[1], 0.4);
}

TEST(Deck, Bench512IsFloatWithoutOutput) {
  const Config cfg =
      load_deck((fs::path(HEATSOLVE_SOURCE_DIR) / "inputs" / "bench512.yaml").string());
  EXPECT_EQ(cfg.precision, Precision::Float);
  EXPECT_EQ(cfg.cells, (std::array<int, 3>{512, 512, 512}));
  EXPECT_TRUE(cfg.formats.empty());
}

// ---- Defaults and field mapping -----------------------------------------------------------

TEST(Deck, MinimalDeckGetsDefaults) {
  const Config cfg = parse(kBase);
  EXPECT_EQ(cfg.name, "t");
  EXPECT_EQ(cfg.deck_path, "test.yaml");
  EXPECT_EQ(cfg.problem, ProblemType::Heat);
  EXPECT_EQ(cfg.length, (std::array<double, 3>{1, 1, 1}));
  EXPECT_EQ(cfg.origin, (std::array<double, 3>{0, 0, 0}));
  EXPECT_EQ(cfg.diffusivity, 1.0);
  EXPECT_EQ(cfg.initial.type, ShapeType::Uniform);
  EXPECT_EQ(cfg.initial.value, 0.0);
  EXPECT_EQ(cfg.source.type, ShapeType::None);
  for (const FaceBC& f : cfg.boundary) {
    EXPECT_EQ(f.type, BoundaryType::Dirichlet);
    EXPECT_EQ(f.value, 0.0);
  }
  EXPECT_EQ(cfg.output_directory, "out/t");
  EXPECT_EQ(cfg.output_every, 0);
  EXPECT_EQ(cfg.formats, std::vector<std::string>{"hdf5"});
  EXPECT_EQ(cfg.kernel, "auto");
  EXPECT_EQ(cfg.backend, BackendKind::Auto);
  EXPECT_TRUE(cfg.dt_auto);
  EXPECT_EQ(cfg.safety, 0.9);
}

TEST(Deck, ExecutionSection) {
  const Config cfg = parse(kBase +
                           "execution: {backend: cpu, precision: float, kernel: 2.5d, "
                           "block: [32, 8, 1], time_block: 4, decomposition: [2, 1, 1], "
                           "halo: cuda-aware, overlap: false, walltime: \"01:02:03\"}\n");
  EXPECT_EQ(cfg.backend, BackendKind::Cpu);
  EXPECT_EQ(cfg.precision, Precision::Float);
  EXPECT_EQ(cfg.kernel, "2.5d");
  EXPECT_EQ(cfg.block, (std::array<int, 3>{32, 8, 1}));
  EXPECT_EQ(cfg.time_block, 4);
  EXPECT_EQ(cfg.decomposition, (std::array<int, 3>{2, 1, 1}));
  EXPECT_EQ(cfg.halo, HaloMode::CudaAware);
  EXPECT_FALSE(cfg.overlap);
  EXPECT_EQ(cfg.walltime_seconds, 3723.0);
}

// A block is checked only where the CUDA backend runs that one variant: the CPU has one
// stencil, `auto` and `temporal` give each variant the block where it compiles it.
TEST(Deck, CompiledBlocksAreAccepted) {
  EXPECT_EQ(parse(kBase + "execution: {kernel: naive, block: [32, 8, 4]}\n").block,
            (std::array<int, 3>{32, 8, 4}));
  // Streaming variants: bx x by compiled, the third entry is the planes per block.
  EXPECT_EQ(
      parse(kBase + "execution: {precision: float, kernel: 2.5d-tma, block: [512, 1, 40]}\n").block,
      (std::array<int, 3>{512, 1, 40}));
  EXPECT_EQ(parse(kBase2D + "execution: {kernel: shared, block: [64, 8, 1]}\n").kernel, "shared");
  for (const char* other : {"backend: cpu, kernel: naive", "kernel: auto", "kernel: temporal"})
    EXPECT_NO_THROW(parse(kBase + "execution: {" + other + ", block: [48, 3, 1]}\n"));
}

TEST(Deck, UncompiledBlockFromSetPointsAtTheOverride) {
  const DeckError e =
      parse_error(kBase + "execution: {kernel: 2.5d}\n", {"execution.block=[64, 64, 1]"});
  EXPECT_EQ(e.file(), "--set");
  EXPECT_EQ(e.line(), 1);
  EXPECT_NE(e.message().find("execution.block: block 64x64x1 is not compiled"), std::string::npos)
      << e.what();
}

// `heatsolve run` knows the GPU: a variant it cannot run is a deck error at the kernel key;
// the GPU is asked only for a variant with a minimum compute capability, on a GPU backend.
TEST(Deck, KernelTheGpuCannotRunIsRejectedWhenTheGpuIsKnown) {
  int asked = 0;
  DeckFeatures f;
  f.compute_capability = [&asked] { return ++asked, 80; };
  const std::string tma = kBase + "execution: {precision: float, kernel: 2.5d-tma}\n";
  try {
    parse_deck(tma, "test.yaml", {}, f);
    ADD_FAILURE() << "2.5d-tma accepted on sm_80";
  } catch (const DeckError& e) {
    EXPECT_EQ(e.line(), 5);
    EXPECT_EQ(e.column(), 31);  // the kernel key
    EXPECT_NE(e.message().find("'2.5d-tma' needs a GPU of compute capability 9.0 or newer; this "
                               "run's GPU has 8.0"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(asked, 1);
  EXPECT_NO_THROW(parse_deck(kBase + "execution: {kernel: 2.5d-async}\n", "test.yaml", {}, f));
  EXPECT_NO_THROW(
      parse_deck(kBase + "execution: {backend: cpu, kernel: 2.5d-tma}\n", "test.yaml", {}, f));
  EXPECT_EQ(asked, 1);
  f.compute_capability = [] { return 90; };
  EXPECT_NO_THROW(parse_deck(tma, "test.yaml", {}, f));
  f.compute_capability = [] { return 0; };  // no GPU: the backend reports it at run time
  EXPECT_NO_THROW(parse_deck(tma, "test.yaml", {}, f));
  EXPECT_NO_THROW(parse(tma));  // validate: the GPU is not known
}

TEST(Deck, AutoExecutionValues) {
  const Config cfg =
      parse(kBase + "execution: {block: auto, time_block: auto, decomposition: auto}\n");
  EXPECT_EQ(cfg.block, (std::array<int, 3>{0, 0, 0}));
  EXPECT_EQ(cfg.time_block, 0);
  EXPECT_EQ(cfg.decomposition, (std::array<int, 3>{0, 0, 0}));
}

TEST(Deck, EveryKernelNameIsAccepted) {
  for (const std::string& k : kKernelNames)
    EXPECT_EQ(parse(kBase + "execution: {kernel: " + k + "}\n").kernel, k);
}

TEST(Deck, TwoDimensionalFields) {
  const std::string text =
      "name: t\n"
      "problem: {type: heat, dimensions: 2}\n"
      "grid: {cells: [16, 8], length: [2, 1], origin: [-1, 0]}\n"
      "time: {steps: 3}\n"
      "execution: {decomposition: [2, 3]}\n"
      "boundary: {x-: {type: periodic}, x+: {type: periodic}, y+: {type: neumann, flux: 2}}\n";
  const Config cfg = parse(text);
  EXPECT_EQ(cfg.cells, (std::array<int, 3>{16, 8, 1}));
  EXPECT_EQ(cfg.length[0], 2.0);
  EXPECT_EQ(cfg.origin[0], -1.0);
  EXPECT_EQ(cfg.decomposition, (std::array<int, 3>{2, 3, 1}));
  EXPECT_EQ(cfg.boundary[0].type, BoundaryType::Periodic);
  EXPECT_EQ(cfg.boundary[1].type, BoundaryType::Periodic);
  EXPECT_EQ(cfg.boundary[2].type, BoundaryType::Dirichlet);
  EXPECT_EQ(cfg.boundary[3].type, BoundaryType::Neumann);
  EXPECT_EQ(cfg.boundary[3].value, 2.0);
  EXPECT_EQ(cfg.grid().nz, 1);
}

TEST(Deck, ShapesAndFaceOverrideAll) {
  const Config cfg = parse(
      kBase +
      "initial: {type: box, value: 2, lower: [0.1, 0.2, 0.3], upper: [0.4, 0.5, 0.6]}\n"
      "source: {type: gaussian, amplitude: 3, center: [0.5, 0.5, 0.5], width: 0.1, value: 1}\n"
      "boundary: {all: {type: dirichlet, value: 4}, z+: {type: neumann, flux: -1}}\n");
  EXPECT_EQ(cfg.initial.type, ShapeType::Box);
  EXPECT_EQ(cfg.initial.value, 2.0);
  EXPECT_EQ(cfg.initial.lower[2], 0.3);
  EXPECT_EQ(cfg.initial.upper[0], 0.4);
  EXPECT_EQ(cfg.source.type, ShapeType::Gaussian);
  EXPECT_EQ(cfg.source.amplitude, 3.0);
  EXPECT_EQ(cfg.source.width, 0.1);
  EXPECT_EQ(cfg.source.value, 1.0);
  for (int f = 0; f < 5; ++f) EXPECT_EQ(cfg.boundary[f].value, 4.0);
  EXPECT_EQ(cfg.boundary[5].type, BoundaryType::Neumann);
  EXPECT_EQ(cfg.boundary[5].value, -1.0);
}

TEST(Deck, ConvectiveAndHeatFluxFaces) {
  const Config c = parse(kBase +
                         "boundary:\n"
                         "  all: {type: convective, h: 10.0, ambient: 300.0}\n"
                         "  x+: {type: convective, h: 25.0, ambient: 293.15}\n"
                         "  x-: {type: heat_flux, value: 1000.0}\n"
                         "  y-: {type: heat_flux}\n"
                         "  z+: {type: convective, h: 0, ambient: 1}\n");
  EXPECT_EQ(c.boundary[0].type, BoundaryType::HeatFlux);
  EXPECT_EQ(c.boundary[0].value, 1000.0);
  EXPECT_EQ(c.boundary[1].type, BoundaryType::Convective);
  EXPECT_EQ(c.boundary[1].coeff, 25.0);    // h
  EXPECT_EQ(c.boundary[1].value, 293.15);  // ambient
  EXPECT_EQ(c.boundary[2].type, BoundaryType::HeatFlux);
  EXPECT_EQ(c.boundary[2].value, 0.0);                      // default
  EXPECT_EQ(c.boundary[3].type, BoundaryType::Convective);  // from all
  EXPECT_EQ(c.boundary[3].coeff, 10.0);
  EXPECT_EQ(c.boundary[3].value, 300.0);
  EXPECT_EQ(c.boundary[5].coeff, 0.0);  // h = 0: insulated
  EXPECT_EQ(c.boundary[5].value, 1.0);
  // A diffusivity deck may use them too (k = the diffusivity), and so may Poisson (k = 1).
  const Config d = parse(
      "name: p\nproblem: {type: poisson, dimensions: 2}\ngrid: {cells: [8, 8]}\n"
      "boundary: {all: {type: heat_flux, value: 2}, y+: {type: dirichlet}}\n");
  EXPECT_EQ(d.boundary[0].type, BoundaryType::HeatFlux);
  EXPECT_EQ(d.boundary[0].value, 2.0);
  EXPECT_EQ(d.boundary[3].type, BoundaryType::Dirichlet);
}

TEST(Deck, FluxFaceOnAPeriodicAxisIsRefused) {
  const DeckError e = parse_error(kBase +
                                  "boundary:\n"
                                  "  all: {type: periodic}\n"
                                  "  y+: {type: convective, h: 1, ambient: 0}\n");
  EXPECT_NE(e.message().find("boundary.y+: a convective face cannot lie on a periodic axis (y- "
                             "is periodic)"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(e.line(), 7);
  EXPECT_EQ(e.column(), 7);
}

TEST(Deck, PoissonNeedsNoTimeSection) {
  const Config cfg = parse(
      "name: p\nproblem: {type: poisson, dimensions: 2}\ngrid: {cells: [8, 8]}\n"
      "solver: {method: anderson, tolerance: 1e-6, max_iterations: 50, check_every: 5,"
      " anderson: {depth: 3, damping: 0.5}}\n");
  EXPECT_EQ(cfg.problem, ProblemType::Poisson);
  EXPECT_EQ(cfg.method, SolverMethod::Anderson);
  EXPECT_EQ(cfg.tolerance, 1e-6);
  EXPECT_EQ(cfg.max_iterations, 50);
  EXPECT_EQ(cfg.check_every, 5);
  EXPECT_EQ(cfg.anderson_depth, 3);
  EXPECT_EQ(cfg.anderson_damping, 0.5);
  EXPECT_EQ(cfg.steps, 0);
}

TEST(Deck, MultigridSettings) {
  const Config cfg = parse(
      "name: p\nproblem: {type: poisson, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
      "solver: {method: mg-cg, multigrid: {cycle: f, smoother: jacobi, pre_sweeps: 0, "
      "post_sweeps: 5, coarse_sweeps: 0, prolongation: constant, coarse_tolerance: 1e-6, "
      "agglomerate_below: 0, fused: false, replay: false}}\n");
  EXPECT_EQ(cfg.method, SolverMethod::MultigridCG);
  EXPECT_EQ(cfg.multigrid.cycle, MultigridCycle::F);
  EXPECT_EQ(cfg.multigrid.smoother, MultigridSmoother::Jacobi);
  EXPECT_EQ(cfg.multigrid.pre_sweeps, 0);
  EXPECT_EQ(cfg.multigrid.post_sweeps, 5);
  EXPECT_EQ(cfg.multigrid.coarse_sweeps, 0);
  EXPECT_EQ(cfg.multigrid.prolongation, Prolongation::Constant);
  EXPECT_EQ(cfg.multigrid.coarse_tolerance, 1e-6);
  EXPECT_EQ(cfg.multigrid.agglomerate_below, 0);
  EXPECT_FALSE(cfg.multigrid.fused);
  EXPECT_FALSE(cfg.multigrid.replay);
  // Defaults: V-cycles, Chebyshev 3 + 3, linear prolongation.
  const Config d = parse(
      "name: p\nproblem: {type: poisson, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
      "solver: {method: multigrid}\n");
  EXPECT_EQ(d.method, SolverMethod::Multigrid);
  EXPECT_EQ(d.multigrid.cycle, MultigridCycle::V);
  EXPECT_EQ(d.multigrid.smoother, MultigridSmoother::Chebyshev);
  EXPECT_EQ(d.multigrid.pre_sweeps, 3);
  EXPECT_EQ(d.multigrid.post_sweeps, 3);
  EXPECT_EQ(d.multigrid.coarse_sweeps, 8);
  EXPECT_EQ(d.multigrid.prolongation, Prolongation::Linear);
  EXPECT_EQ(d.multigrid.agglomerate_below, kAgglomerateAuto);
  EXPECT_EQ(parse("name: p\nproblem: {type: poisson, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
                  "solver: {method: multigrid, multigrid: {agglomerate_below: auto}}\n")
                .multigrid.agglomerate_below,
            kAgglomerateAuto);
  EXPECT_TRUE(d.multigrid.fused);
  EXPECT_TRUE(d.multigrid.replay);
  EXPECT_FALSE(d.mixed_precision);
  // Full multigrid and mixed precision (double fields, a float hierarchy).
  const Config f = parse(
      "name: p\nproblem: {type: poisson, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
      "solver: {method: multigrid, multigrid: {cycle: fmg}}\nexecution: {precision: mixed}\n");
  EXPECT_EQ(f.multigrid.cycle, MultigridCycle::FMG);
  EXPECT_EQ(f.precision, Precision::Double);
  EXPECT_TRUE(f.mixed_precision);
  // Implicit heat steps take mixed precision too (their default method is multigrid).
  const Config h = parse(
      "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
      "time: {end: 0.01, dt: 0.001, scheme: crank-nicolson}\nexecution: {precision: mixed}\n");
  EXPECT_TRUE(h.mixed_precision);
}

// Implicit schemes have no stability limit: a dt hundreds of times dt_max validates, keeps
// its value, and the steps are solved by multigrid unless mg-cg is asked for.
TEST(DeckTime, ImplicitDtMayExceedTheExplicitLimit) {
  for (const char* scheme : {"implicit-euler", "crank-nicolson"}) {
    const Config cfg = parse(
        fmt::format("name: t\nproblem: {{type: heat, dimensions: 3}}\ngrid: {{cells: [8, 8, 8]}}\n"
                    "time: {{end: 2.0, dt: 0.5, scheme: {}}}\n",
                    scheme));
    EXPECT_EQ(cfg.scheme, std::string(scheme) == "implicit-euler" ? TimeScheme::ImplicitEuler
                                                                  : TimeScheme::CrankNicolson);
    EXPECT_GT(cfg.dt, 190 * stable_dt(cfg.grid(), cfg.diffusivity)) << scheme;  // 1/384
    EXPECT_EQ(cfg.dt, 0.5);
    EXPECT_EQ(cfg.steps, 4);
    EXPECT_EQ(cfg.method, SolverMethod::Multigrid) << "no solver section: multigrid";
  }
  const Config with_solver = parse(
      "name: t\nproblem: {type: heat, dimensions: 2}\ngrid: {cells: [16, 16]}\n"
      "time: {steps: 3, dt: 1.0, scheme: crank-nicolson}\nsolver: {tolerance: 1e-9}\n");
  EXPECT_EQ(with_solver.method, SolverMethod::Multigrid) << "solver section without a method";
  EXPECT_EQ(with_solver.end_time, 3.0);
  const Config cg = parse(
      "name: t\nproblem: {type: heat, dimensions: 2}\ngrid: {cells: [16, 16]}\n"
      "time: {steps: 3, dt: 1.0, scheme: implicit-euler}\nsolver: {method: mg-cg}\n");
  EXPECT_EQ(cg.method, SolverMethod::MultigridCG);
  // The explicit scheme keeps the limit (the message now names the implicit way out).
  const DeckError e = parse_error(
      "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
      "time: {end: 2.0, dt: 0.5, scheme: explicit}\n");
  EXPECT_NE(e.message().find("exceeds the stability limit"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("implicit time.scheme"), std::string::npos) << e.what();
}

// ---- Time resolution ----------------------------------------------------------------------

double dt_max_of(const Config& cfg) {
  return stable_dt(cfg.grid(), cfg.diffusivity);
}

TEST(DeckTime, AutoDtNumbers) {
  const Config cfg = parse(
      "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [64, 64, 64]}\n"
      "time: {end: 0.01, dt: auto, safety: 0.9}\n");
  const double dt_max = 1.0 / (2.0 * 3 * 64 * 64);
  EXPECT_DOUBLE_EQ(dt_max_of(cfg), dt_max);
  EXPECT_EQ(cfg.steps, static_cast<std::int64_t>(std::ceil(0.01 / (0.9 * dt_max))));
  EXPECT_EQ(cfg.steps, 274);
  EXPECT_NEAR(cfg.dt * static_cast<double>(cfg.steps), 0.01, 1e-15);
  EXPECT_EQ(cfg.end_time, 0.01);
  EXPECT_LE(cfg.dt, 0.9 * dt_max);
  EXPECT_TRUE(cfg.dt_auto);
}

TEST(DeckTime, ExplicitDt) {
  const Config cfg = parse(
      "name: t\nproblem: {type: heat, dimensions: 2}\ngrid: {cells: [10, 10]}\n"
      "time: {end: 0.001, dt: 0.0003}\n");
  EXPECT_FALSE(cfg.dt_auto);
  EXPECT_EQ(cfg.steps, 4);  // ceil(0.001 / 0.0003)
  EXPECT_DOUBLE_EQ(cfg.dt, 0.00025);
  EXPECT_NEAR(cfg.dt * cfg.steps, cfg.end_time, 1e-15);
}

TEST(DeckTime, ExactMultipleIsNotRoundedUp) {
  const Config cfg = parse(
      "name: t\nproblem: {type: heat, dimensions: 2}\ngrid: {cells: [10, 10]}\n"
      "time: {end: 0.001, dt: 0.0001}\n");
  EXPECT_EQ(cfg.steps, 10);
  EXPECT_NEAR(cfg.dt, 0.0001, 1e-18);
}

TEST(DeckTime, DtEqualToLimitIsAccepted) {
  // 2D, h = 0.1, alpha = 1: dt_max = 1 / (2 * (100 + 100)) = 0.0025.
  const Config cfg = parse(
      "name: t\nproblem: {type: heat, dimensions: 2}\ngrid: {cells: [10, 10]}\n"
      "time: {steps: 4, dt: 0.0025}\n");
  EXPECT_EQ(cfg.steps, 4);
  EXPECT_DOUBLE_EQ(cfg.end_time, 0.01);
}

TEST(DeckTime, StepsGiveEnd) {
  const Config cfg = parse(
      "name: t\nproblem: {type: heat, dimensions: 2}\ngrid: {cells: [10, 10]}\n"
      "time: {steps: 7, safety: 0.5}\n");
  EXPECT_EQ(cfg.steps, 7);
  EXPECT_DOUBLE_EQ(cfg.dt, 0.5 * 0.0025);
  EXPECT_DOUBLE_EQ(cfg.end_time, 7 * 0.5 * 0.0025);
}

TEST(DeckTime, ZeroStepsAndZeroEndAreAllowed) {
  const std::string head =
      "name: t\nproblem: {type: heat, dimensions: 2}\ngrid: {cells: [10, 10]}\n";
  const Config by_steps = parse(head + "time: {steps: 0}\n");
  EXPECT_EQ(by_steps.steps, 0);
  EXPECT_EQ(by_steps.end_time, 0.0);
  const Config by_end = parse(head + "time: {end: 0}\n");
  EXPECT_EQ(by_end.steps, 0);
  EXPECT_GT(by_end.dt, 0.0);
}

TEST(DeckTime, DiffusivityAndAnisotropicSpacingEnterTheLimit) {
  const Config cfg = parse(
      "name: t\nproblem: {type: heat, dimensions: 3}\n"
      "grid: {cells: [10, 20, 40], length: [1, 1, 2]}\nmaterial: {diffusivity: 0.5}\n"
      "time: {end: 0.1}\n");
  const double limit = 1.0 / (2 * 0.5 * (100.0 + 400.0 + 400.0));
  EXPECT_DOUBLE_EQ(dt_max_of(cfg), limit);
  EXPECT_LE(cfg.dt, 0.9 * limit * (1 + 1e-12));
  EXPECT_NEAR(cfg.dt * cfg.steps, 0.1, 1e-14);
}

TEST(DeckTime, TooLargeDtMessageGivesBothNumbersAndFormula) {
  const DeckError e = parse_error(
      "name: t\nproblem: {type: heat, dimensions: 2}\ngrid: {cells: [10, 10]}\n"
      "time: {end: 0.1, dt: 0.003}\n");
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.column(), 22);
  EXPECT_NE(e.message().find("0.003"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("dt_max = 0.0025"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("1/(2*alpha*sum_d 1/h_d^2)"), std::string::npos) << e.what();
}

// ---- --set overrides ------------------------------------------------------------------------

TEST(DeckOverride, ContractExamples) {
  const Config cfg =
      parse(kBase, {"grid.cells=[32,32,32]", "time.end=0.1", "output.directory=out/run7",
                    "execution.backend=cpu", "boundary.x-.type=neumann"});
  EXPECT_EQ(cfg.cells, (std::array<int, 3>{32, 32, 32}));
  EXPECT_EQ(cfg.end_time, 0.1);
  EXPECT_NEAR(cfg.dt * cfg.steps, 0.1, 1e-14);
  EXPECT_EQ(cfg.output_directory, "out/run7");
  EXPECT_EQ(cfg.backend, BackendKind::Cpu);
  EXPECT_EQ(cfg.boundary[0].type, BoundaryType::Neumann);
  EXPECT_EQ(cfg.boundary[0].value, 0.0);
  EXPECT_EQ(cfg.boundary[1].type, BoundaryType::Dirichlet);
  // The echo shows the deck after overrides.
  EXPECT_EQ(cfg.deck["grid"]["cells"], nlohmann::json({32, 32, 32}));
  EXPECT_EQ(cfg.deck["output"]["directory"], "out/run7");
  EXPECT_EQ(cfg.deck["boundary"]["x-"]["type"], "neumann");
  EXPECT_EQ(cfg.deck["time"]["end"], 0.1);
}

TEST(DeckOverride, LaterOverridesWin) {
  const Config cfg = parse(kBase, {"material.diffusivity=2", "material.diffusivity=0.5"});
  EXPECT_EQ(cfg.diffusivity, 0.5);
}

TEST(DeckOverride, EmptyValueRemovesKey) {
  const Config cfg = parse(kBase, {"time.end=", "time.steps=10"});
  EXPECT_EQ(cfg.steps, 10);
  EXPECT_FALSE(cfg.deck["time"].contains("end"));
}

TEST(DeckOverride, ValueIsYaml) {
  const Config cfg = parse(kBase, {"initial={type: sine, amplitude: 2}", "output.formats=[]"});
  EXPECT_EQ(cfg.initial.type, ShapeType::Sine);
  EXPECT_EQ(cfg.initial.amplitude, 2.0);
  EXPECT_TRUE(cfg.formats.empty());
}

TEST(DeckOverride, BadValueIsReportedAgainstTheOverride) {
  const DeckError e = parse_error(kBase, {"time.end=0.1", "grid.cells=[8, abc, 8]"});
  EXPECT_EQ(e.file(), "--set");
  EXPECT_EQ(e.line(), 2);     // the second override
  EXPECT_EQ(e.column(), 16);  // 'abc' in "grid.cells=[8, abc, 8]"
  EXPECT_NE(e.message().find("grid.cells[1]: expected a positive integer, got 'abc'"),
            std::string::npos);
  EXPECT_NE(e.message().find("(in --set grid.cells=[8, abc, 8])"), std::string::npos);
  EXPECT_EQ(std::string(e.what()).rfind("--set:2:16: ", 0), 0u) << e.what();
}

TEST(DeckOverride, UnknownKeyFromOverride) {
  const DeckError e = parse_error(kBase, {"grid.cels=[8,8,8]"});
  EXPECT_EQ(e.file(), "--set");
  EXPECT_EQ(e.line(), 1);
  EXPECT_EQ(e.column(), 6);
  EXPECT_NE(e.message().find("did you mean 'cells'"), std::string::npos) << e.what();
}

TEST(DeckOverride, YamlErrorInValue) {
  const DeckError e = parse_error(kBase, {"grid.cells=[8, 8"});
  EXPECT_EQ(e.file(), "--set");
  EXPECT_EQ(e.line(), 1);
  EXPECT_GE(e.column(), 12);
}

TEST(DeckOverride, MalformedOverrides) {
  EXPECT_NE(parse_error(kBase, {"time.end"}).message().find("expected key.path=value"),
            std::string::npos);
  const DeckError empty_part = parse_error(kBase, {"time..end=1"});
  EXPECT_EQ(empty_part.column(), 6);
  EXPECT_NE(empty_part.message().find("empty key"), std::string::npos);
  const DeckError into_scalar = parse_error(kBase, {"name.first=x"});
  EXPECT_NE(into_scalar.message().find("cannot set a key inside 'name'"), std::string::npos)
      << into_scalar.what();
}

TEST(DeckOverride, OverridesApplyToEmptyDeck) {
  const Config cfg =
      parse("", {"name=from_set", "problem={type: poisson, dimensions: 2}", "grid.cells=[4, 4]"});
  EXPECT_EQ(cfg.name, "from_set");
  EXPECT_EQ(cfg.cells[1], 4);
}

}  // namespace
}  // namespace heatsolve

namespace heatsolve {
namespace {

// ---- output.catalyst: good forms, paths, the build check ---------------------------------

const std::string kSliceScript =
    (fs::path(HEATSOLVE_SOURCE_DIR) / "postproc" / "catalyst" / "slice.py").string();

DeckFeatures with_catalyst(bool on) {
  DeckFeatures f;
  f.catalyst = on;
  return f;
}

TEST(DeckCatalyst, SingleMappingOrList) {
  const Config one = parse_deck(kBase + "output: {catalyst: {script: " + kSliceScript + "}}\n",
                                "test.yaml", {}, with_catalyst(true));
  ASSERT_EQ(one.catalyst.size(), 1u);
  EXPECT_EQ(one.catalyst[0].path, kSliceScript);
  EXPECT_EQ(one.catalyst[0].every, 1);  // default: every step
  const Config two =
      parse_deck(kBase + "output:\n  catalyst:\n    - {script: " + kSliceScript +
                     ", every: 25}\n    - {script: " + kSliceScript + ", every: 7}\n",
                 "test.yaml", {}, with_catalyst(true));
  ASSERT_EQ(two.catalyst.size(), 2u);
  EXPECT_EQ(two.catalyst[0].every, 25);
  EXPECT_EQ(two.catalyst[1].every, 7);
  EXPECT_TRUE(parse(kBase).catalyst.empty());
}

TEST(DeckCatalyst, EmptyListMeansNoneInAnyBuild) {
  EXPECT_TRUE(parse_deck(kBase + "output: {catalyst: []}\n", "test.yaml", {}, with_catalyst(false))
                  .catalyst.empty());
}

TEST(DeckCatalyst, ScriptPathIsRelativeToTheDeckFile) {
  const std::string deck = (fs::path(HEATSOLVE_SOURCE_DIR) / "inputs" / "x.yaml").string();
  const Config cfg =
      parse_deck(kBase + "output: {catalyst: {script: ../postproc/catalyst/slice.py, every: 2}}\n",
                 deck, {}, with_catalyst(true));
  ASSERT_EQ(cfg.catalyst.size(), 1u);
  EXPECT_EQ(cfg.catalyst[0].path, fs::path(kSliceScript).lexically_normal().string());
}

// Restores the working directory when the test ends.
struct WorkingDirectory {
  fs::path saved = fs::current_path();
  explicit WorkingDirectory(const fs::path& p) { fs::current_path(p); }
  ~WorkingDirectory() { fs::current_path(saved); }
};

TEST(DeckCatalyst, OverridePathIsRelativeToTheWorkingDirectory) {
  const WorkingDirectory here(HEATSOLVE_SOURCE_DIR);
  const std::string deck = (fs::path(HEATSOLVE_SOURCE_DIR) / "inputs" / "x.yaml").string();
  const Config cfg = parse_deck(
      kBase, deck, {"output.catalyst={script: postproc/catalyst/slice.py}"}, with_catalyst(true));
  ASSERT_EQ(cfg.catalyst.size(), 1u);
  EXPECT_EQ(cfg.catalyst[0].path, "postproc/catalyst/slice.py");
}

TEST(DeckCatalyst, MissingScriptFileIsRefusedAtItsNode) {
  try {
    parse_deck(kBase + "output: {catalyst: {script: no_such_script.py, every: 2}}\n", "test.yaml",
               {}, with_catalyst(true));
    FAIL() << "accepted";
  } catch (const DeckError& e) {
    EXPECT_NE(e.message().find("output.catalyst.script: no such file 'no_such_script.py'"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.line(), 5);
    EXPECT_EQ(e.column(), 29);
  }
}

TEST(DeckCatalyst, RefusedByABuildWithoutCatalyst) {
  try {
    parse_deck(kBase + "output: {catalyst: {script: " + kSliceScript + "}}\n", "test.yaml", {},
               with_catalyst(false));
    FAIL() << "accepted";
  } catch (const DeckError& e) {
    EXPECT_NE(e.message().find("built without ParaView Catalyst"), std::string::npos) << e.what();
    EXPECT_EQ(e.line(), 5);
    EXPECT_EQ(e.column(), 10);  // the `catalyst` key
    EXPECT_EQ(std::string(e.what()).rfind("test.yaml:5:10: ", 0), 0u) << e.what();
  }
}

TEST(DeckCatalyst, ThisBuildSaysWhetherItHasCatalyst) {
#ifdef HEATSOLVE_HAVE_CATALYST
  EXPECT_TRUE(DeckFeatures::of_this_build().catalyst);
#else
  EXPECT_FALSE(DeckFeatures::of_this_build().catalyst);
#endif
}

}  // namespace
}  // namespace heatsolve
