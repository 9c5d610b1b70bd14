// Fields with margins (solvers/parallel/margins.hpp) and the smoothing that runs in them
// (HelmholtzOperator::with_deep_smoothing), without MPI: two blocks of one process stand for two
// ranks, each filling its margins from the other's cells. The decomposed runs themselves are in
// tests/mpi.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "kernels/backend.hpp"
#include "solvers/operator/helmholtz.hpp"
#include "solvers/parallel/decomposition.hpp"
#include "solvers/parallel/margins.hpp"
#include "tests/solvers/parallel/block_grids.hpp"

namespace heatsolve {
namespace {

using test_grids::grid3;

BoundaryFaces faces() {
  BoundaryFaces f = test_grids::dirichlet();
  f[1] = FaceBC{BoundaryType::Neumann, 0.0};
  f[4] = FaceBC{BoundaryType::Dirichlet, 1.0};
  f[5] = FaceBC{BoundaryType::Neumann, 0.0};
  return f;
}

TEST(Margins, OnlyWhereTheStreamAxisAloneIsSplit) {
  const GridDesc global = grid3(8, 6, 12);
  const std::size_t plane = std::size_t(global.px()) * global.py();
  const auto at = [&](std::array<int, 3> procs, std::array<int, 3> coords) {
    return stream_margins(block_domain(global, faces(), procs, coords, 0), 3);
  };
  Margins m = at({1, 1, 3}, {0, 0, 0});
  EXPECT_EQ(m.before, 0u);
  EXPECT_EQ(m.after, 3 * plane);
  m = at({1, 1, 3}, {0, 0, 1});
  EXPECT_EQ(m.before, 3 * plane);
  EXPECT_EQ(m.after, 3 * plane);
  // In planes of the stream axis (a block of the global grid has its x-y plane).
  EXPECT_EQ(margin_planes(m.before, global), 3);
  EXPECT_EQ(margin_planes(0, global), 0);
  GridDesc flat = global;  // 2D: the stream axis is y, a plane one padded row
  flat.dims = 2;
  flat.nz = 1;
  EXPECT_EQ(margin_planes(5 * std::size_t(flat.px()), flat), 5);
  EXPECT_FALSE(at({2, 1, 1}, {0, 0, 0}).any());  // x split: other strides
  EXPECT_FALSE(at({1, 2, 2}, {0, 0, 0}).any());
  EXPECT_FALSE(at({1, 1, 6}, {0, 0, 1}).any());  // 2-cell blocks: too thin for 3
  EXPECT_FALSE(at({1, 1, 1}, {0, 0, 0}).any());
}

// The block's padded array is the extended array's from `before` on: data() is the block's,
// copies and size() too, and margins_of() knows the field while it lives.
TEST(Margins, FieldIsTheBlockOfItsExtendedArray) {
  auto cpu = make_backend<double>(BackendKind::Cpu, {});
  const Margins m{5, 7};
  const std::size_t n = 11;
  std::unique_ptr<Array<double>> a = allocate_with_margins(*cpu, n, m);
  const double* p = a->data();
  EXPECT_EQ(a->size(), n);
  EXPECT_EQ(margins_of(p).before, 5u);
  EXPECT_EQ(margins_of(p).after, 7u);
  EXPECT_FALSE(margins_of(p + 1).any());
  std::vector<double> in(n), out(n, -1.0);
  for (std::size_t i = 0; i < n; ++i) in[i] = double(i) + 0.5;
  a->copy_from_host(in.data());
  a->copy_to_host(out.data());
  EXPECT_EQ(in, out);
  for (std::size_t i = 0; i < m.before; ++i) EXPECT_EQ(p[std::ptrdiff_t(i) - 5], 0.0);
  for (std::size_t i = 0; i < m.after; ++i) EXPECT_EQ(p[n + i], 0.0);
  a.reset();
  EXPECT_FALSE(margins_of(p).any());
  EXPECT_FALSE(allocate_with_margins(*cpu, n, Margins{})->data() == nullptr);
}

// Two blocks of a z split smoothed through deep halos (their margins filled from the other
// block's cells, as the exchange would) hold the bits of the whole grid's smoothing, in their
// cells and, the margins one deeper than the sweeps, in the ghost plane facing the other block.
// `measure`: the pass that also measures the input's residual (smooth_measuring_residual), where
// the backend has it: its block sums add up to the whole grid's.
void deep_smoothing_is_the_whole_grids(Backend<double>& be, const GridDesc& global, bool measure) {
  const BoundaryFaces deck = faces();
  const std::vector<double> weights{0.62, 0.91, 1.37};
  const int sweeps = 3, depth = sweeps + 1;
  // The whole grid: a field and a source with distinct values everywhere.
  std::vector<double> u0(global.padded_size()), f0(global.padded_size());
  for (std::size_t i = 0; i < u0.size(); ++i) {
    u0[i] = 0.25 + 1e-3 * double(i % 997);
    f0[i] = 3.0 - 2e-3 * double(i % 883);
  }
  const auto upload = [&](const std::vector<double>& h, const Margins& m) {
    std::unique_ptr<Array<double>> a = allocate_with_margins(be, h.size(), m);
    a->copy_from_host(h.data());
    return a;
  };
  std::vector<double> whole(global.padded_size());
  double whole_norm = 0, block_squares = 0;
  {
    const HelmholtzOperator<double> op(FieldSpace<double>(be, global), deck, 0.0);
    auto u = upload(u0, {}), v = upload(u0, {}), f = upload(f0, {});
    double* cur = u->data();
    double* other = v->data();
    if (measure)
      ASSERT_TRUE(op.smooth_measuring_residual(&cur, &other, f->data(), weights, sweeps,
                                               BoundaryMode::Deck, &whole_norm));
    else
      op.smooth(&cur, &other, f->data(), weights, sweeps, false, BoundaryMode::Deck);
    be.synchronize();
    be.copy_values(whole.data(), cur, whole.size());
    be.synchronize();
  }
  for (int r = 0; r < 2; ++r) {
    const Domain d = block_domain(global, deck, {1, 1, 2}, {0, 0, r}, r);
    const GridDesc& g = d.local;
    const DeepHaloGeometry geo = deep_halo_geometry(d, depth);
    Margins m;
    ASSERT_TRUE(stream_margins(geo, &m));
    // The extended padded array: the global padded planes from offset - margin_lo on.
    const std::size_t plane = std::size_t(g.stride_z());
    const int first = d.block.offset[2] - geo.margin_lo[2];
    const auto extended_of = [&](const std::vector<double>& h) {
      const std::size_t count = m.before + g.padded_size() + m.after;
      return std::vector<double>(h.begin() + std::ptrdiff_t(first * plane),
                                 h.begin() + std::ptrdiff_t(first * plane + count));
    };
    const std::vector<double> ue = extended_of(u0), fe = extended_of(f0);
    const std::vector<double> ub(ue.begin() + std::ptrdiff_t(m.before),
                                 ue.begin() + std::ptrdiff_t(m.before + g.padded_size()));
    const std::vector<double> fb(fe.begin() + std::ptrdiff_t(m.before),
                                 fe.begin() + std::ptrdiff_t(m.before + g.padded_size()));
    auto u = upload(ub, m), v = upload(ub, m), f = upload(fb, m);
    // What the neighbour's cells hold when the margins are filled: the whole grid's, then.
    std::map<const double*, const std::vector<double>*> source{{u->data(), &ue}, {f->data(), &fe}};
    DeepSmoothing<double> deep;
    deep.extended = geo.extended;
    deep.margins = m;
    deep.depth = depth;
    int fills = 0;
    deep.fill = [&](double* x) {
      const std::vector<double>& h = *source.at(x);
      ++fills;
      be.copy_values(x - m.before, h.data(), m.before);
      be.copy_values(x + g.padded_size(), h.data() + m.before + g.padded_size(), m.after);
    };
    const HelmholtzOperator<double> op =
        HelmholtzOperator<double>(FieldSpace<double>(be, g, {}, m), d.faces, 0.0)
            .with_deep_smoothing(deep);
    double* cur = u->data();
    double* other = v->data();
    ASSERT_TRUE(op.smooths_deep(cur, other, f->data(), sweeps));
    EXPECT_TRUE(op.deep_fills_ghosts(sweeps));
    EXPECT_FALSE(op.smooths_deep(cur, other, f->data(), depth + 1));
    EXPECT_FALSE(op.smooths_deep(cur, upload(ub, {})->data(), f->data(), sweeps));
    ASSERT_TRUE(op.fill_margins(f->data()));
    if (measure) {
      double norm = 0;
      ASSERT_TRUE(op.smooth_measuring_residual(&cur, &other, f->data(), weights, sweeps,
                                               BoundaryMode::Deck, &norm));
      EXPECT_EQ(cur, v->data()) << "the iterate moves to the other buffer";
      block_squares += norm * norm;
    } else {
      op.smooth(&cur, &other, f->data(), weights, sweeps, false, BoundaryMode::Deck);
    }
    EXPECT_EQ(fills, 2);  // the source's, then the iterate's
    std::vector<double> block(g.padded_size());
    be.synchronize();
    be.copy_values(block.data(), cur, block.size());
    be.synchronize();
    int differing = 0;
    // The block and its ghost plane on the other block's side.
    for (int k = r == 0 ? 0 : -1; k < (r == 0 ? g.nz + 1 : g.nz); ++k)
      for (int j = 0; j < g.ny; ++j)
        for (int i = 0; i < g.nx; ++i) {
          const double a = block[std::size_t(g.index(i, j, k))];
          const double b = whole[std::size_t(global.index(i, j, d.block.offset[2] + k))];
          differing += std::memcmp(&a, &b, sizeof a) != 0;
        }
    EXPECT_EQ(differing, 0) << "block " << r << " of " << global.nx << "x" << global.ny << "x"
                            << global.nz;
  }
  if (measure) {
    EXPECT_GT(whole_norm, 0.0);
    EXPECT_NEAR(std::sqrt(block_squares), whole_norm, 1e-12 * whole_norm);
  }
}

TEST(Margins, DeepSmoothingIsTheWholeGridsCpu) {
  auto cpu = make_backend<double>(BackendKind::Cpu, {});
  deep_smoothing_is_the_whole_grids(*cpu, grid3(12, 10, 16), false);
}

// The GPU's fused passes on the extended grid (fused down to any size here), with and without
// the residual measured in them.
TEST(Margins, DeepSmoothingIsTheWholeGridsCuda) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  BackendOptions o;
  o.fuse_min_cells = 1;
  auto gpu = make_backend<double>(BackendKind::Cuda, o);
  for (bool measure : {false, true}) {
    deep_smoothing_is_the_whole_grids(*gpu, grid3(40, 36, 64), measure);
    deep_smoothing_is_the_whole_grids(*gpu, grid3(12, 10, 16), measure);
  }
}

// Where the backend has no pass that measures (the CPU), the deep pass declines and leaves
// the fields as they were.
TEST(Margins, MeasuringPassDeclinesWithoutOne) {
  auto cpu = make_backend<double>(BackendKind::Cpu, {});
  const GridDesc global = grid3(8, 8, 12);
  const Domain d = block_domain(global, faces(), {1, 1, 2}, {0, 0, 0}, 0);
  const DeepHaloGeometry geo = deep_halo_geometry(d, 4);
  DeepSmoothing<double> deep;
  deep.extended = geo.extended;
  ASSERT_TRUE(stream_margins(geo, &deep.margins));
  deep.depth = 4;
  deep.fill = [](double*) {};
  const HelmholtzOperator<double> op =
      HelmholtzOperator<double>(FieldSpace<double>(*cpu, d.local, {}, deep.margins), d.faces, 0.0)
          .with_deep_smoothing(deep);
  auto u = op.space().allocate(), v = op.space().allocate();
  double* cur = u->data();
  double* other = v->data();
  double norm = -1;
  EXPECT_FALSE(
      op.smooth_measuring_residual(&cur, &other, nullptr, {0.8}, 3, BoundaryMode::Deck, &norm));
  EXPECT_EQ(cur, u->data());
  EXPECT_EQ(norm, -1.0);
}

}  // namespace
}  // namespace heatsolve
