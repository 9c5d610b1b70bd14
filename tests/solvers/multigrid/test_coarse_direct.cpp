// The coarsest level's direct solve (solvers/multigrid/coarse_direct.hpp): the probed matrix
// is A column by column, M r solves A e = r (singular: r's zero-mean part, e of zero mean),
// the device applies M with the CPU's bits, and hierarchies pick it where the coarsest level
// is small.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "solvers/multigrid/coarse_direct.hpp"
#include "solvers/multigrid/multigrid.hpp"

namespace heatsolve {
namespace {

struct Case {
  std::string name;
  int dims, nx, ny, nz;
  BoundaryType x_faces, others;
  double sigma;
};

// Periodic axes of lengths 2, 4, 5 and 6 cross the colouring's wrap-around rules.
const Case kCases[] = {
    {"dirichlet_2x2x2", 3, 2, 2, 2, BoundaryType::Dirichlet, BoundaryType::Dirichlet, 0.0},
    {"mixed_3x5x4", 3, 3, 5, 4, BoundaryType::Dirichlet, BoundaryType::Neumann, 0.0},
    {"convective_shifted_7x3x2", 3, 7, 3, 2, BoundaryType::Convective, BoundaryType::Neumann, 2.5},
    {"periodic_4x4x4", 3, 4, 4, 4, BoundaryType::Dirichlet, BoundaryType::Periodic, 0.0},
    {"periodic_5x6_2d", 2, 5, 6, 1, BoundaryType::Periodic, BoundaryType::Periodic, 0.3},
    {"periodic_6x2x6", 3, 6, 2, 6, BoundaryType::Periodic, BoundaryType::Periodic, 1.0},
    {"neumann_2x2x2_singular", 3, 2, 2, 2, BoundaryType::Neumann, BoundaryType::Neumann, 0.0},
    {"periodic_6x6x6_singular", 3, 6, 6, 6, BoundaryType::Periodic, BoundaryType::Periodic, 0.0},
    {"neumann_8x8x4_singular", 3, 8, 8, 4, BoundaryType::Neumann, BoundaryType::Neumann, 0.0},
};

template <typename T>
HelmholtzOperator<T> make_operator(Backend<T>& backend, const Case& c) {
  GridDesc g;
  g.dims = c.dims;
  g.nx = c.nx;
  g.ny = c.ny;
  g.nz = c.dims == 3 ? c.nz : 1;
  g.hx = 0.3;
  g.hy = 0.2;
  g.hz = c.dims == 3 ? 0.25 : 1.0;
  BoundaryFaces faces{};
  for (FaceBC& f : faces) f = FaceBC{c.others, 0.0};
  faces[0] = faces[1] = FaceBC{c.x_faces, 0.0};
  if (c.x_faces == BoundaryType::Convective)  // ambient 0, h = 3 W/(m^2 K)
    faces[0].coeff = faces[1].coeff = 3.0;
  return HelmholtzOperator<T>(FieldSpace<T>(backend, g), faces, c.sigma, 1.7);
}

// A's column j by one application per unit vector.
template <typename T>
std::vector<double> columns_one_by_one(const HelmholtzOperator<T>& op) {
  const GridDesc& g = op.grid();
  const std::size_t n = g.interior_size();
  std::vector<T> v(g.padded_size()), y(g.padded_size());
  std::vector<double> a(n * n);
  for (std::size_t j = 0; j < n; ++j) {
    std::fill(v.begin(), v.end(), T(0));
    v[std::size_t(g.interior_index(std::int64_t(j)))] = T(1);
    op.apply(v.data(), y.data(), BoundaryMode::Homogeneous);
    for (std::size_t i = 0; i < n; ++i)
      a[j * n + i] = double(y[std::size_t(g.interior_index(std::int64_t(i)))]);
  }
  return a;
}

// The dense matrices number interior cells x fastest (GridDesc::interior_index).
TEST(CoarseDirect, InteriorCellsAreNumberedXFastest) {
  for (int dims : {2, 3}) {
    GridDesc g;
    g.dims = dims;
    g.nx = 5;
    g.ny = 3;
    g.nz = dims == 3 ? 4 : 1;
    std::int64_t c = 0;
    for (int k = 0; k < g.nz; ++k)
      for (int j = 0; j < g.ny; ++j)
        for (int i = 0; i < g.nx; ++i, ++c) ASSERT_EQ(g.interior_index(c), g.index(i, j, k));
    EXPECT_EQ(std::size_t(c), g.interior_size());
  }
}

TEST(CoarseDirect, ProbedMatrixIsTheOperatorColumnByColumn) {
  CpuBackend<double> backend;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const HelmholtzOperator<double> op = make_operator(backend, c);
    const std::vector<double> probed = coarse_direct::probe_matrix(op);
    const std::vector<double> exact = columns_one_by_one(op);
    ASSERT_EQ(probed.size(), exact.size());
    for (std::size_t e = 0; e < exact.size(); ++e) ASSERT_EQ(probed[e], exact[e]) << "entry " << e;
  }
}

// x = M r, then A x against r (singular: against r - mean(r), and mean(x) = 0).
template <typename T>
void expect_solves(const Case& c, double tolerance) {
  CpuBackend<T> backend;
  const HelmholtzOperator<T> op = make_operator(backend, c);
  const bool singular = op.singular();
  EXPECT_EQ(singular, c.name.find("singular") != std::string::npos);
  ASSERT_TRUE(DirectCoarseSolver<T>::suits(op));
  const DirectCoarseSolver<T> solver(op, singular);
  const GridDesc& g = op.grid();
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<T> r(g.padded_size(), T(0)), x(g.padded_size(), T(0)), ax(g.padded_size());
  double mean_r = 0;
  for (int k = 0; k < (g.dims == 3 ? g.nz : 1); ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) mean_r += double(r[g.index(i, j, k)] = T(dist(rng)));
  mean_r /= double(g.interior_size());
  solver.solve_add(r.data(), x.data());
  op.apply(x.data(), ax.data(), BoundaryMode::Homogeneous);
  double err = 0, norm = 0, mean_x = 0, size_x = 0;
  for (int k = 0; k < (g.dims == 3 ? g.nz : 1); ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const double want = double(r[g.index(i, j, k)]) - (singular ? mean_r : 0.0);
        err = std::max(err, std::abs(double(ax[g.index(i, j, k)]) - want));
        norm = std::max(norm, std::abs(want));
        mean_x += double(x[g.index(i, j, k)]);
        size_x = std::max(size_x, std::abs(double(x[g.index(i, j, k)])));
      }
  EXPECT_LE(err, tolerance * norm);
  if (singular) {
    EXPECT_GT(std::abs(mean_r), 1e-3);  // the projection had something to remove
    EXPECT_LE(std::abs(mean_x) / double(g.interior_size()), tolerance * size_x);
  }
}

TEST(CoarseDirect, SolvesEveryFaceTypeInDouble) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    expect_solves<double>(c, 1e-12);
  }
}

