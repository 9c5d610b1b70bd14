// `initial: {type: file, path, dataset}` (docs/deck.md "initial and source"): a run that starts
// from a field stored in an HDF5 file, a previous run's result for instance, without a
// checkpoint. The deck validator checks the file (check_initial_file); each rank of a run
// reads its own block (read_initial_field), in place of the fill of a deck shape.
#pragma once

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/grid.hpp"
#include "io/config.hpp"

namespace heatsolve {

// A problem with the initial field's file. `part` says which deck key it concerns (the deck
// parser reports it there as a DeckError).
class InitialFieldError : public std::runtime_error {
 public:
  // `file` itself (a build without HDF5), path, dataset, the mapping (a key it lacks).
  enum class Part { Kind, Path, Dataset, Mapping };
  InitialFieldError(Part part, const std::string& message)
      : std::runtime_error(message), part_(part) {}
  Part part() const { return part_; }

 private:
  Part part_;
};

// The dataset an `initial: {type: file}` without `dataset` means: in a heatsolve series
// (root attribute format = "heatsolve-timeseries"), the field of its last step,
// "/steps/<last>/<field>" (field: the root attribute `field`, else "temperature", the name in
// files of older versions). Throws InitialFieldError (Mapping) for other files.
std::string default_initial_dataset(const std::string& path);

// Validation of `initial` (type File): the file opens as HDF5, the dataset exists, holds
// floating-point values, has the grid's shape ([nz][ny][nx], 2D [ny][nx]), and every value is
// finite (read plane by plane). Throws InitialFieldError.
void check_initial_file(const Config& cfg, const Shape& initial);

// The initial field of one block: `local` is the block's grid (GridDesc of the block, interior
// local.nx x ny x nz cells), `offset` its first cell in the global grid (z = 0 in 2D). Returns
// local.padded_size() values in the padded layout (local.index(i, j, k)), the interior read
// from cfg.initial's dataset (one hyperslab), ghost cells 0. Throws InitialFieldError.
std::vector<double> read_initial_field(const Config& cfg, const GridDesc& local,
                                       std::array<int, 3> offset);

}  // namespace heatsolve
