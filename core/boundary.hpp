// Face conditions as a validated deck states them and every kernel applies them.
#pragma once

#include <array>

namespace heatsolve {

enum class BoundaryType { Dirichlet, Neumann, Periodic, Exchange };

// One face's condition as the ghost-fill kernels see it. Faces are ordered
// x-, x+, y-, y+, z-, z+. `value` is the Dirichlet value or the outward normal derivative
// du/dn for Neumann. `Exchange` marks a face whose ghosts another rank fills (MPI).
struct FaceBC {
  BoundaryType type = BoundaryType::Dirichlet;
  double value = 0;
};
using BoundaryFaces = std::array<FaceBC, 6>;

}  // namespace heatsolve
