// Deep halos: temporal blocking on a decomposed grid. Each rank keeps its block inside an
// extended grid that reaches `depth` cells past every Exchange face, fills that margin from
// its neighbours once, and then runs `depth` fused steps on the extended grid with the
// kernels of a serial run. Errors from the margin's unfilled outer ghosts travel one cell per
// step, so after `depth` steps they have reached the margin's inner edge and no further: the
// block holds exactly what single steps with a halo exchange between them would give (the
// same arithmetic per point, so the same bits).
//
// The margin is filled axis by axis (x, then y with the x margins included, then z with
// both), so edge and corner cells arrive from face neighbours only, through the cells the
// earlier axes delivered. Physical faces keep their rules on the extended grid: the margin
// only grows along Exchange faces, so the global boundary stays where it is.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "kernels/backend.hpp"
#include "solvers/parallel/domain.hpp"

namespace heatsolve {

// Where the block sits in the extended grid and which boxes travel (interior coordinates of
// the extended grid, [lo, hi) per axis).
struct DeepHaloGeometry {
  int depth = 1;
  GridDesc block;     // the rank's block (Domain::local)
  GridDesc extended;  // block + margins
  Domain extended_domain;
  std::array<int, 3> margin_lo{0, 0, 0}, margin_hi{0, 0, 0};

  // The block inside the extended grid.
  CellRange block_range() const;
  // The `depth` layers of the block next to `face` that the neighbour across it needs, over
  // the other axes' extents at the time axis face/2 is exchanged (extended for earlier axes).
  CellRange send_range(int face) const;
  // The margin beyond `face` that the neighbour's send_range(face ^ 1) fills.
  CellRange recv_range(int face) const;
};

// The geometry of `domain`'s block with margins `depth` deep on its Exchange faces. Throws
// std::invalid_argument when the block is thinner than `depth` along a split axis (its
// neighbour could not fill the margin from its own cells).
DeepHaloGeometry deep_halo_geometry(const Domain& domain, int depth);

// The deepest margin every block of a decomposition can fill: the thinnest block extent
// along the split axes (those with an Exchange face), for one rank; combine with a minimum
// over ranks. A large number when nothing is split.
int deepest_margin(const Domain& domain);

// Copies between a block array (layout `geometry.block`) and the block part of an
// extended one; interior cells only, in order with the backend's other work.
template <typename T>
void copy_block_to_extended(Backend<T>& backend, const DeepHaloGeometry& geometry, const T* block,
                            T* extended);
template <typename T>
void copy_extended_to_block(Backend<T>& backend, const DeepHaloGeometry& geometry,
                            const T* extended, T* block);

// Overlap of the exchange with a pass (Simulation::deep_pass): where the stream axis (z in
// 3D, y in 2D) is the only split one, a pass is stored in parts: first the planes the
// neighbours need next (send, the send_range planes of each Exchange face), then, while the
// exchange runs on the backend's side lane, the rest. The margin planes are in no part: the
// exchange's unpack overwrites all of them.
struct OverlapPlanes {
  std::array<int, 2> send_lo{0, 0}, send_hi{0, 0};  // [p0, p1) each; empty: no face there
  std::array<int, 2> rest{0, 0};
};
// The parts of `geometry`'s passes; false when another axis is split or the stream axis is
// not (nothing to overlap, or margins the parts would not cover).
bool overlap_planes(const DeepHaloGeometry& geometry, OverlapPlanes* out);

// Fills the margins of an extended array from the neighbours' blocks (every cell of
// recv_range for every Exchange face; ghosts beyond the margins are left alone).
template <typename T>
class DeepHaloExchanger {
 public:
  virtual ~DeepHaloExchanger() = default;
  virtual const DeepHaloGeometry& geometry() const = 0;
  // Packs, sends and unpacks on the backend's `lane` (the host waits for that lane only,
  // never for the other's work).
  virtual void exchange(Backend<T>& backend, T* extended, Lane lane = Lane::Main) = 0;
  // How the margins travel ("ipc", "staged", ...; empty when it does not apply).
  virtual std::string transport() const { return ""; }
  virtual ExchangeSetupCost setup_cost() const { return {}; }
};

}  // namespace heatsolve
