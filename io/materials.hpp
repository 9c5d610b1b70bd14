// Materials by region (docs/deck.md "Materials"): the deck's `material` and `materials`
// evaluated cell by cell. A cell takes a region's properties when its centre
// (origin + (i + 1/2) L/n per axis) lies inside; later entries win; keys an entry leaves out
// come from the cells' values so far (the base material's, or an earlier entry's).
// Everything here is a function of the global cell index alone, so every rank and every
// block computes bit-identical values for the same cell.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/grid.hpp"
#include "io/config.hpp"

namespace heatsolve {

// A problem with a file region's HDF5 data. `part` says which deck key it concerns (the deck
// parser reports it there as a DeckError).
class MaterialsError : public std::runtime_error {
 public:
  enum class Part { Kind, Path, Dataset };  // `file` itself (a build without HDF5), path, dataset
  MaterialsError(Part part, const std::string& message)
      : std::runtime_error(message), part_(part) {}
  Part part() const { return part_; }

 private:
  Part part_;
};

// Per-cell properties of a block of the global grid with one ghost layer, in the padded
// layout of GridDesc `local` (x fastest, index local.index(i, j, k), i in [-1, nx], ...):
// interior cells and the ring of ghost cells around them. A ghost cell across a face that
// lies inside the global grid (a neighbour rank's cell) takes that cell's properties; across
// a periodic face the wrapped cell's; across a physical face (outside the grid) the inner
// cell's (a mirror). `offset`: the block's first cell in the global grid.
// Edge and corner ghosts follow the same rule per axis (finite, the stencils are 7-point).
// File regions are read for the block and its ghost ring only (wrapped where periodic).
// Throws std::invalid_argument for a block outside the grid, MaterialsError for bad file data.
struct CellProperties {
  std::vector<double> conductivity;   // k, W/(m K) (diffusivity decks: the diffusivity)
  std::vector<double> heat_capacity;  // rho cp, J/(m^3 K) (diffusivity decks: 1)
};
CellProperties sample_materials(const Config& cfg, const GridDesc& local,
                                const std::array<int, 3>& offset);

// dt_max of the explicit scheme over the global grid: min over cells of C_i / S_i, C_i = rho cp
// of cell i, S_i = sum over its 2*dims faces of K_f / h_f^2, K_f = 2 k_i k_n / (k_i + k_n)
// (a boundary face: k_i; periodic: the wrapped neighbour). A uniform material (no `materials`
// entries): exactly stable_dt(cfg.grid(), cfg.diffusivity). Streams the grid plane by plane.
double stable_dt_materials(const Config& cfg);

// The same, with the cell where the minimum is reached (the first such in x-fastest order;
// uniform materials: cell {0, 0, 0}) and its C_i and S_i (uniform: 1 and 1/dt).
struct MaterialsDtLimit {
  double dt_max = 0;
  std::array<int, 3> cell{0, 0, 0};
  double heat_capacity = 1, face_sum = 0;
};
MaterialsDtLimit materials_dt_limit(const Config& cfg);
// The same limit computed a tile of the layer plane at a time (rows of at most `tile_row` cells,
// at most `tile_cells` cells a tile), whatever the tiles the same answer; materials_dt_limit's
// tiles keep its memory near 2^20 cells on any grid.
MaterialsDtLimit materials_dt_limit_tiled(const Config& cfg, int tile_row, std::int64_t tile_cells);

// A short description of each material/region for summary.json: a JSON array, the base
// material first, then each `materials` entry with its kind, geometry (or file), the
// properties it sets, `cells` (cell centres inside its region) and `cells_topmost` (cells no
// later entry's region covers). The base's `cells`: the cells no region covers. Global counts.
nlohmann::json describe_materials(const Config& cfg);

// Cell centres of the global grid inside `region` (a file region: every cell).
std::int64_t region_cell_count(const Config& cfg, const Region& region);
// Whether region_cell_count(cfg, region) > 0, in O(log cells) per axis and no memory: the
// deck's check that a region holds a cell, whatever the grid's size.
bool region_holds_a_cell(const Config& cfg, const Region& region);

// Checks a file region for validation: the file opens as
// HDF5, the dataset exists, holds floating-point values, has the grid's shape ([nz][ny][nx],
// 2D [ny][nx]), and every value is positive and finite (read plane by plane). Throws
// MaterialsError.
void check_file_region(const Config& cfg, const Region& region);

// Property names as the deck spells them.
const char* to_string(MaterialProperty p);
const char* to_string(RegionKind k);

}  // namespace heatsolve