TEST(CoarseDirect, SolvesEveryFaceTypeInFloat) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    expect_solves<float>(c, 2e-5);
  }
}

TEST(CoarseDirect, RejectsLargeAndDistributedLevels) {
  CpuBackend<double> backend;
  Case big{"9x9x9", 3, 9, 9, 9, BoundaryType::Dirichlet, BoundaryType::Dirichlet, 0.0};
  const HelmholtzOperator<double> op = make_operator(backend, big);
  EXPECT_FALSE(DirectCoarseSolver<double>::suits(op));
  EXPECT_THROW(DirectCoarseSolver<double>(op, false), std::invalid_argument);
  Case small{"4x4x4", 3, 4, 4, 4, BoundaryType::Dirichlet, BoundaryType::Dirichlet, 0.0};
  const HelmholtzOperator<double> one = make_operator(backend, small);
  const HelmholtzOperator<double> summed(
      FieldSpace<double>(backend, one.grid(), [](double v) { return v; }),
      one.faces(BoundaryMode::Deck), 0.0);
  EXPECT_FALSE(DirectCoarseSolver<double>::suits(summed));
}

// A matrix singular beyond the constants is refused with the level's size in the message.
TEST(CoarseDirect, SingularMatrixIsAnError) {
  std::vector<double> a = {1, 1, 1, 1};  // rank one, and its null space is not the constants
  try {
    (void)coarse_direct::solution_matrix(a, 2, false);
    FAIL() << "no error";
  } catch (const SingularCoarseLevel& e) {
    EXPECT_NE(std::string(e.what()).find("(2 cells) is singular"), std::string::npos) << e.what();
  }
}

