#include "solvers/parallel/deep_halo.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace heatsolve {

namespace {

std::array<int, 3> cells(const GridDesc& g) {
  return {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
}

bool exchanged(const Domain& d, int face) {
  return face < 2 * d.local.dims && d.faces[face].type == BoundaryType::Exchange;
}

}  // namespace

CellRange DeepHaloGeometry::block_range() const {
  const std::array<int, 3> n = cells(block);
  CellRange r;
  for (int a = 0; a < 3; ++a) {
    r.lo[a] = margin_lo[a];
    r.hi[a] = margin_lo[a] + n[a];
  }
  return r;
}

CellRange DeepHaloGeometry::send_range(int face) const {
  const int axis = face / 2;
  const std::array<int, 3> ne = cells(extended);
  CellRange r = block_range();
  for (int a = 0; a < axis; ++a) {  // axes exchanged earlier travel with their margins
    r.lo[a] = 0;
    r.hi[a] = ne[a];
  }
  if (face % 2 == 0)
    r.hi[axis] = r.lo[axis] + depth;
  else
    r.lo[axis] = r.hi[axis] - depth;
  return r;
}

CellRange DeepHaloGeometry::recv_range(int face) const {
  const int axis = face / 2;
  CellRange r = send_range(face);
  const CellRange b = block_range();
  if (face % 2 == 0) {
    r.lo[axis] = b.lo[axis] - depth;
    r.hi[axis] = b.lo[axis];
  } else {
    r.lo[axis] = b.hi[axis];
    r.hi[axis] = b.hi[axis] + depth;
  }
  return r;
}

int deepest_margin(const Domain& domain) {
  const std::array<int, 3> n = cells(domain.local);
  int m = std::numeric_limits<int>::max();
  for (int f = 0; f < 2 * domain.local.dims; ++f)
    if (exchanged(domain, f)) m = std::min(m, n[f / 2]);
  return m;
}

bool overlap_planes(const DeepHaloGeometry& geometry, OverlapPlanes* out) {
  const int axis = geometry.block.dims - 1;  // the stream axis
  for (int a = 0; a < axis; ++a)
    if (geometry.margin_lo[a] || geometry.margin_hi[a]) return false;
  const int lo = geometry.margin_lo[axis], hi = geometry.margin_hi[axis];
  if (!lo && !hi) return false;
  const int ns = cells(geometry.extended)[axis];
  const int block_lo = lo, block_hi = ns - hi;
  OverlapPlanes p;
  // A block of fewer than 2 depth planes sends some planes both ways: they go to send_lo.
  if (lo) p.send_lo = {block_lo, block_lo + geometry.depth};
  const int rest_lo = std::max(block_lo, p.send_lo[1]);
  if (hi) p.send_hi = {std::max(rest_lo, block_hi - geometry.depth), block_hi};
  p.rest = {rest_lo, hi ? p.send_hi[0] : block_hi};
  *out = p;
  return true;
}

DeepHaloGeometry deep_halo_geometry(const Domain& domain, int depth) {
  if (depth < 1) throw std::invalid_argument("deep halo: depth must be at least 1");
  if (depth > deepest_margin(domain))
    throw std::invalid_argument(fmt::format(
        "deep halo: a margin {} cells deep needs blocks at least as thick along the split axes "
        "(this block: {} x {} x {})",
        depth, domain.local.nx, domain.local.ny, domain.local.nz));
  DeepHaloGeometry g;
  g.depth = depth;
  g.block = domain.local;
  g.extended = domain.local;
  for (int f = 0; f < 2 * domain.local.dims; ++f) {
    if (!exchanged(domain, f)) continue;
    (f % 2 == 0 ? g.margin_lo : g.margin_hi)[f / 2] = depth;
  }
  g.extended.nx += g.margin_lo[0] + g.margin_hi[0];
  g.extended.ny += g.margin_lo[1] + g.margin_hi[1];
  if (domain.local.dims == 3) g.extended.nz += g.margin_lo[2] + g.margin_hi[2];
  g.extended_domain = domain;
  g.extended_domain.local = g.extended;
  for (int a = 0; a < 3; ++a) {
    g.extended_domain.block.offset[a] -= g.margin_lo[a];
    g.extended_domain.block.count[a] = cells(g.extended)[a];
  }
  return g;
}

namespace {

template <typename T>
void copy_interior(Backend<T>& backend, T* dst, const GridDesc& gd, const std::array<int, 3>& dlo,
                   const T* src, const GridDesc& gs, const std::array<int, 3>& slo,
                   const std::array<int, 3>& extent) {
  const auto at = [](const GridDesc& g, const std::array<int, 3>& c) {
    return g.index(c[0], c[1], g.dims == 3 ? c[2] : 0);
  };
  backend.copy_box(dst + at(gd, dlo), gd.stride_y(), gd.stride_z(), src + at(gs, slo),
                   gs.stride_y(), gs.stride_z(), extent);
}

}  // namespace

template <typename T>
void copy_block_to_extended(Backend<T>& backend, const DeepHaloGeometry& geometry, const T* block,
                            T* extended) {
  copy_interior(backend, extended, geometry.extended, geometry.margin_lo, block, geometry.block,
                {0, 0, 0}, cells(geometry.block));
}

template <typename T>
void copy_extended_to_block(Backend<T>& backend, const DeepHaloGeometry& geometry,
                            const T* extended, T* block) {
  copy_interior(backend, block, geometry.block, {0, 0, 0}, extended, geometry.extended,
                geometry.margin_lo, cells(geometry.block));
}

template void copy_block_to_extended<float>(Backend<float>&, const DeepHaloGeometry&, const float*,
                                            float*);
template void copy_block_to_extended<double>(Backend<double>&, const DeepHaloGeometry&,
                                             const double*, double*);
template void copy_extended_to_block<float>(Backend<float>&, const DeepHaloGeometry&, const float*,
                                            float*);
template void copy_extended_to_block<double>(Backend<double>&, const DeepHaloGeometry&,
                                             const double*, double*);

}  // namespace heatsolve
