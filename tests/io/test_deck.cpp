// Deck parsing and validation: every shipped deck parses, every kind of bad deck is rejected
// with a message that points at the offending line/column, overrides, time resolution.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "io/deck.hpp"

namespace heatsolve {
namespace {

namespace fs = std::filesystem;

// Four lines; tests append sections from line 5 on.
const std::string kBase =
    "name: t\n"
    "problem: {type: heat, dimensions: 3}\n"
    "grid: {cells: [8, 8, 8]}\n"
    "time: {end: 0.01}\n";

const std::string kBase2D =
    "name: t\n"
    "problem: {type: heat, dimensions: 2}\n"
    "grid: {cells: [8, 8]}\n"
    "time: {end: 0.01}\n";

Config parse(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return parse_deck(text, "test.yaml", overrides);
}

// Parses `text`, expecting a DeckError; returns it.
DeckError parse_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    parse(text, overrides);
  } catch (const DeckError& e) {
    return e;
  }
  ADD_FAILURE() << "deck was accepted:\n" << text;
  return DeckError("", 0, 0, "");
}

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

// ---- Bad decks ------------------------------------------------------------------------------

struct BadDeck {
  const char* label;
  std::string text;
  const char* fragment;  // expected in the message
  int line;
  int column;  // 0: not checked
};

std::ostream& operator<<(std::ostream& os, const BadDeck& b) {
  return os << b.label;
}

class BadDeckTest : public ::testing::TestWithParam<BadDeck> {};

TEST_P(BadDeckTest, IsRejectedAtTheRightPlace) {
  const BadDeck& b = GetParam();
  const DeckError e = parse_error(b.text);
  EXPECT_EQ(e.file(), "test.yaml");
  EXPECT_NE(e.message().find(b.fragment), std::string::npos)
      << "message: " << e.message() << "\nexpected fragment: " << b.fragment;
  EXPECT_EQ(e.line(), b.line) << e.what();
  if (b.column > 0) {
    EXPECT_EQ(e.column(), b.column) << e.what();
  }
  const std::string prefix = "test.yaml:" + std::to_string(e.line()) + ":";
  EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
}

const std::string k2DHead = "name: t\nproblem: {type: heat, dimensions: 2}\n";

