// What a deck's materials and faces make of the operator on a rank's block.
//
// Uniform material (no `materials` regions): the constant-coefficient kernels, alpha =
// k / (rho cp) for heat (1 for Poisson, whose source is divided by k). The deck's faces are
// lowered to ghost rules with the half-cell distance: a convective face to a Robin rule (its
// ghost makes the face flux (T_amb - T_i) / (h/(2k) + 1/h_c)), a heat-flux face q to Neumann
// du/dn = q / k.
//
// Regions: the variable-coefficient kernels (kernels/stencil/variable.hpp). A face between two
// cells couples them with the harmonic mean of their conductivities (series resistance), so
// interfaces on cell faces are exact. A boundary face couples the cell to the exterior value
// its ghost holds (Fixed rule): Dirichlet v through h/(2k), convective T_amb through
// h/(2k) + 1/h_c; a heat-flux or Neumann face adds its flux to the cell's source instead
// (q/h, k g/h) and couples nothing.
#pragma once

#include <memory>
#include <vector>

#include "io/config.hpp"
#include "solvers/operator/conductance.hpp"
#include "solvers/parallel/domain.hpp"

namespace heatsolve {

// The deck face on a uniform material of conductivity k, for a grid of spacing h normal to it.
FaceBC lower_uniform_face(const FaceBC& deck, double h, double k);
// Every face of g (Exchange and Periodic faces as they are).
BoundaryFaces lower_uniform_faces(const BoundaryFaces& deck, const GridDesc& g, double k);
// A face that fixes the solution's level (Dirichlet, convective with h > 0): a steady problem
// with none on any rank is singular.
bool anchors(const FaceBC& deck);

// The kernel rules of a block's deck faces with regions: Fixed exterior values (dirichlet: the
// value; convective: the ambient; neumann and heat_flux: 0, their flux enters the source
// instead), Periodic and Exchange faces as they are; the first 2 * dims faces.
BoundaryFaces variable_face_rules(const BoundaryFaces& deck, int dims);
// The flux of g's neumann and heat_flux faces per volume, added to the cells at each face of
// `flux` (g's padded layout): a neumann face's k du/dn / h (k: the cell's conductivity, `k` in
// g's layout), a heat_flux face's q / h.
void add_face_flux(std::vector<double>& flux, const GridDesc& g, const BoundaryFaces& deck,
                   const std::vector<double>& k);

// The variable-coefficient problem on a block (host arrays in the block's padded layout).
template <typename T>
struct VariableProblem {
  // The cells' conductivities with the ring of the neighbours' (coarse levels start here).
  std::shared_ptr<const ConductanceLevel> conductance;
  Exterior exterior{};              // the block's faces' exterior resistances
  std::vector<T> wx, wy, wz;        // K_f / h^2 at each cell's lower face (2D: wz empty)
  std::vector<T> capacity;          // rho cp per cell
  std::vector<double> flux_source;  // heat-flux and Neumann faces, per volume (W/m^3)
  BoundaryFaces faces;              // ghost rules: Fixed exterior values, Periodic, Exchange
};

template <typename T>
VariableProblem<T> variable_problem(const Config& cfg, const Domain& domain);

// Whether the deck describes its material (physical properties or regions), which the outputs
// then show as the cell fields below; `material: {diffusivity: a}` alone does not.
bool has_material_fields(const Config& cfg);
// The block's interior cells' conductivity and rho cp, x fastest (the writers' layout).
struct MaterialFields {
  std::vector<double> conductivity, heat_capacity;
};
MaterialFields material_fields(const Config& cfg, const Domain& domain);

}  // namespace heatsolve
