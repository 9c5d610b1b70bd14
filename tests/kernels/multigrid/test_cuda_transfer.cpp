// The device's multigrid transfers (restriction, the fused residual restriction with and
// without face rules and by plane ranges, prolongation, full multigrid's interpolation, the
// mixed-precision conversions, Backend::dot) against the CPU reference on random fields (odd
// and even coarse sizes, anisotropic ratios, 2D), float and double; they skip themselves
// without a CUDA device. The file compiles without CUDA too.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/grid.hpp"
#include "core/multigrid.hpp"
#include "kernels/backend.hpp"
#include "kernels/multigrid/interpolation.hpp"
#include "kernels/stencil/separable_fill.hpp"
#include "kernels/stencil/source.hpp"
#include "tests/kernels/multigrid/transfer_cases.hpp"
#include "tests/kernels/random_field.hpp"

#ifdef HEATSOLVE_HAVE_CUDA
#include "kernels/multigrid/cuda/transfer.cuh"
#endif

namespace heatsolve {
namespace {

using namespace transfer_cases;

#define SKIP_WITHOUT_GPU()                                                    \
  do {                                                                        \
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available"; \
  } while (0)

template <typename T>
double near_tol() {
  return sizeof(T) == sizeof(float) ? 1e-6 : 1e-14;
}

// Max |got - want| / max(1, |want|) over every padded cell (ghosts must match too).
template <typename T>
double max_rel(const std::vector<T>& got, const std::vector<T>& want, std::size_t* where) {
  double worst = 0;
  for (std::size_t n = 0; n < want.size(); ++n) {
    const double e =
        std::abs(double(got[n]) - double(want[n])) / std::max(1.0, std::abs(double(want[n])));
    if (!(e <= worst)) {
      worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
      *where = n;
    }
  }
  return worst;
}

template <typename T>
class MultigridTransferCuda : public ::testing::Test {};
TYPED_TEST_SUITE(MultigridTransferCuda, Precisions);

TYPED_TEST(MultigridTransferCuda, RestrictMatchesCpu) {
  using T = TypeParam;
  SKIP_WITHOUT_GPU();
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  auto dev = make_backend<T>(BackendKind::Cuda, {});
  unsigned seed = 100;
  for (const Level& l : random_levels()) {
    SCOPED_TRACE(l.name);
    const std::vector<T> fine = random_field<T>(l.fine.padded_size(), ++seed);
    const std::vector<T> coarse0 = random_field<T>(l.coarse.padded_size(), ++seed);
    std::vector<T> want = coarse0, got(coarse0.size());
    cpu->restrict_average(fine.data(), l.fine, want.data(), l.coarse, l.ratio);
    auto df = dev->allocate(fine.size()), dc = dev->allocate(coarse0.size());
    df->copy_from_host(fine.data());
    dc->copy_from_host(coarse0.data());
    dev->restrict_average(df->data(), l.fine, dc->data(), l.coarse, l.ratio);
    dc->copy_to_host(got.data());
    std::size_t at = 0;
    EXPECT_LE(max_rel(got, want, &at), near_tol<T>())
        << "index " << at << " got " << got[at] << " want " << want[at];
  }
}

// The residual restricted without storing it (Backend::stencil_restrict): the device's fused
// kernel gives the bits of its own sweep and restriction, with a stored source and without;
// and its squared norm (Backend::stencil_square_sum) the stored residual's dot product.
TYPED_TEST(MultigridTransferCuda, FusedResidualRestrictionIsTheTwoPasses) {
  using T = TypeParam;
  SKIP_WITHOUT_GPU();
  auto dev = make_backend<T>(BackendKind::Cuda, {});
  unsigned seed = 150;
  for (const Level& l : random_levels()) {
    for (const bool source : {true, false}) {
      SCOPED_TRACE(l.name + (source ? " with a source" : " without"));
      dev->prepare(l.fine);
      const std::vector<T> u = random_field<T>(l.fine.padded_size(), ++seed);
      const std::vector<T> f = random_field<T>(l.fine.padded_size(), ++seed);
      const StencilCoeffs<T> c = residual_like<T>();
      auto du = dev->allocate(u.size()), df = dev->allocate(f.size());
      auto r = dev->allocate(u.size()), want = dev->allocate(l.coarse.padded_size()),
           got = dev->allocate(l.coarse.padded_size());
      du->copy_from_host(u.data());
      df->copy_from_host(f.data());
      const T* fp = source ? df->data() : nullptr;
      dev->stencil(du->data(), r->data(), fp, l.fine, c);
      dev->restrict_average(r->data(), l.fine, want->data(), l.coarse, l.ratio);
      dev->stencil_restrict(du->data(), fp, l.fine, c, exchange_faces(), got->data(), l.coarse,
                            l.ratio, nullptr);
      // The squared norm without storing it: the stored values' dot, summed in another order.
      const double stored = dev->dot(r->data(), r->data(), l.fine);
      const double fused = dev->stencil_square_sum(du->data(), fp, l.fine, c, nullptr);
      EXPECT_GT(stored, 0.0);
      EXPECT_NEAR(fused, stored, 1e-13 * stored);
      std::vector<T> w(l.coarse.padded_size()), g(w.size());
      want->copy_to_host(w.data());
      got->copy_to_host(g.data());
      for_interior(l.coarse, [&](int i, int j, int k, std::int64_t idx) {
        ASSERT_EQ(g[idx], w[idx]) << "coarse cell " << i << "," << j << "," << k;
      });
    }
  }
}

TYPED_TEST(MultigridTransferCuda, RestrictionPlaneRangesTileTheWhole) {
  SKIP_WITHOUT_GPU();
  auto dev = make_backend<TypeParam>(BackendKind::Cuda, {});
  check_restriction_plane_ranges(*dev);
}

// The residual restricted with the faces' rules applied as the kernel reads u
// (Backend::stencil_restrict with rule faces): the bits of apply_boundary, the stored sweep
// and restrict_average, with u's ghosts NaN on every face the rules cover (never read), on
// the thread-per-cell and the streaming kernels, with every face type, the source stored,
// generated from its separable form and none.
TYPED_TEST(MultigridTransferCuda, FusedResidualRestrictionAppliesTheFaces) {
  using T = TypeParam;
  SKIP_WITHOUT_GPU();
  auto dev = make_backend<T>(BackendKind::Cuda, {});
  const auto face = [](BoundaryType t, double v, double coeff = 0) { return FaceBC{t, v, coeff}; };
  using BT = BoundaryType;
  struct Faces {
    std::string name;
    BoundaryFaces bc;
  };
  const Faces cases[] = {
      {"dirichlet",
       {face(BT::Dirichlet, 0.3), face(BT::Dirichlet, -1.1), face(BT::Dirichlet, 0),
        face(BT::Dirichlet, 2.5), face(BT::Dirichlet, 0.7), face(BT::Dirichlet, 0)}},
      {"mixed",
       {face(BT::Neumann, 1.5), face(BT::Robin, 0.4, -0.6), face(BT::Fixed, 0.2),
        face(BT::Exchange, 0), face(BT::Dirichlet, -0.8), face(BT::Neumann, -2.0)}},
      {"periodic x",
       {face(BT::Periodic, 0), face(BT::Periodic, 0), face(BT::Neumann, 0),
        face(BT::Dirichlet, 1.0), face(BT::Exchange, 0), face(BT::Fixed, 0.5)}},
  };
  std::vector<Level> levels = random_levels();
  levels.push_back(make_level("3d_222_streamed_square", 3, 128, 128, 20, {2, 2, 2}));
  unsigned seed = 160;
  for (const Level& l : levels) {
    const GridDesc& g = l.fine;
    const std::size_t n = g.padded_size();
    SeparableSource<T> form;
    const std::vector<T> f = random_separable<T>(g, &form, &seed);
    auto stored = dev->allocate(n), described = dev->allocate(n);
    stored->copy_from_host(f.data());
    described->copy_from_host(f.data());
    dev->describe_source(described->data(), g, &form);
    dev->prepare_untimed(g);
    for (const Faces& fc : cases) {
      const std::vector<T> u = random_field<T>(n, ++seed);
      std::vector<T> poisoned = u;  // NaN in the ghosts of every face with a rule
      const int nz = g.dims == 3 ? g.nz : 1, kg = g.dims == 3 ? 1 : 0;
      for (int k = -kg; k < nz + kg; ++k)
        for (int j = -1; j <= g.ny; ++j)
          for (int i = -1; i <= g.nx; ++i) {
            const int side = i < 0       ? 0
                             : i >= g.nx ? 1
                             : j < 0     ? 2
                             : j >= g.ny ? 3
                             : k < 0     ? 4
                             : k >= nz   ? 5
                                         : -1;
            if (side < 0) continue;
            const BT t = fc.bc[std::size_t(side)].type;
            if (t != BT::Exchange && t != BT::Periodic)
              poisoned[std::size_t(g.index(i, j, k))] = std::numeric_limits<T>::quiet_NaN();
          }
      auto du = dev->allocate(n), dp = dev->allocate(n), r = dev->allocate(n);
      auto want = dev->allocate(l.coarse.padded_size()), got = dev->allocate(want->size());
      du->copy_from_host(u.data());
      dp->copy_from_host(poisoned.data());
      dev->apply_boundary(du->data(), g, fc.bc);
      const StencilCoeffs<T> c = residual_like<T>();
      for (const int source : {0, 1, 2}) {
        SCOPED_TRACE(l.name + " " + fc.name +
                     (source == 0   ? " no source"
                      : source == 1 ? " stored"
                                    : " generated"));
        const T* fp = source == 0 ? nullptr : source == 1 ? stored->data() : described->data();
        dev->stencil(du->data(), r->data(), source == 0 ? nullptr : stored->data(), g, c);
        dev->restrict_average(r->data(), g, want->data(), l.coarse, l.ratio);
        dev->stencil_restrict(dp->data(), fp, g, c, fc.bc, got->data(), l.coarse, l.ratio, nullptr);
        std::vector<T> w(want->size()), gv(w.size());
        want->copy_to_host(w.data());
        got->copy_to_host(gv.data());
        for_interior(l.coarse, [&](int i, int j, int k, std::int64_t idx) {
          ASSERT_FALSE(std::isnan(double(w[idx])));
          ASSERT_EQ(gv[idx], w[idx]) << "coarse cell " << i << "," << j << "," << k;
        });
      }
    }
    dev->describe_source(described->data(), g, nullptr);
  }
}

// The residual's squared norm (Backend::stencil_square_sum) on shapes at the edges of the
// device's 3D kernel (kernels/reduction/cuda/reduction_grid.cu: warps of 32 columns, blocks of
// 8 rows, chunks of 8 planes or more, 4 planes a step): one cell, one column, rows of 1, 31, 33
// and 64 cells, partial row blocks, chunks that end within a step and a short last chunk; 2D
// too. Against the CPU's value, the device's stored residual's dot product (the same values,
// summed in another order), itself run to run (bitwise), and with the source stored, generated
// from its separable form (the bits of the stored one) and none.
TYPED_TEST(MultigridTransferCuda, ResidualNormOnEdgeShapes) {
  using T = TypeParam;
  SKIP_WITHOUT_GPU();
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  auto dev = make_backend<T>(BackendKind::Cuda, {});
  const double cpu_tol = sizeof(T) == sizeof(float) ? 1e-5 : 1e-13;
  const std::array<int, 4> shapes[] = {
      {3, 1, 1, 1},     {3, 3, 3, 3},   {3, 1, 7, 9},   {3, 2, 1, 16},   {3, 5, 4, 15},
      {3, 35, 10, 16},  {3, 33, 9, 17}, {3, 31, 8, 65}, {3, 64, 16, 64}, {3, 40, 17, 24},
      {3, 96, 40, 100}, {2, 37, 5, 1},  {2, 1, 1, 1},
  };
  unsigned seed = 170;
  for (const auto& s : shapes) {
    GridDesc g;
    g.dims = s[0];
    g.nx = s[1];
    g.ny = s[2];
    g.nz = s[3];
    const std::string name = std::to_string(g.dims) + "d " + std::to_string(g.nx) + "x" +
                             std::to_string(g.ny) + "x" + std::to_string(g.nz);
    const std::size_t n = g.padded_size();
    SeparableSource<T> form;
    const std::vector<T> f = random_separable<T>(g, &form, &seed);
    const std::vector<T> u = random_field<T>(n, ++seed);
    const StencilCoeffs<T> c = residual_like<T>();
    auto du = dev->allocate(n), stored = dev->allocate(n), described = dev->allocate(n),
         r = dev->allocate(n);
    du->copy_from_host(u.data());
    stored->copy_from_host(f.data());
    described->copy_from_host(f.data());
    dev->describe_source(described->data(), g, &form);
    dev->prepare_untimed(g);
    for (const bool source : {true, false}) {
      SCOPED_TRACE(name + (source ? " with a source" : " without"));
      const T* fp = source ? stored->data() : nullptr;
      const double want =
          cpu->stencil_square_sum(u.data(), source ? f.data() : nullptr, g, c, nullptr);
      dev->stencil(du->data(), r->data(), fp, g, c);
      const double dot = dev->dot(r->data(), r->data(), g);
      const double got = dev->stencil_square_sum(du->data(), fp, g, c, nullptr);
      EXPECT_GT(want, 0.0);
      EXPECT_NEAR(got, want, cpu_tol * want);
      EXPECT_NEAR(got, dot, 1e-13 * dot);
      EXPECT_EQ(got, dev->stencil_square_sum(du->data(), fp, g, c, nullptr));
      if (source)
        EXPECT_EQ(dev->stencil_square_sum(du->data(), described->data(), g, c, nullptr), got)
            << "generated source";
    }
    dev->describe_source(described->data(), g, nullptr);
  }
}

// The CPU's and the device's prolong_add of the same random coarse field (edge and corner
// ghosts NaN: read by neither order) onto the same random fine field: {got, want}.
template <typename T>
std::pair<std::vector<T>, std::vector<T>> prolong_on_both(Backend<T>& cpu, Backend<T>& dev,
                                                          const Level& l, Prolongation p,
                                                          unsigned* seed) {
  std::vector<T> coarse = random_field<T>(l.coarse.padded_size(), ++*seed);
  poison_edges(coarse, l.coarse);
  const std::vector<T> fine0 = random_field<T>(l.fine.padded_size(), ++*seed);
  std::vector<T> want = fine0, got(fine0.size());
  cpu.prolong_add(coarse.data(), l.coarse, want.data(), l.fine, l.ratio, p);
  auto dc = dev.allocate(coarse.size()), df = dev.allocate(fine0.size());
  dc->copy_from_host(coarse.data());
  df->copy_from_host(fine0.data());
  dev.prolong_add(dc->data(), l.coarse, df->data(), l.fine, l.ratio, p);
  df->copy_to_host(got.data());
  return {std::move(got), std::move(want)};
}

TYPED_TEST(MultigridTransferCuda, ProlongMatchesCpu) {
  using T = TypeParam;
  SKIP_WITHOUT_GPU();
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  auto dev = make_backend<T>(BackendKind::Cuda, {});
  unsigned seed = 200;
  for (const Level& l : random_levels()) {
    for (Prolongation p : {Prolongation::Constant, Prolongation::Linear}) {
      SCOPED_TRACE(l.name + (p == Prolongation::Linear ? " linear" : " constant"));
      const auto both = prolong_on_both<T>(*cpu, *dev, l, p, &seed);
      const std::vector<T>& got = both.first;
      const std::vector<T>& want = both.second;
      std::size_t at = 0;
      EXPECT_LE(max_rel(got, want, &at), near_tol<T>())
          << "index " << at << " got " << got[at] << " want " << want[at];
    }
  }
}

// The device's prolongation gives the CPU's bits on every fine cell, both orders, on 3D grids
// halved on every axis with odd coarse sizes, wide and flat.
TYPED_TEST(MultigridTransferCuda, ProlongationMatchesCpuBits) {
  using T = TypeParam;
  SKIP_WITHOUT_GPU();
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  auto dev = make_backend<T>(BackendKind::Cuda, {});
  const std::vector<Level> levels = {
      make_level("3d_222_odd", 3, 130, 132, 42, {2, 2, 2}),    // coarse 65 x 66 x 21
      make_level("3d_222_odd_y", 3, 134, 126, 52, {2, 2, 2}),  // coarse 67 x 63 x 26
      make_level("3d_222_flat", 3, 256, 64, 10, {2, 2, 2}),    // coarse 128 x 32 x 5
  };
  unsigned seed = 250;
  for (const Level& l : levels) {
    for (Prolongation p : {Prolongation::Constant, Prolongation::Linear}) {
      SCOPED_TRACE(l.name + (p == Prolongation::Linear ? " linear" : " constant"));
      const auto both = prolong_on_both<T>(*cpu, *dev, l, p, &seed);
      const std::vector<T>& got = both.first;
      const std::vector<T>& want = both.second;
      for_interior(l.fine, [&](int i, int j, int k, std::int64_t idx) {
        ASSERT_EQ(got[std::size_t(idx)], want[std::size_t(idx)])
            << "fine cell " << i << "," << j << "," << k;
      });
    }
  }
}

// The first padded cell whose bits differ (ghosts included), or -1.
template <typename T>
std::int64_t first_difference(const std::vector<T>& got, const std::vector<T>& want) {
  for (std::size_t n = 0; n < want.size(); ++n)
    if (std::memcmp(&got[n], &want[n], sizeof(T)) != 0) return std::int64_t(n);
  return -1;
}

// Every level shape, and two whose cubic interpolation crosses the device's chunks of 64 coarse
// planes (kernels/multigrid/cuda/transfer.cu): halved z, 80 coarse planes; kept z, 130.
std::vector<Level> interpolation_levels() {
  std::vector<Level> levels = every_level();
  levels.push_back(make_level("3d_222_chunks", 3, 64, 64, 160, {2, 2, 2}));
  levels.push_back(make_level("3d_221_chunks", 3, 34, 18, 130, {2, 2, 1}));
  return levels;
}

// The CPU's interpolation and the device's of the same random coarse field (edge and corner
// ghosts NaN: never read, synthesised from the face ghosts) onto the same random fine field;
// `run` calls the device's on (coarse, fine) pointers of `dev`.
template <typename T, class Run>
void expect_interpolation_bits(Backend<T>& cpu, Backend<T>& dev, const Level& l, Prolongation p,
                               unsigned seed, Run&& run) {
  std::vector<T> coarse = random_field<T>(l.coarse.padded_size(), seed);
  poison_edges(coarse, l.coarse);
  const std::vector<T> fine0 = random_field<T>(l.fine.padded_size(), seed + 1000);
  std::vector<T> want = fine0, got(fine0.size());
  cpu.interpolate(coarse.data(), l.coarse, want.data(), l.fine, l.ratio, p);
  auto dc = dev.allocate(coarse.size()), df = dev.allocate(fine0.size());
  dc->copy_from_host(coarse.data());
  df->copy_from_host(fine0.data());
  run(dc->data(), df->data());
  df->copy_to_host(got.data());
  const std::int64_t at = first_difference(got, want);
  EXPECT_EQ(at, -1) << "got " << got[std::size_t(std::max<std::int64_t>(at, 0))] << " want "
                    << want[std::size_t(std::max<std::int64_t>(at, 0))];
}

// Full multigrid's interpolation, every order: the device's bits are the CPU's (both
// mg::interpolated's products and sums, rounded one by one; the cubic one in three one-axis
// passes on both), edge and corner ghosts synthesised, the ghosts of the fine field untouched.
TYPED_TEST(MultigridTransferCuda, InterpolateMatchesCpu) {
  using T = TypeParam;
  SKIP_WITHOUT_GPU();
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  auto dev = make_backend<T>(BackendKind::Cuda, {});
  unsigned seed = 300;
  for (const Level& l : interpolation_levels()) {
    for (Prolongation p : {Prolongation::Constant, Prolongation::Linear, Prolongation::Cubic}) {
      SCOPED_TRACE(l.name + " " + std::to_string(int(p)));
      expect_interpolation_bits<T>(*cpu, *dev, l, p, ++seed, [&](const T* coarse, T* fine) {
        dev->interpolate(coarse, l.coarse, fine, l.fine, l.ratio, p);
      });
    }
  }
}

#ifdef HEATSOLVE_HAVE_CUDA
// The device's cubic interpolation runs over chunks of coarse planes, and of coarse rows where
// a chunk's scratch passes its bound: the CPU's bits across every chunk border, with chunks of
// 3 planes; of 1 plane and at most 5 rows (uneven ones too: 13 rows make 4, 4, 4, 1); and of
// one row of one plane.
TYPED_TEST(MultigridTransferCuda, CubicInterpolationChunksMatchCpu) {
  using T = TypeParam;
  SKIP_WITHOUT_GPU();
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  auto dev = make_backend<T>(BackendKind::Cuda, {});
  unsigned seed = 400;
  for (const Level& l : interpolation_levels()) {
    // The scratch bound of a chunk of one plane and 5 rows: the planes and rows its stencils
    // read (two past each side of a halved axis), and its fine rows.
    const std::size_t sy = l.ratio[1] == 2, sz = l.fine.dims == 3 && l.ratio[2] == 2;
    const std::size_t five_rows = (1 + 4 * sz) * (5 + 4 * sy + (5 << sy)) * std::size_t(l.fine.nx);
    const cuda::InterpolateChunking chunkings[] = {
        {3, std::size_t(1) << 30}, {1, five_rows}, {1, 1}};
    for (const cuda::InterpolateChunking& c : chunkings) {
      SCOPED_TRACE(l.name + " planes " + std::to_string(c.planes) + " doubles " +
                   std::to_string(c.doubles));
      expect_interpolation_bits<T>(
          *cpu, *dev, l, Prolongation::Cubic, ++seed, [&](const T* coarse, T* fine) {
            cuda::launch_interpolate<T>(coarse, l.coarse, fine, l.fine, l.ratio,
                                        Prolongation::Cubic, nullptr, c);
          });
    }
  }
}
#endif

// Mixed precision's conversions (Backend::to_float, add_float) against the CPU's.
TEST(MixedPrecisionCuda, ConversionsMatchCpu) {
  SKIP_WITHOUT_GPU();
  auto cpu = make_backend<double>(BackendKind::Cpu, {});
  auto dev = make_backend<double>(BackendKind::Cuda, {});
  auto dev_f = make_backend<float>(BackendKind::Cuda, {});
  const std::size_t n = 100003;
  const std::vector<double> src = random_field<double>(n, 7);
  const std::vector<double> dst0 = random_field<double>(n, 8);
  std::vector<float> want_f(n), got_f(n);
  cpu->to_float(src.data(), want_f.data(), n, 3.5e-3);
  auto ds = dev->allocate(n), dd = dev->allocate(n);
  auto df = dev_f->allocate(n);
  ds->copy_from_host(src.data());
  dev->to_float(ds->data(), df->data(), n, 3.5e-3);
  df->copy_to_host(got_f.data());
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got_f[i], want_f[i]) << i;
  for (const double a : {0.0, 1.0}) {
    std::vector<double> want = dst0, got(n);
    cpu->add_float(want.data(), a, want_f.data(), 1.0 / 3.5e-3, n);
    dd->copy_from_host(dst0.data());
    dev->add_float(dd->data(), a, df->data(), 1.0 / 3.5e-3, n);
    dd->copy_to_host(got.data());
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << "a " << a << " at " << i;
  }
}

TYPED_TEST(MultigridTransferCuda, DotMatchesCpu) {
  using T = TypeParam;
  SKIP_WITHOUT_GPU();
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  auto dev = make_backend<T>(BackendKind::Cuda, {});
  unsigned seed = 300;
  for (const Level& l : random_levels()) {
    for (const GridDesc& g : {l.fine, l.coarse}) {
      SCOPED_TRACE(l.name + " " + std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" +
                   std::to_string(g.nz));
      // One extra element: the pointers shifted by one have different 16-byte phases
      // (scalar-load path of the reduction).
      const std::size_t n = g.padded_size() + 1;
      const std::vector<T> a = random_field<T>(n, ++seed), b = random_field<T>(n, ++seed);
      auto da = dev->allocate(n), db = dev->allocate(n);
      da->copy_from_host(a.data());
      db->copy_from_host(b.data());
      double mag = 0;
      for_interior(g, [&](int, int, int, std::int64_t idx) {
        mag += std::abs(double(a[idx]) * double(b[idx]));
      });
      const double bound = 1e-13 * std::max(1.0, mag);
      const double want = cpu->dot(a.data(), b.data(), g);
      const double got = dev->dot(da->data(), db->data(), g);
      EXPECT_NEAR(got, want, bound);
      EXPECT_EQ(got, dev->dot(da->data(), db->data(), g));  // deterministic
      EXPECT_NEAR(dev->dot(da->data() + 1, db->data(), g), cpu->dot(a.data() + 1, b.data(), g),
                  bound * 4);
      EXPECT_NEAR(dev->dot(da->data(), da->data(), g), cpu->dot(a.data(), a.data(), g), bound * 4);
    }
  }
}

TYPED_TEST(MultigridTransferCuda, RejectsMismatchedGrids) {
  using T = TypeParam;
  SKIP_WITHOUT_GPU();
  auto dev = make_backend<T>(BackendKind::Cuda, {});
  const Level l = make_level("3d", 3, 8, 8, 8, {2, 2, 2});
  auto df = dev->allocate(l.fine.padded_size()), dc = dev->allocate(l.fine.padded_size());
  const Ratio bad_ratio{3, 2, 2}, wrong{2, 1, 2};  // 8 != 1 * 4 along y
  EXPECT_THROW(dev->restrict_average(df->data(), l.fine, dc->data(), l.coarse, bad_ratio),
               std::invalid_argument);
  EXPECT_THROW(
      dev->prolong_add(dc->data(), l.coarse, df->data(), l.fine, wrong, Prolongation::Linear),
      std::invalid_argument);
}

}  // namespace
}  // namespace heatsolve