const BadDeck kBadDecks[] = {
    {"unknown_root_key", kBase + "materail: {diffusivity: 1}\n",
     "unknown key 'materail' in the deck (did you mean 'material'?)", 5, 1},
    {"unknown_section_key", kBase + "material: {difusivity: 2}\n",
     "unknown key 'difusivity' in 'material' (did you mean 'diffusivity'?)", 5, 12},
    {"cells_not_integer",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, abc, 8]}\n"
     "time: {end: 1}\n",
     "grid.cells[1]: expected a positive integer, got 'abc'", 3, 19},
    {"cells_fractional",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 2.5]}\n"
     "time: {end: 1}\n",
     "grid.cells[2]: expected a positive integer, got '2.5'", 3, 22},
    {"cells_zero",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [0, 8, 8]}\n"
     "time: {end: 1}\n",
     "expected a positive integer, got '0'", 3, 16},
    {"missing_name", "problem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n",
     "missing required key 'name'", 1, 1},
    {"missing_cells",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {length: [1, 1, 1]}\n"
     "time: {end: 1}\n",
     "missing required key 'grid.cells'", 3, 7},
    {"missing_problem_type", "name: t\nproblem:\n  dimensions: 3\ngrid: {cells: [8, 8, 8]}\n",
     "missing required key 'problem.type'", 3, 3},
    {"missing_time_for_heat",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n",
     "missing required key 'time'", 1, 1},
    {"cells_count_mismatch",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8]}\ntime: {end: 1}\n",
     "grid.cells: expected 3 entries", 3, 15},
    {"too_many_cells",
     "name: t\nproblem: {type: heat, dimensions: 3}\n"
     "grid: {cells: [100000, 100000, 100000]}\ntime: {end: 1}\n",
     "is too large", 3, 15},
    {"zero_length",
     "name: t\nproblem: {type: heat, dimensions: 3}\n"
     "grid: {cells: [8, 8, 8], length: [1, 0, 1]}\ntime: {end: 1}\n",
     "grid.length[1]: must be positive, got 0", 3, 38},
    {"negative_diffusivity", kBase + "material: {diffusivity: -1}\n",
     "material.diffusivity: must be positive", 5, 25},
    {"nan_diffusivity", kBase + "material: {diffusivity: .nan}\n",
     "material.diffusivity: expected a finite number, got '.nan'", 5, 25},
    {"inf_origin",
     "name: t\nproblem: {type: heat, dimensions: 3}\n"
     "grid: {cells: [8, 8, 8], origin: [0, -.inf, 0]}\ntime: {end: 1}\n",
     "expected a finite number, got '-.inf'", 3, 38},
    {"quoted_number", kBase + "material: {diffusivity: \"2\"}\n",
     "expected a number, got the quoted string \"2\"", 5, 25},
    {"zero_tolerance", kBase + "solver: {tolerance: 0}\n", "solver.tolerance: must be positive", 5,
     21},
    {"bad_problem_type",
     "name: t\nproblem: {type: wave, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n",
     "problem.type: unknown value 'wave'; valid values: heat, poisson", 2, 17},
    {"four_dimensions", "name: t\nproblem: {type: heat, dimensions: 4}\ngrid: {cells: [8, 8, 8]}\n",
     "problem.dimensions: expected 2 or 3, got 4", 2, 35},
    {"periodic_one_side", kBase + "boundary: {x-: {type: periodic}}\n",
     "periodic must be set on both x- and x+, but x+ is dirichlet", 5, 16},
    {"periodic_all_but_one", kBase + "boundary: {all: {type: periodic}, y+: {type: dirichlet}}\n",
     "boundary.y-: periodic must be set on both y- and y+", 5, 17},
    {"z_face_in_2d",
     k2DHead + "grid: {cells: [8, 8]}\ntime: {end: 1}\nboundary: {z-: {type: dirichlet}}\n",
     "boundary.z-: a 2D problem has no z faces", 5, 12},
    {"face_key_for_wrong_type", kBase + "boundary: {all: {type: neumann, value: 1}}\n",
     "unknown key 'value' in 'boundary.all'; valid keys: type, flux", 5, 33},
    {"unknown_face", kBase + "boundary: {x_: {type: neumann}}\n",
     "unknown key 'x_' in 'boundary' (did you mean 'x-'?)", 5, 12},
    {"dt_too_large",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, dt: 0.01}\n",
     "time.dt: 0.01 exceeds the stability limit dt_max = 0.00260417", 4, 20},
    {"end_and_steps",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, steps: 10}\n",
     "give either 'end' or 'steps', not both", 4, 16},
    {"neither_end_nor_steps",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {dt: auto}\n",
     "missing required key 'time.end' (or 'time.steps')", 4, 7},
    {"negative_steps",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {steps: -3}\n",
     "time.steps: expected a non-negative integer, got '-3'", 4, 15},
    {"safety_above_one",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, safety: 1.5}\n",
     "time.safety: must be in (0, 1], got 1.5", 4, 24},
    {"unknown_kernel", kBase + "execution: {kernel: fast}\n",
     "execution.kernel: unknown value 'fast'; valid values: auto, naive, shared", 5, 21},
    {"misspelt_kernel", kBase + "execution: {kernel: nondivergant}\n",
     "(did you mean 'nondivergent'?)", 5, 21},
    {"bad_walltime", kBase + "execution: {walltime: \"1:30\"}\n",
     "execution.walltime: expected a duration \"HH:MM:SS\"", 5, 23},
    {"walltime_minutes_over_59", kBase + "execution: {walltime: \"01:75:00\"}\n",
     "expected a duration \"HH:MM:SS\"", 5, 23},
    {"dt_word",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, dt: automatic}\n",
     "time.dt: expected 'auto' or a positive number, got 'automatic'", 4, 20},
    {"block_word", kBase + "execution: {block: big}\n",
     "execution.block: expected 'auto' or a list of 3 positive integers, got 'big'", 5, 20},
    // Blocks the CUDA build does not compile for the variant, dimension and precision
    // (core/stencil_policies.hpp): at the block key, with the compiled shapes listed.
    {"block_not_compiled", kBase + "execution: {kernel: naive, block: [48, 3, 1]}\n",
     "execution.block: block 48x3x1 is not compiled for stencil variant 'naive' in 3D double "
     "(compiled: 32x4x4, ",
     5, 28},
    {"block_not_compiled_2d",
     kBase2D + "execution: {precision: float, kernel: 2.5d-register, block: [64, 4, 1]}\n",
     "is not compiled for stencil variant '2.5d-register' in 2D float (compiled: 256x1x0/pd6/vx2",
     5, 54},
    {"block_of_the_other_precision",
     kBase + "execution: {precision: double, kernel: 2.5d-tma, block: [512, 1, 32]}\n",
     "block 512x1x32 is not compiled for stencil variant '2.5d-tma' in 3D double", 5, 50},
    {"zero_time_block", kBase + "execution: {time_block: 0}\n",
     "execution.time_block: expected a positive integer, got '0'", 5, 25},
    {"decomposition_count", kBase + "execution: {decomposition: [2, 2]}\n",
     "execution.decomposition: expected 3 entries", 5, 28},
    {"bad_bool", kBase + "execution: {overlap: maybe}\n",
     "execution.overlap: expected true or false, got 'maybe'", 5, 22},
    {"unknown_backend", kBase + "execution: {backend: gpu}\n", "valid values: auto, cpu, cuda", 5,
     22},
    {"unknown_format", kBase + "output: {formats: [hdf5, csv]}\n",
     "output.formats[1]: unknown value 'csv'; valid values: hdf5, vtk", 5, 26},
    {"duplicate_format", kBase + "output: {formats: [vtk, vtk]}\n",
     "output.formats[1]: 'vtk' is listed twice", 5, 25},
    {"formats_not_list", kBase + "output: {formats: hdf5}\n",
     "output.formats: expected a list, got 'hdf5'", 5, 19},
    {"negative_every", kBase + "output: {every: -1}\n",
     "output.every: expected a non-negative integer", 5, 17},
    {"initial_none", kBase + "initial: {type: none}\n",
     "initial.type: unknown value 'none'; valid values: uniform, gaussian, box, sine", 5, 17},
    {"gaussian_missing_center", kBase + "initial: {type: gaussian, amplitude: 1, width: 0.1}\n",
     "missing required key 'initial.center'", 5, 10},
    {"gaussian_zero_width",
     kBase + "source: {type: gaussian, amplitude: 1, center: [0, 0, 0], width: 0}\n",
     "source.width: must be positive", 5, 66},
    {"key_for_other_shape", kBase + "initial: {type: uniform, amplitude: 1}\n",
     "unknown key 'amplitude' in 'initial'; valid keys: type, value", 5, 26},
    {"inverted_box",
     kBase + "initial: {type: box, value: 1, lower: [0.5, 0, 0], upper: [0.2, 1, 1]}\n",
     "initial.upper: upper corner must exceed the lower one on every axis", 5, 60},
    {"center_count",
     k2DHead + "grid: {cells: [8, 8]}\ntime: {end: 1}\n"
               "source: {type: gaussian, amplitude: 1, center: [0, 0, 0], width: 1}\n",
     "source.center: expected 2 entries", 5, 48},
    {"damping_above_one", kBase + "solver: {anderson: {depth: 3, damping: 2}}\n",
     "solver.anderson.damping: must be in (0, 1], got 2", 5, 40},
    {"unknown_method", kBase + "solver: {method: gauss-seidel}\n",
     "solver.method: unknown value 'gauss-seidel'; valid values: jacobi, anderson", 5, 18},
    {"duplicate_key", kBase + "name: u\n", "duplicate key 'name' (first given at line 1)", 5, 1},
    {"section_not_a_map", kBase + "material: 3\n", "material: expected a mapping, got '3'", 5, 11},
    {"deck_not_a_map", "- a\n- b\n", "the deck: expected a mapping of sections, got a list", 1, 1},
    {"bad_name", "name: a/b\nproblem: {type: heat, dimensions: 3}\n",
     "name: 'a/b' may contain only letters", 1, 7},
    {"empty_value", kBase + "material: {diffusivity: }\n",
     "material.diffusivity: expected a number, got an empty value", 5, 12},
    {"yaml_syntax_error", "name: t\nproblem: {type: heat\ngrid: [\n", "end of map flow not found",
     3, 5},
    {"empty_block_value", kBase + "material:\n  diffusivity:\nsource: {type: none}\n",
     "material.diffusivity: expected a number, got an empty value", 6, 3},
    {"empty_section_missing_type", kBase + "initial:\n", "missing required key 'initial.type'", 5,
     1},
    {"zero_anderson_every", kBase + "solver: {anderson: {every: 0}}\n",
     "solver.anderson.every: expected a positive integer, got '0'", 5, 28},
    {"negative_pre_sweeps", kBase + "solver: {multigrid: {pre_sweeps: -1}}\n",
     "solver.multigrid.pre_sweeps: expected a non-negative integer, got '-1'", 5, 34},
    {"too_many_post_sweeps", kBase + "solver: {multigrid: {post_sweeps: 65}}\n",
     "solver.multigrid.post_sweeps: 65 is too large (at most 64)", 5, 35},
    {"unknown_smoother", kBase + "solver: {multigrid: {smoother: gauss-seidel}}\n",
     "solver.multigrid.smoother: unknown value 'gauss-seidel'; valid values: jacobi, chebyshev", 5,
     32},
    {"unknown_cycle", kBase + "solver: {multigrid: {cycle: w}}\n",
     "solver.multigrid.cycle: unknown value 'w'; valid values: v, f, fmg", 5, 29},
    {"mixed_precision_explicit_heat", kBase + "execution: {precision: mixed}\n",
     "execution.precision: mixed solves multigrid's correction equation in float: it applies to "
     "solver.method multigrid or mg-cg (poisson) and to implicit heat steps, not to explicit "
     "heat steps",
     5, 24},
    {"mixed_precision_jacobi",
     "name: t\nproblem: {type: poisson, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "solver: {method: anderson}\nexecution: {backend: cpu, precision: mixed}\n",
     "not to solver.method anderson; use float or double", 5, 38},
    {"unknown_precision", kBase + "execution: {precision: half}\n",
     "execution.precision: unknown value 'half'; valid values: float, double, mixed", 5, 24},
    {"unknown_multigrid_key", kBase + "solver: {multigrid: {cylce: v}}\n",
     "unknown key 'cylce' in 'solver.multigrid' (did you mean 'cycle'?)", 5, 22},
    {"negative_coarse_sweeps", kBase + "solver: {multigrid: {coarse_sweeps: -2}}\n",
     "solver.multigrid.coarse_sweeps: expected a non-negative integer, got '-2'", 5, 37},
    {"no_sweeps", kBase + "solver: {multigrid: {pre_sweeps: 0, post_sweeps: 0}}\n",
     "solver.multigrid: pre_sweeps + post_sweeps must be at least 1", 5, 21},
    {"zero_coarse_tolerance", kBase + "solver: {multigrid: {coarse_tolerance: 0}}\n",
     "solver.multigrid.coarse_tolerance: must be in (0, 1], got 0", 5, 40},
    {"negative_agglomerate_below", kBase + "solver: {multigrid: {agglomerate_below: -1}}\n",
     "solver.multigrid.agglomerate_below: expected a non-negative integer", 5, 41},
    {"word_agglomerate_below", kBase + "solver: {multigrid: {agglomerate_below: some}}\n",
     "solver.multigrid.agglomerate_below: expected 'auto' or a non-negative integer", 5, 41},
    {"fused_not_boolean", kBase + "solver: {multigrid: {fused: 3}}\n",
     "solver.multigrid.fused: expected true or false, got '3'", 5, 29},
    {"unknown_scheme",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, scheme: backward-euler}\n",
     "time.scheme: unknown value 'backward-euler'; valid values: explicit, implicit-euler, "
     "crank-nicolson",
     4, 24},
    {"implicit_with_jacobi",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, scheme: implicit-euler}\nsolver: {tolerance: 1e-6, method: jacobi}\n",
     "solver.method: time.scheme implicit-euler solves each step by multigrid: expected "
     "'multigrid' or 'mg-cg', got 'jacobi'",
     5, 35},
    {"crank_nicolson_with_anderson",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 1, scheme: crank-nicolson}\nsolver:\n  method: anderson\n",
     "time.scheme crank-nicolson solves each step by multigrid", 6, 11},
    // output.catalyst: the form is checked before the build's Catalyst and the files.
    {"catalyst_unknown_key", kBase + "output: {catalyst: {script: a.py, evry: 2}}\n",
     "unknown key 'evry' in 'output.catalyst' (did you mean 'every'?)", 5, 35},
    {"catalyst_list_entry_unknown_key",
     kBase + "output:\n  catalyst:\n    - {script: a.py, every: 2, colour: red}\n",
     "unknown key 'colour' in 'output.catalyst[0]'", 7, 32},
    {"catalyst_every_zero", kBase + "output: {catalyst: [{script: a.py, every: 0}]}\n",
     "output.catalyst[0].every: expected a positive integer, got '0'", 5, 43},
    {"catalyst_every_negative", kBase + "output: {catalyst: {script: a.py, every: -3}}\n",
     "output.catalyst.every: expected a positive integer, got '-3'", 5, 42},
    {"catalyst_missing_script", kBase + "output: {catalyst: {every: 2}}\n",
     "missing required key 'output.catalyst.script'", 5, 20},
    {"catalyst_second_entry_missing_script",
     kBase + "output:\n  catalyst:\n    - {script: a.py}\n    - {every: 5}\n",
     "missing required key 'output.catalyst[1].script'", 8, 7},
    {"catalyst_not_a_mapping", kBase + "output: {catalyst: slice.py}\n",
     "output.catalyst: expected a mapping {script: file.py, every: N} or a list of them, got "
     "'slice.py'",
     5, 20},
    {"catalyst_entry_not_a_mapping", kBase + "output: {catalyst: [slice.py]}\n",
     "output.catalyst[0]: expected a mapping {script: file.py, every: N}, got 'slice.py'", 5, 21},
    {"catalyst_empty_script", kBase + "output: {catalyst: {script: ''}}\n",
     "output.catalyst.script: expected a non-empty string", 5, 29},
    // YAML a deck does not use (issue #31): tags other than !!str, a second document.
    {"python_object_tag", kBase + "material: {diffusivity: !!python/object:os.system 1}\n",
     "YAML tag '!!python/object:os.system' is not allowed", 5, 25},
    {"float_tag", kBase + "material: {diffusivity: !!float 2}\n",
     "YAML tag '!!float' is not allowed", 5, 25},
    {"local_tag_on_a_section", kBase + "material: !thing {diffusivity: 2}\n",
     "YAML tag '!thing' is not allowed", 5, 11},
    {"second_document", kBase + "---\nname: u\n", "a second YAML document", 6, 1},
    // yaml-cpp 0.7's LoadAll looped forever on this (found by scripts/fuzz.sh).
    {"leading_comma", "," + kBase, "invalid YAML at ',': a deck is a mapping of keys", 1, 1},
    // Regions that set no cell, origins that lose the field's precision, long names.
    {"box_source_outside_the_domain",
     kBase + "source: {type: box, value: 1, lower: [2, 0, 0], upper: [3, 1, 1]}\n",
     "source: the box [2, 3] on the x axis holds no cell centre", 5, 38},
    {"box_initial_between_centres",
     kBase + "initial: {type: box, value: 1, lower: [0, 0.07, 0], upper: [1, 0.18, 1]}\n",
     "initial: the box [0.07, 0.18] on the y axis holds no cell centre", 5, 39},
    {"origin_too_far_for_the_cells",
     "name: t\nproblem: {type: heat, dimensions: 3}\n"
     "grid: {cells: [64, 8, 8], origin: [1e17, 0, 0]}\ntime: {end: 0.01}\n",
     "grid.origin[0]: 1e+17 is too far from 0 for cells of size 0.015625", 3, 36},
    {"name_too_long",
     "name: "
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaa"
     "aaaaa\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\ntime: {end: 0.01}\n",
     "name: 201 characters is too long (at most 200", 1, 7},
    // Materials (docs/deck.md "Materials").
    {"material_zero_conductivity",
     kBase + "material: {conductivity: 0, density: 1, specific_heat: 1}\n",
     "material.conductivity: must be positive, got 0", 5, 26},
    {"material_nan_density",
     kBase + "material: {conductivity: 1, density: .nan, specific_heat: 1}\n",
     "material.density: expected a finite number, got '.nan'", 5, 38},
    {"material_inf_specific_heat",
     kBase + "material: {conductivity: 1, density: 1, specific_heat: .inf}\n",
     "material.specific_heat: expected a finite number, got '.inf'", 5, 56},
    {"material_negative_density",
     kBase + "material: {conductivity: 1, density: -2, specific_heat: 1}\n",
     "material.density: must be positive, got -2", 5, 38},
    {"diffusivity_with_conductivity", kBase + "material: {diffusivity: 1, conductivity: 2}\n",
     "material: give either 'diffusivity' (k/(rho cp), today's meaning) or 'conductivity' with "
     "'density' and 'specific_heat', not both",
     5, 28},
    {"conductivity_then_diffusivity",
     kBase + "material: {conductivity: 2, density: 1, specific_heat: 1, diffusivity: 1}\n",
     "not both ('conductivity' and 'diffusivity' are given)", 5, 59},
    {"diffusivity_with_density", kBase + "material: {density: 3, diffusivity: 1}\n",
     "not both ('density' and 'diffusivity' are given)", 5, 24},
    {"density_without_conductivity", kBase + "material: {density: 1, specific_heat: 1}\n",
     "missing required key 'material.conductivity' ('density' needs it)", 5, 11},
    {"heat_missing_specific_heat", kBase + "material: {conductivity: 1, density: 1}\n",
     "missing required key 'material.specific_heat' (a heat problem with material.conductivity "
     "needs density and specific_heat",
     5, 11},
    {"materials_not_a_list", kBase + "materials: {region: {box: {}}}\n",
     "materials: expected a list of entries", 5, 12},
    {"materials_entry_not_a_map", kBase + "materials: [box]\n",
     "materials[0]: expected a mapping {region: {...}", 5, 13},
    {"material_region_missing", kBase + "materials: [{conductivity: 2}]\n",
     "missing required key 'materials[0].region'", 5, 13},
    {"material_region_unknown_kind",
     kBase + "materials: [{region: {sphre: {center: [0.5, 0.5, 0.5], radius: 0.2}}, "
             "conductivity: 2}]\n",
     "unknown region kind 'sphre' in 'materials[0].region' (did you mean 'sphere'?); valid "
     "kinds: box, sphere, cylinder, file",
     5, 23},
    {"material_region_two_kinds",
     kBase + "materials: [{region: {box: {lower: [0, 0, 0], upper: [1, 1, 1]}, sphere: {center: "
             "[0.5, 0.5, 0.5], radius: 0.1}}, conductivity: 2}]\n",
     "materials[0].region: give one region kind, not both 'box' and 'sphere'", 5, 66},
    {"material_region_no_kind", kBase + "materials: [{region: {}, conductivity: 2}]\n",
     "materials[0].region: expected one region kind (box, sphere, cylinder, file)", 5, 22},
    {"material_region_not_a_map", kBase + "materials: [{region: box, conductivity: 2}]\n",
     "materials[0].region: expected a mapping with one region kind", 5, 22},
    {"material_unknown_entry_key",
     kBase + "materials: [{region: {box: {lower: [0, 0, 0], upper: [1, 1, 1]}}, conductvity: "
             "2}]\n",
     "unknown key 'conductvity' in 'materials[0]' (did you mean 'conductivity'?)", 5, 67},
    {"material_unknown_box_key",
     kBase + "materials: [{region: {box: {lowr: [0, 0, 0], upper: [1, 1, 1]}}, conductivity: "
             "2}]\n",
     "unknown key 'lowr' in 'materials[0].region.box' (did you mean 'lower'?)", 5, 29},
    {"material_unknown_sphere_key",
     kBase + "materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], raduis: 0.2}}, "
             "conductivity: 2}]\n",
     "unknown key 'raduis' in 'materials[0].region.sphere' (did you mean 'radius'?)", 5, 57},
    {"material_sets_nothing",
     kBase + "materials: [{region: {box: {lower: [0, 0, 0], upper: [1, 1, 1]}}}]\n",
     "materials[0]: sets no property (give conductivity, density or specific_heat)", 5, 13},
    {"material_region_no_cell_centre",
     kBase + "materials: [{region: {box: {lower: [0.13, 0, 0], upper: [0.18, 1, 1]}}, "
             "conductivity: 2}]\n",
     "materials[0].region.box: holds no cell centre of the grid", 5, 23},
    {"material_sphere_outside_grid",
     kBase + "materials:\n  - {region: {box: {lower: [0, 0, 0], upper: [1, 1, 1]}}, "
             "conductivity: 2}\n  - {region: {sphere: {center: [2, 2, 2], radius: 0.5}}, "
             "conductivity: 3}\n",
     "materials[1].region.sphere: holds no cell centre of the grid", 7, 15},
    {"material_box_inverted",
     kBase + "materials: [{region: {box: {lower: [0.5, 0, 0], upper: [0.2, 1, 1]}}, "
             "conductivity: 2}]\n",
     "materials[0].region.box.upper: upper corner must exceed the lower one on every axis, but "
     "upper[0] = 0.2 <= lower[0] = 0.5",
     5, 57},
    {"material_sphere_zero_radius",
     kBase + "materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], radius: 0}}, "
             "conductivity: 2}]\n",
     "materials[0].region.sphere.radius: must be positive, got 0", 5, 65},
    {"material_sphere_center_count",
     kBase + "materials: [{region: {sphere: {center: [0.5, 0.5], radius: 0.1}}, conductivity: "
             "2}]\n",
     "materials[0].region.sphere.center: expected 3 entries (one per dimension; "
     "problem.dimensions is 3), got 2",
     5, 40},
    {"material_region_zero_conductivity",
     kBase + "materials: [{region: {box: {lower: [0, 0, 0], upper: [1, 1, 1]}}, conductivity: "
             "0}]\n",
     "materials[0].conductivity: must be positive, got 0", 5, 81},
    {"material_region_negative_density",
     kBase + "material: {conductivity: 1, density: 1, specific_heat: 1}\nmaterials: [{region: "
             "{box: {lower: [0, 0, 0], upper: [1, 1, 1]}}, density: -3}]\n",
     "materials[0].density: must be positive, got -3", 6, 76},
    {"material_region_nan_specific_heat",
     kBase + "material: {conductivity: 1, density: 1, specific_heat: 1}\nmaterials: [{region: "
             "{box: {lower: [0, 0, 0], upper: [1, 1, 1]}}, specific_heat: .nan}]\n",
     "materials[0].specific_heat: expected a finite number, got '.nan'", 6, 82},
    {"material_region_density_with_diffusivity",
     kBase + "material: {diffusivity: 2}\nmaterials: [{region: {box: {lower: [0, 0, 0], upper: "
             "[1, 1, 1]}}, density: 2}]\n",
     "materials[0].density: regions set density and specific_heat only when 'material' gives "
     "conductivity, density and specific_heat",
     6, 67},
    {"material_cylinder_axis_x_in_2d",
     kBase2D + "materials: [{region: {cylinder: {axis: x, center: [0.5, 0.5], radius: 0.1}}, "
               "conductivity: 2}]\n",
     "materials[0].region.cylinder.axis: a 2D cylinder is a disk: its axis must be z, got 'x'", 5,
     40},
    {"material_cylinder_center_count",
     kBase + "materials: [{region: {cylinder: {axis: y, center: [0.5, 0.5, 0.5], radius: 0.1}}, "
             "conductivity: 2}]\n",
     "materials[0].region.cylinder.center: expected 2 entries (the axis' position in x, z), got 3",
     5, 51},
    {"material_cylinder_unknown_axis",
     kBase + "materials: [{region: {cylinder: {axis: w, center: [0.5, 0.5], radius: 0.1}}, "
             "conductivity: 2}]\n",
     "materials[0].region.cylinder.axis: unknown value 'w'; valid values: x, y, z", 5, 40},
    {"material_cylinder_missing_axis",
     kBase + "materials: [{region: {cylinder: {center: [0.5, 0.5], radius: 0.1}}, conductivity: "
             "2}]\n",
     "missing required key 'materials[0].region.cylinder.axis'", 5, 33},
    {"material_box_2d_three_entries",
     kBase2D + "materials: [{region: {box: {lower: [0, 0, 0], upper: [1, 1]}}, conductivity: 2}]\n",
     "materials[0].region.box.lower: expected 2 entries (one per dimension; problem.dimensions "
     "is 2), got 3",
     5, 36},
    {"material_file_needs_property",
     kBase + "materials: [{region: {file: {path: k.h5, dataset: kappa}}}]\n",
     "missing required key 'materials[0].region.file.property' (the dataset's name 'kappa' is "
     "not a property: conductivity, density, specific_heat)",
     5, 29},
    {"material_file_unknown_property",
     kBase + "materials: [{region: {file: {path: k.h5, dataset: k, property: conductivty}}}]\n",
     "materials[0].region.file.property: unknown value 'conductivty' (did you mean "
     "'conductivity'?)",
     5, 64},
    {"material_file_unknown_key",
     kBase + "materials: [{region: {file: {path: k.h5, datset: conductivity}}}]\n",
     "unknown key 'datset' in 'materials[0].region.file' (did you mean 'dataset'?)", 5, 42},
    {"material_file_missing_path",
     kBase + "materials: [{region: {file: {dataset: conductivity}}}]\n",
     "missing required key 'materials[0].region.file.path'", 5, 29},
    {"material_file_with_value",
     kBase + "material: {conductivity: 1, density: 1, specific_heat: 1}\nmaterials: [{region: "
             "{file: {path: k.h5, dataset: density}}, conductivity: 3}]\n",
     "materials[0].conductivity: a file region takes its values from its dataset", 6, 62},
    {"material_dt_above_cell_limit",
     "name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cells: [8, 8, 8]}\n"
     "time: {end: 0.01, dt: 0.002}\n"
     "materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], radius: 0.2}}, conductivity: 10}]\n",
     "time.dt: 0.002 exceeds the stability limit dt_max = 0.000440", 4, 23},
    // Convective and heat-flux faces.
    {"convective_negative_h", kBase + "boundary: {x+: {type: convective, h: -1, ambient: 300}}\n",
     "boundary.x+.h: must not be negative, got -1", 5, 38},
    {"convective_missing_ambient", kBase + "boundary: {all: {type: convective, h: 5}}\n",
     "missing required key 'boundary.all.ambient'", 5, 17},
    {"convective_missing_h", kBase + "boundary: {y-: {type: convective, ambient: 5}}\n",
     "missing required key 'boundary.y-.h'", 5, 16},
    {"convective_misspelt", kBase + "boundary: {x-: {type: convection, h: 1, ambient: 0}}\n",
     "boundary.x-.type: unknown value 'convection' (did you mean 'convective'?)", 5, 23},
    {"convective_on_periodic_axis",
     kBase + "boundary: {all: {type: periodic}, x-: {type: convective, h: 1, ambient: 0}}\n",
     "boundary.x-: a convective face cannot lie on a periodic axis (x+ is periodic)", 5, 39},
    {"heat_flux_on_periodic_axis",
     kBase + "boundary: {z-: {type: periodic}, z+: {type: heat_flux, value: 5}}\n",
     "boundary.z+: a heat_flux face cannot lie on a periodic axis (z- is periodic)", 5, 38},
    {"heat_flux_wrong_key", kBase + "boundary: {x-: {type: heat_flux, flux: 5}}\n",
     "unknown key 'flux' in 'boundary.x-'", 5, 34},
};