// A shift far below the Laplacian's scale makes an insulated box's coarsest operator singular to
// rounding although sigma != 0: the hierarchy keeps CG there.
TEST(CoarseDirect, NumericallySingularLevelFallsBackToCg) {
  CpuBackend<double> backend;
  Case c{"neumann_16^3", 3, 16, 16, 16, BoundaryType::Neumann, BoundaryType::Neumann, 1e-20};
  const HelmholtzOperator<double> op = make_operator(backend, c);
  ASSERT_FALSE(op.singular());
  Multigrid<double> mg(op, MultigridSettings{});
  EXPECT_EQ(mg.coarse_solver(), "cg");
}

// Hierarchies: direct where the coarsest level has at most 256 cells (32^3 -> 2^3), CG where
// it has more (14^3 -> 7^3); both converge (factor below 0.2 per cycle).
TEST(CoarseDirect, MultigridPicksItAndConverges) {
  CpuBackend<double> backend;
  for (int n : {32, 14}) {
    SCOPED_TRACE(n);
    Case c{"cube", 3, n, n, n, BoundaryType::Dirichlet, BoundaryType::Neumann, 0.0};
    const HelmholtzOperator<double> op = make_operator(backend, c);
    Multigrid<double> mg(op, MultigridSettings{});
    EXPECT_EQ(mg.coarse_solver(), n == 32 ? "direct" : "cg");
    const GridDesc& g = op.grid();
    std::vector<double> u(g.padded_size(), 0.0), f(g.padded_size(), 0.0), r(g.padded_size());
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) f[g.index(i, j, k)] = std::sin(0.4 * i + 0.3 * j) + 0.1 * k;
    const double r0 = std::sqrt(op.space().dot(f.data(), f.data()));
    for (int cycle = 0; cycle < 8; ++cycle) mg.cycle(u.data(), f.data());
    op.residual(u.data(), f.data(), r.data(), BoundaryMode::Deck);
    // Measured: 3.2e-7 (32^3) and 1.4e-8 (14^3), the same bits of history as with a CG
    // coarsest solve at 32^3 to the printed digits.
    EXPECT_LT(std::sqrt(op.space().dot(r.data(), r.data())), 1e-6 * r0);
  }
}

// The device applies M with the CPU's bits (float and double).
template <typename T>
void expect_device_bits() {
  auto cpu = make_backend<T>(BackendKind::Cpu, {});
  auto dev = make_backend<T>(BackendKind::Cuda, {});
  GridDesc g;
  g.dims = 3;
  g.nx = 7;
  g.ny = 6;
  g.nz = 5;  // 210 cells: rows past one block's width loop
  const std::size_t n = g.interior_size();
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<T> m(n * n), r(g.padded_size()), x(g.padded_size());
  for (T& v : m) v = T(dist(rng));
  for (T& v : r) v = T(dist(rng));
  for (T& v : x) v = T(dist(rng));
  std::vector<T> want = x, got(g.padded_size());
  cpu->dense_apply_add(m.data(), r.data(), want.data(), g);
  auto dm = dev->allocate(m.size()), dr = dev->allocate(r.size()), dx = dev->allocate(x.size());
  dm->copy_from_host(m.data());
  dr->copy_from_host(r.data());
  dx->copy_from_host(x.data());
  dev->dense_apply_add(dm->data(), dr->data(), dx->data(), g);
  dx->copy_to_host(got.data());
  for (std::size_t e = 0; e < got.size(); ++e) ASSERT_EQ(got[e], want[e]) << "element " << e;
}

TEST(CoarseDirectCuda, DenseApplyMatchesCpuBitwise) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  expect_device_bits<double>();
  expect_device_bits<float>();
}

}  // namespace
}  // namespace heatsolve
