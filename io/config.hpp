// The validated run configuration: what a deck means once parsing and validation succeeded.
// Solvers consume only this; nothing downstream sees YAML.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/boundary.hpp"
#include "core/execution.hpp"
#include "core/grid.hpp"
#include "core/multigrid.hpp"

namespace heatsolve {

enum class ProblemType { Heat, Poisson };
enum class ShapeType { None, Uniform, Gaussian, Box, Sine };
enum class Precision { Float, Double };
enum class SolverMethod { Jacobi, Anderson, Multigrid, MultigridCG };
// Heat time stepping: forward Euler, or theta = 1 / theta = 1/2 implicit steps solved by
// multigrid.
enum class TimeScheme { Explicit, ImplicitEuler, CrankNicolson };
enum class HaloMode { Auto, Staged, CudaAware, Ipc };

// One in-situ (ParaView Catalyst) pipeline: a Catalyst v1 Python script run every `every`
// steps or iterations (and at the last one).
struct CatalystScript {
  std::string path;  // resolved: relative to the deck file's directory (--set: to the cwd)
  std::int64_t every = 1;
};

// output.compression: how the HDF5 series' datasets are stored (checkpoints are always
// stored as computed). Deflate (with HDF5's byte shuffle first) is lossless; ZFP in
// fixed-accuracy mode is lossy, each stored value within `tolerance` of the computed one.
enum class CompressionType { None, Deflate, Zfp };
struct Compression {
  CompressionType type = CompressionType::None;
  int level = 1;         // deflate: 1 (fastest) .. 9 (smallest)
  double tolerance = 0;  // zfp: absolute error bound, > 0
};

// A spatial field description, used for `initial` and `source`.
struct Shape {
  ShapeType type = ShapeType::None;
  double value = 0;      // uniform value; box value; gaussian background
  double amplitude = 0;  // gaussian, sine
  double width = 0;      // gaussian
  std::array<double, 3> center{0, 0, 0};
  std::array<double, 3> lower{0, 0, 0}, upper{0, 0, 0};
};

// A part of the domain that a `materials` entry applies to: a cell belongs to it when its
// centre lies inside (File: every cell, with per-cell values from an HDF5 dataset).
enum class RegionKind { Box, Sphere, Cylinder, File };
struct Region {
  RegionKind kind = RegionKind::Box;
  std::array<double, 3> lower{0, 0, 0}, upper{0, 0, 0};  // box (closed)
  // Sphere: its centre. Cylinder: the axis' position in the two other coordinates, in axis
  // order (axis z: center[0] = x, center[1] = y; axis x: y, z; axis y: x, z).
  std::array<double, 3> center{0, 0, 0};
  double radius = 0;    // sphere, cylinder (closed: distance <= radius)
  int axis = 2;         // cylinder: 0 x, 1 y, 2 z
  std::string path;     // file: resolved like catalyst scripts (relative to the deck's directory)
  std::string dataset;  // file: [nz][ny][nx] ([ny][nx] in 2D), x fastest, the grid's cells
};

enum class MaterialProperty { Conductivity, Density, SpecificHeat };

// One `materials` entry: the properties it sets in its region (the others stay as they were).
struct MaterialRegion {
  Region region;
  std::optional<double> conductivity, density, specific_heat;
  MaterialProperty file_property = MaterialProperty::Conductivity;  // file: what the values are
};

// `material` and `materials`. Without physical properties (`material: {diffusivity: a}`):
// conductivity a, density and specific heat 1, the deck's source is du/dt's (as always; a
// Poisson deck's conductivity is 1: -lap u = f as always, the diffusivity is not used);
// with them (SI) the source is in W/m^3 (Poisson: -div(k grad u) = f). docs/deck.md
// "Materials"; io/materials.hpp samples them per cell.
struct Materials {
  bool physical = false;
  double conductivity = 1, density = 1, specific_heat = 1;
  std::vector<MaterialRegion> regions;  // later entries win
  bool uniform() const { return regions.empty(); }
  double heat_capacity() const { return density * specific_heat; }  // rho cp
};

struct Config {
  std::string deck_path;  // file the deck came from ("<string>" for in-memory decks)
  std::string name;

  ProblemType problem = ProblemType::Heat;
  int dimensions = 3;
  std::array<int, 3> cells{1, 1, 1};  // cells[2] == 1 in 2D
  std::array<double, 3> length{1, 1, 1};
  std::array<double, 3> origin{0, 0, 0};

  // k / (rho cp) of a uniform material (the constant-coefficient kernels' alpha); regions:
  // unused (docs/deck.md "Materials").
  double diffusivity = 1.0;
  Materials material;

  // Heat time stepping, resolved: dt and steps are final (dt * steps == end when end given).
  double dt = 0;
  std::int64_t steps = 0;
  double end_time = 0;
  bool dt_auto = true;
  double safety = 0.9;
  TimeScheme scheme = TimeScheme::Explicit;

  Shape initial, source;
  BoundaryFaces boundary{};  // x-, x+, y-, y+, z-, z+

  SolverMethod method = SolverMethod::Jacobi;
  double tolerance = 1e-8;
  std::int64_t max_iterations = 100000;
  int check_every = 10;
  int anderson_depth = 5;
  double anderson_damping = 1.0;
  int anderson_every = 1;  // Jacobi sweeps per Anderson mixing (alternating Anderson-Jacobi)
  MultigridSettings multigrid;

  BackendKind backend = BackendKind::Auto;
  Precision precision = Precision::Double;
  // execution.precision: mixed: a double run (precision Double: fields, checkpoints, output)
  // whose multigrid solves (multigrid, mg-cg, implicit steps) smooth and transfer their
  // correction equation in float (solvers/multigrid/mixed.hpp).
  bool mixed_precision = false;
  std::string kernel = "auto";
  std::array<int, 3> block{0, 0, 0};
  int time_block = 0;                         // temporal blocking factor; 0 = auto
  std::array<int, 3> decomposition{0, 0, 0};  // 0 = MPI_Dims_create decides
  HaloMode halo = HaloMode::Auto;
  bool overlap = true;
  double walltime_seconds = 0;  // 0 = no limit

  std::string output_directory = "out";
  std::int64_t output_every = 0;  // 0 = initial and final state only
  std::vector<std::string> formats{"hdf5"};
  bool overwrite = false;
  std::int64_t checkpoint_every = 0;     // 0 = off
  std::vector<CatalystScript> catalyst;  // output.catalyst; empty = no in-situ output
  Compression compression;               // output.compression (the HDF5 series)

  nlohmann::json deck;  // the deck as given (after --set overrides), echoed in summary.json

  GridDesc grid() const {
    GridDesc g;
    g.dims = dimensions;
    g.nx = cells[0];
    g.ny = cells[1];
    g.nz = dimensions == 3 ? cells[2] : 1;
    g.hx = length[0] / cells[0];
    g.hy = length[1] / cells[1];
    g.hz = dimensions == 3 ? length[2] / cells[2] : 1.0;
    return g;
  }
};

const char* to_string(ProblemType p);
const char* to_string(Precision p);
const char* to_string(BackendKind b);
const char* to_string(BoundaryType b);
const char* to_string(ShapeType s);
const char* to_string(SolverMethod m);
const char* to_string(HaloMode h);
const char* to_string(TimeScheme s);
const char* to_string(MultigridCycle c);
const char* to_string(MultigridSmoother s);
const char* to_string(Prolongation p);
const char* to_string(CompressionType c);

// theta of the one-step scheme: 0 explicit, 1 implicit Euler, 1/2 Crank-Nicolson.
double scheme_theta(TimeScheme s);

}  // namespace heatsolve