INSTANTIATE_TEST_SUITE_P(Table, BadDeckTest, ::testing::ValuesIn(kBadDecks),
                         [](const ::testing::TestParamInfo<BadDeck>& info) {
                           return std::string(info.param.label);
                         });

TEST(Deck, YamlSyntaxErrorBecomesDeckError) {
  const DeckError e = parse_error("name: t\nproblem: {type: heat, dimensions: 3\n  grid: [1\n");
  EXPECT_EQ(e.file(), "test.yaml");
  EXPECT_GE(e.line(), 2);
  EXPECT_GE(e.column(), 1);
  EXPECT_FALSE(e.message().empty());
}

TEST(Deck, MissingFileNamesThePath) {
  const std::string path = "/nonexistent/dir/deck.yaml";
  try {
    load_deck(path);
    FAIL() << "missing file accepted";
  } catch (const DeckError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), 0);
    EXPECT_EQ(e.column(), 0);
    EXPECT_EQ(std::string(e.what()).rfind(path + ": cannot read deck", 0), 0u) << e.what();
  }
}

TEST(Deck, DirectoryIsNotADeck) {
  try {
    load_deck(HEATSOLVE_SOURCE_DIR);
    FAIL() << "directory accepted";
  } catch (const DeckError& e) {
    EXPECT_NE(e.message().find("cannot read deck"), std::string::npos);
  }
}

