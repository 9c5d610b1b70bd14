// Coefficient-aware coarsening of a variable-coefficient operator (materials by region).
//
// A level describes, per cell and axis, the per-area thermal resistance from the cell's lower
// face to its centre and from its centre to its upper face. The finest level's cells are
// isotropic (h_a / (2 k)); a coarse cell's halves are its children's resistances in series
// along the axis and in parallel across it (a conductance mean over the columns), so a layer
// of insulation inside a coarse cell stays in its coefficients. A face's coupling is then
// 1 / ((R_hi(left) + R_lo(right)) h_a) per volume (the harmonic mean of two conductivities on
// the finest level); a boundary face's 1 / ((R_half + R_exterior) h_a), with R_exterior 0 for
// a Dirichlet face, 1 / h_c for a convective one, and infinite (no coupling) for heat-flux and
// Neumann faces.
#pragma once

#include <array>
#include <limits>
#include <vector>

#include "core/boundary.hpp"
#include "core/grid.hpp"

namespace heatsolve {

struct ConductanceLevel {
  GridDesc g;  // the level's block; padded layout, the ghost ring where known
  // Finest level: conductivity per cell (halves h_a / (2 k)); empty on coarse levels.
  std::vector<double> k;
  // Coarse levels: [2a] the lower half, [2a + 1] the upper half along axis a, per cell.
  std::array<std::vector<double>, 6> half;

  double lower(int a, std::int64_t i) const;
  double upper(int a, std::int64_t i) const;
};

// Per face: the resistance beyond a physical boundary face; NaN where the face is not one
// (a neighbour rank's, or periodic: the cells on the other side couple).
using Exterior = std::array<double, 6>;
inline constexpr double kNoCoupling = std::numeric_limits<double>::infinity();

// The exterior resistances of the deck's faces (Exchange and Periodic: NaN).
Exterior exterior_resistances(const BoundaryFaces& faces);

// The couplings K/h^2 of the faces along `axis` (each cell's lower face, faces 0..n along the
// axis, the interior extent along the others) in the level's padded layout: interior faces
// from the two cells' halves (the ghost ring for the block's edge faces), physical faces from
// the cell's half and the exterior.
std::vector<double> face_couplings(const ConductanceLevel& level, const Exterior& exterior,
                                   int axis);

// The next coarser level on `coarse` (ratio per axis 1 or 2): interior cells only.
ConductanceLevel coarsen(const ConductanceLevel& fine, const GridDesc& coarse);

// Fills the ghost ring across periodic faces (`exterior` NaN and the level spanning the
// axis: one block) by wrapping; other ghosts stay as they are.
void wrap_periodic(ConductanceLevel& level, const BoundaryFaces& faces);

}  // namespace heatsolve
