// Face conditions as a validated deck states them and every kernel applies them.
#pragma once

#include <array>

namespace heatsolve {

// Deck conditions (io/deck.cpp):
//   Dirichlet   value = the face's temperature
//   Neumann     value = the outward normal derivative du/dn (0: insulated)
//   Periodic    the opposite face's cells
//   Convective  value = the ambient temperature, coeff = h (W/(m^2 K)):
//               -k du/dn = h (u - ambient)
//   HeatFlux    value = the heat flux into the domain (W/m^2)
// Kernel rules the solver lowers the deck's to (solvers/problem/materials.hpp); a kernel
// never sees Convective or HeatFlux:
//   Robin       ghost = coeff * inner + value (a convective face of a uniform material)
//   Fixed       ghost = value (the exterior temperature; the conductance to it is in the
//               operator's face coefficients)
//   Exchange    another rank fills the ghosts (MPI)
enum class BoundaryType {
  Dirichlet,
  Neumann,
  Periodic,
  Exchange,
  Convective,
  HeatFlux,
  Robin,
  Fixed
};

// One face's condition. Faces are ordered x-, x+, y-, y+, z-, z+.
struct FaceBC {
  BoundaryType type = BoundaryType::Dirichlet;
  double value = 0;
  double coeff = 0;
};
using BoundaryFaces = std::array<FaceBC, 6>;

// A kernel rule that computes a face's ghosts from the cell inside (not Periodic, Exchange or
// a deck type).
inline bool has_ghost_rule(BoundaryType t) {
  return t == BoundaryType::Dirichlet || t == BoundaryType::Neumann || t == BoundaryType::Robin ||
         t == BoundaryType::Fixed;
}

}  // namespace heatsolve