TEST(Deck, NonRegularFileIsRefusedWithoutBlocking) {
  // A FIFO would block the read until someone writes to it.
  const fs::path fifo =
      fs::temp_directory_path() / ("heatsolve_deck_fifo_" + std::to_string(::getpid()));
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    load_deck(fifo.string());
    ADD_FAILURE() << "a FIFO accepted";
  } catch (const DeckError& e) {
    EXPECT_NE(e.message().find("not a regular file (a FIFO or pipe)"), std::string::npos)
        << e.what();
  }
  fs::remove(fifo);
}

TEST(Deck, StrTagAndAnOriginWithinPrecisionAreAccepted) {
  const Config cfg = parse(
      "name: !!str t\nproblem: {type: heat, dimensions: 3}\n"
      "grid: {cells: [64, 8, 8], origin: [6.4e6, 0, 0], length: [64, 1, 1]}\n"
      "time: {end: 0.01}\nsource: {type: box, value: 1, lower: [6.4e6, 0, 0], "
      "upper: [6.4000005e6, 1, 1]}\n---\n");
  EXPECT_EQ(cfg.name, "t");
  EXPECT_EQ(cfg.origin[0], 6.4e6);
}

TEST(Deck, DeepNestingSaysSo) {
  const DeckError e =
      parse_error(kBase + "x: " + std::string(5000, '[') + std::string(5000, ']') + "\n");
  EXPECT_NE(e.message().find("nested more than"), std::string::npos) << e.what();
}

TEST(Deck, DidYouMeanOnlyForCloseKeys) {
  const DeckError close =
      parse_error("name: t\nproblem: {type: heat, dimensions: 3}\ngrid: {cels: [8, 8, 8]}\n");
  EXPECT_NE(close.message().find("(did you mean 'cells'?)"), std::string::npos) << close.what();
  const DeckError far = parse_error(kBase + "output: {zzzzzzzz: 1}\n");
  EXPECT_EQ(far.message().find("did you mean"), std::string::npos) << far.what();
  EXPECT_NE(far.message().find("valid keys: directory, every, formats"), std::string::npos);
}

TEST(Deck, ErrorWhatFormat) {
  EXPECT_STREQ(DeckError("a.yaml", 3, 7, "bad").what(), "a.yaml:3:7: bad");
  EXPECT_STREQ(DeckError("a.yaml", 0, 0, "gone").what(), "a.yaml: gone");
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
