// Writers of the solution time series. The solver hands each output step's field (interior
// cells only, packed x fastest) to every writer the deck asked for.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/config.hpp"

namespace heatsolve {

// The global grid as written: cell-centred data on `cells` cells of size `spacing`, the
// first cell's lower corner at `origin`. In 2D cells[2] == 1.
struct OutputGrid {
  int dims = 3;
  std::array<int, 3> cells{1, 1, 1};
  std::array<double, 3> origin{0, 0, 0};
  std::array<double, 3> spacing{1, 1, 1};
  // What the series holds: the problem's field (field_name(problem): "temperature" for heat,
  // "solution" for Poisson, the name of the HDF5 dataset, the XDMF/VTK/Catalyst array), and
  // what a step is: a time step at a simulated time (heat), or an iteration of a steady solve
  // (Poisson: the writers ignore the time they are handed and write the iteration instead).
  ProblemType problem = ProblemType::Heat;
  const char* field() const { return field_name(problem); }
  bool steady() const { return problem == ProblemType::Poisson; }
};

// The part of the global grid one rank holds (the whole grid in a serial run).
struct Block {
  std::array<int, 3> offset{0, 0, 0};
  std::array<int, 3> count{1, 1, 1};
  std::size_t size() const { return std::size_t(count[0]) * count[1] * count[2]; }
  // The whole grid as one block (a serial run's).
  static Block whole(const OutputGrid& g) { return {{0, 0, 0}, g.cells}; }
};

// A cell field that does not change during the run (the materials' conductivity and rho cp):
// `data` holds the local block's values, x fastest, like a step's.
struct CellField {
  std::string name;
  const double* data = nullptr;
};

class FieldWriter {
 public:
  virtual ~FieldWriter() = default;
  // Writes the run's constant cell fields once, before the first step (collective like
  // write()). The HDF5 series holds them under /cell_fields and every XDMF step shows them;
  // the VTK series writes them into one image of their own. Writers that keep only the
  // solution (test recorders) ignore them.
  virtual void write_cell_fields(const std::vector<CellField>& fields, const Block& block) {
    (void)fields, (void)block;
  }
  // `data` holds block.size() values of the local block, x fastest. `time`: the simulated time
  // (a steady series, OutputGrid::steady(), ignores it: its steps are iterations).
  virtual void write(std::int64_t step, double time, const float* data, const Block& block) = 0;
  virtual void write(std::int64_t step, double time, const double* data, const Block& block) = 0;
  // Publishes the final files (temporary name -> final name). Without it nothing appears
  // under the final names.
  virtual void finalize() = 0;
  // Files this writer produced (final names), for the summary.
  virtual std::vector<std::string> files() const = 0;
};

OutputGrid output_grid(const Config& cfg);

// Writers validate what they are handed; `what` names the file in the message.
// A grid of 2 or 3 dimensions with positive cell counts (cells[2] == 1 in 2D).
void check_output_grid(const OutputGrid& g, const std::string& what);
// A block inside the grid.
void check_output_block(const OutputGrid& g, const Block& b, const std::string& what);

}  // namespace heatsolve
