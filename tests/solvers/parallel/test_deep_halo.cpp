// Deep-halo geometry (solvers/parallel/deep_halo.hpp) without MPI: margins, the boxes that travel,
// and the copies between a block and its extended grid. The exchange itself and the bitwise
// equality of fused decomposed runs with serial ones are in tests/mpi.
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "solvers/parallel/decomposition.hpp"
#include "solvers/parallel/deep_halo.hpp"
#include "tests/solvers/parallel/block_grids.hpp"

namespace heatsolve {
namespace {

using test_grids::dirichlet;
using test_grids::grid3;

// In global cell coordinates: a range of `geo`'s extended grid.
CellRange to_global(const DeepHaloGeometry& geo, CellRange r) {
  for (int a = 0; a < 3; ++a) {
    r.lo[a] += geo.extended_domain.block.offset[a];
    r.hi[a] += geo.extended_domain.block.offset[a];
  }
  return r;
}

TEST(DeepHalo, MarginsOnExchangeFacesOnly) {
  const GridDesc global = grid3(20, 17, 9);
  const Domain d = block_domain(global, dirichlet(), {2, 1, 1}, {0, 0, 0}, 0);
  const DeepHaloGeometry geo = deep_halo_geometry(d, 3);
  EXPECT_EQ(geo.margin_lo, (std::array<int, 3>{0, 0, 0}));
  EXPECT_EQ(geo.margin_hi, (std::array<int, 3>{3, 0, 0}));
  EXPECT_EQ(geo.extended.nx, 13);
  EXPECT_EQ(geo.extended.ny, 17);
  EXPECT_EQ(geo.extended.nz, 9);
  EXPECT_EQ(geo.extended_domain.block.offset, (std::array<int, 3>{0, 0, 0}));
  EXPECT_EQ(deepest_margin(d), 10);
}

TEST(DeepHalo, TooThinBlockIsRefused) {
  const GridDesc global = grid3(7, 8, 8);
  const Domain d = block_domain(global, dirichlet(), {3, 1, 1}, {1, 0, 0}, 1);
  EXPECT_EQ(deepest_margin(d), 2);
  EXPECT_NO_THROW(deep_halo_geometry(d, 2));
  EXPECT_THROW(deep_halo_geometry(d, 3), std::invalid_argument);
}

// An overlapped pass's parts (OverlapPlanes) store every block plane once, the planes each
// neighbour is sent first, and never a margin plane (the exchange overwrites those); only z
// splits overlap.
TEST(DeepHalo, OverlapPartsTileTheBlockPlanes) {
  const GridDesc global = grid3(8, 6, 20);
  OverlapPlanes parts;
  for (const std::array<int, 3>& procs :
       {std::array<int, 3>{1, 1, 2}, {1, 1, 3}, {1, 1, 6}, {1, 1, 1}, {2, 1, 2}, {1, 2, 1}}) {
    const bool z_only = procs[0] == 1 && procs[1] == 1 && procs[2] > 1;
    for (int r = 0; r < procs[2]; ++r)
      for (int depth : {1, 2, 3}) {
        const Domain d = block_domain(global, dirichlet(), procs, {0, 0, r}, r);
        if (depth > deepest_margin(d)) continue;
        const DeepHaloGeometry geo = deep_halo_geometry(d, depth);
        ASSERT_EQ(overlap_planes(geo, &parts), z_only);
        if (!z_only) continue;
        std::vector<int> stored(geo.extended.nz, 0), sent(geo.extended.nz, 0);
        for (const std::array<int, 2>& part : {parts.send_lo, parts.send_hi, parts.rest})
          for (int p = part[0]; p < part[1]; ++p) ++stored[p];
        for (int p = parts.rest[0]; p < parts.rest[1]; ++p) sent[p] = -1;  // rest: after
        for (int f = 4; f < 6; ++f) {
          if (d.faces[f].type != BoundaryType::Exchange) continue;
          const CellRange s = geo.send_range(f);
          for (int p = s.lo[2]; p < s.hi[2]; ++p) EXPECT_EQ(sent[p], 0) << "plane " << p;
        }
        const CellRange b = geo.block_range();
        for (int p = 0; p < geo.extended.nz; ++p)
          EXPECT_EQ(stored[p], p >= b.lo[2] && p < b.hi[2] ? 1 : 0)
              << procs[2] << " ranks, rank " << r << ", depth " << depth << ", plane " << p;
      }
  }
}

// Every margin a rank receives is, cell for cell, what its neighbour sends: same global
// cells, and the edges and corners of a 2x2x2 split arrive through the earlier axes.
TEST(DeepHalo, ReceivedMarginsAreTheNeighboursSentCells) {
  const GridDesc global = grid3(11, 10, 9);
  const std::array<int, 3> procs{2, 2, 2};
  for (int depth : {1, 2, 4}) {
    for (int r = 0; r < 8; ++r) {
      const std::array<int, 3> c{r % 2, (r / 2) % 2, r / 4};
      const DeepHaloGeometry geo =
          deep_halo_geometry(block_domain(global, dirichlet(), procs, c, r), depth);
      for (int f = 0; f < 6; ++f) {
        const int axis = f / 2, dir = f % 2 == 0 ? -1 : 1;
        std::array<int, 3> nc = c;
        nc[axis] += dir;
        if (nc[axis] < 0 || nc[axis] > 1) {
          EXPECT_EQ(f % 2 == 0 ? geo.margin_lo[axis] : geo.margin_hi[axis], 0);
          continue;
        }
        const int nr = nc[0] + 2 * nc[1] + 4 * nc[2];
        const DeepHaloGeometry ngeo =
            deep_halo_geometry(block_domain(global, dirichlet(), procs, nc, nr), depth);
        const CellRange mine = to_global(geo, geo.recv_range(f));
        const CellRange theirs = to_global(ngeo, ngeo.send_range(f ^ 1));
        EXPECT_EQ(mine.lo, theirs.lo) << "rank " << r << " face " << f << " depth " << depth;
        EXPECT_EQ(mine.hi, theirs.hi) << "rank " << r << " face " << f << " depth " << depth;
        // What is sent lies in the sender's block or in margins filled by earlier axes.
        const CellRange sent = ngeo.send_range(f ^ 1), block = ngeo.block_range();
        for (int a = axis; a < 3; ++a) {
          EXPECT_GE(sent.lo[a], block.lo[a]);
          EXPECT_LE(sent.hi[a], block.hi[a]);
        }
      }
      // After the three axes, the margins cover the whole extended interior.
      const int n_ext = geo.extended.nx * geo.extended.ny * geo.extended.nz;
      int covered = int(geo.block.interior_size());
      for (int f = 0; f < 6; ++f) {
        if ((f % 2 == 0 ? geo.margin_lo : geo.margin_hi)[f / 2] == 0) continue;
        const CellRange m = geo.recv_range(f);
        covered += (m.hi[0] - m.lo[0]) * (m.hi[1] - m.lo[1]) * (m.hi[2] - m.lo[2]);
      }
      EXPECT_EQ(covered, n_ext) << "rank " << r << " depth " << depth;
    }
  }
}

TEST(DeepHalo, BlockRoundTripThroughTheExtendedGrid) {
  const GridDesc global = grid3(12, 10, 8);
  const Domain d = block_domain(global, dirichlet(), {2, 2, 1}, {1, 0, 0}, 1);
  const DeepHaloGeometry geo = deep_halo_geometry(d, 2);
  CpuBackend<double> backend;
  std::vector<double> block(geo.block.padded_size()), ext(geo.extended.padded_size(), -1.0);
  std::iota(block.begin(), block.end(), 0.0);
  copy_block_to_extended(backend, geo, block.data(), ext.data());
  const CellRange b = geo.block_range();
  EXPECT_EQ(ext[geo.extended.index(b.lo[0], b.lo[1], b.lo[2])], block[geo.block.index(0, 0, 0)]);
  EXPECT_EQ(ext[geo.extended.index(b.hi[0] - 1, b.hi[1] - 1, b.hi[2] - 1)],
            block[geo.block.index(geo.block.nx - 1, geo.block.ny - 1, geo.block.nz - 1)]);
  EXPECT_EQ(ext[geo.extended.index(0, 0, 0)], -1.0);  // margins untouched
  std::vector<double> back(geo.block.padded_size(), -7.0);
  copy_extended_to_block(backend, geo, ext.data(), back.data());
  for (int k = 0; k < geo.block.nz; ++k)
    for (int j = 0; j < geo.block.ny; ++j)
      for (int i = 0; i < geo.block.nx; ++i)
        ASSERT_EQ(back[geo.block.index(i, j, k)], block[geo.block.index(i, j, k)]);
  EXPECT_EQ(back[0], -7.0);  // ghosts are not copied
}

}  // namespace
}  // namespace heatsolve
