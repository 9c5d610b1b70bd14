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
#include "core/time_table.hpp"

namespace heatsolve {

enum class ProblemType { Heat, Poisson };
// File: the values of an HDF5 dataset (`initial` only).
enum class ShapeType { None, Uniform, Gaussian, Box, Sine, File };
enum class Precision { Float, Double };
enum class SolverMethod { Jacobi, Anderson, Multigrid, MultigridCG };
// Heat time stepping: forward Euler, or theta = 1 / theta = 1/2 implicit steps solved by
// multigrid.
enum class TimeScheme { Explicit, ImplicitEuler, CrankNicolson };
enum class HaloMode { Auto, Staged, CudaAware, Ipc };
// solver.singular: what a Poisson deck without a Dirichlet face (nor a convective face with
// h > 0) whose source does not balance the boundary inflow gets: refused at validation, or the
// solution of the compatible part (the mean imbalance removed, the solution of zero mean).
enum class SingularPolicy { Refuse, CompatibleMean };

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
  // Time dependence (`source` entries of heat decks, docs/deck.md "Time-varying inputs"): the
  // deck's table for `value` / `amplitude` when it gave one instead of a number; `value` and
  // `amplitude` above then hold the table's value at t = 0. Absent: constant.
  std::optional<TimeTable> value_table, amplitude_table;
  // File (`initial` only): the HDF5 file (resolved like catalyst scripts: relative to the deck
  // file's directory) and the dataset, [nz][ny][nx] ([ny][nx] in 2D), x fastest. The deck
  // resolves an omitted dataset (the last step of a heatsolve series) into `dataset`.
  std::string path, dataset;

  double value_at(double t) const { return value_table ? value_table->at(t) : value; }
  double amplitude_at(double t) const {
    return amplitude_table ? amplitude_table->at(t) : amplitude;
  }
  // Whether value or amplitude changes with time.
  bool varies() const {
    return (value_table && !value_table->constant()) ||
           (amplitude_table && !amplitude_table->constant());
  }
  // This shape with `value` and `amplitude` at time t (the tables kept).
  Shape at(double t) const {
    Shape s = *this;
    s.value = value_at(t);
    s.amplitude = amplitude_at(t);
    return s;
  }
};

// output.diagnostics: when diagnostics.csv gets a row (io/diagnostics_writer.hpp): at every
// multiple of `every` steps (iterations), at every multiple of `interval` in simulated time
// (heat; the deck resolves it to `interval_steps`, the step landing on each multiple), at step
// 0 and at the last step. Both 0: no diagnostics.
struct DiagnosticsOutput {
  std::int64_t every = 0;           // 0 = not by steps
  double interval = 0;              // simulated time; 0 = not by time
  std::int64_t interval_steps = 0;  // interval / dt, exact (resolved); 0 when interval is 0
  bool enabled() const { return every > 0 || interval > 0; }
  // A row at `step` (besides step 0 and the last step, which always get one).
  bool due(std::int64_t step) const {
    return (every > 0 && step % every == 0) || (interval_steps > 0 && step % interval_steps == 0);
  }
};

// output.probes entry: a diagnostics.csv column `probe_<name>` holding the value of the cell
// `cell` (global indices; z = 0 in 2D), the cell whose extent holds `point`.
struct Probe {
  std::string name;  // [A-Za-z0-9_]+, unique
  std::array<double, 3> point{0, 0, 0};
  std::array<int, 3> cell{0, 0, 0};
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

  // `source` as the deck gave it: one mapping (`source`; type None when absent) or a list of
  // shapes that are summed (`sources`: every term, in deck order; empty = no source). A single
  // mapping that is not `none` is also sources[0]; with a list of several, `source` is the
  // first of them and only `sources` describes the whole source.
  Shape initial, source;
  std::vector<Shape> sources;
  BoundaryFaces boundary{};  // x-, x+, y-, y+, z-, z+; values at t = 0
  // The deck's tables over time for the faces' values (dirichlet value, neumann flux,
  // convective ambient, heat_flux value), when it gave one instead of a number; absent:
  // constant `boundary[f].value`. boundary_at(t) applies them.
  std::array<std::optional<TimeTable>, 6> boundary_tables;

  SolverMethod method = SolverMethod::Jacobi;
  double tolerance = 1e-8;
  std::int64_t max_iterations = 100000;
  int check_every = 10;
  int anderson_depth = 5;
  double anderson_damping = 1.0;
  int anderson_every = 1;  // Jacobi sweeps per Anderson mixing (alternating Anderson-Jacobi)
  MultigridSettings multigrid;
  SingularPolicy singular = SingularPolicy::Refuse;  // solver.singular (Poisson)

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
  // output.interval: fields at every multiple of it in simulated time (heat). The deck chooses
  // dt so that each multiple is a step: output_interval_steps = interval / dt exactly. 0 = off.
  // With output_every, both apply.
  double output_interval = 0;
  std::int64_t output_interval_steps = 0;
  std::vector<std::string> formats{"hdf5"};
  bool overwrite = false;
  std::int64_t checkpoint_every = 0;     // 0 = off
  std::vector<CatalystScript> catalyst;  // output.catalyst; empty = no in-situ output
  Compression compression;               // output.compression (the HDF5 series)
  DiagnosticsOutput diagnostics;         // output.diagnostics (diagnostics.csv)
  std::vector<Probe> probes;             // output.probes: columns of diagnostics.csv

  nlohmann::json deck;  // the deck as given (after --set overrides), echoed in summary.json

  // The faces with their values at time t (the tables applied; the deck's faces when none).
  BoundaryFaces boundary_at(double t) const {
    BoundaryFaces faces = boundary;
    for (std::size_t f = 0; f < faces.size(); ++f)
      if (boundary_tables[f]) faces[f].value = boundary_tables[f]->at(t);
    return faces;
  }
  // Whether any face value or source term changes with time.
  bool boundary_varies() const {
    for (const auto& table : boundary_tables)
      if (table && !table->constant()) return true;
    return false;
  }
  bool sources_vary() const {
    for (const Shape& s : sources)
      if (s.varies()) return true;
    return false;
  }

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
const char* to_string(SingularPolicy s);

// The name of the field a run computes, in every output (HDF5 dataset, XDMF/VTK array,
// Catalyst array): "temperature" (heat) or "solution" (Poisson). Inline: the Catalyst module
// (io/catalyst/), loaded at run time, calls no function of heatsolve's.
inline const char* field_name(ProblemType p) {
  return p == ProblemType::Poisson ? "solution" : "temperature";
}

// theta of the one-step scheme: 0 explicit, 1 implicit Euler, 1/2 Crank-Nicolson.
double scheme_theta(TimeScheme s);

}  // namespace heatsolve
