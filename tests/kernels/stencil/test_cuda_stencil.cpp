// GPU tests of the CUDA backend: every stencil variant against the CPU reference after many
// steps, sources, ghost filling, slab regions, reductions, chunking rules and "auto"
// selection (every compiled block shape and the variants' edges: test_cuda_stencil_edges.cpp). They
// skip themselves on machines without a CUDA device; the generic part compiles without CUDA too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "app/bench/bench.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/stencil/coefficients.hpp"
#include "solvers/solver.hpp"
#include "tests/kernels/random_field.hpp"
#include "tests/kernels/stencil/cuda_stencil_cases.hpp"
#include "tests/kernels/stencil/sweep_cases.hpp"

#ifdef HEATSOLVE_HAVE_CUDA
#include "app/bench/cuda/stencil_bench.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/device.hpp"
#include "kernels/stencil/cuda/chunking.hpp"
#include "kernels/stencil/cuda/stencil_launch.cuh"
#endif

namespace heatsolve {
namespace {

using namespace stencil_cases;

// Interior cells of a and b whose bits differ.
template <typename T>
long long differing_cells(const std::vector<T>& a, const std::vector<T>& b, const GridDesc& g) {
  long long n = 0;
  for (int k = 0; k < (g.dims == 3 ? g.nz : 1); ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const std::int64_t q = g.index(i, j, g.dims == 3 ? k : 0);
        n += std::memcmp(&a[q], &b[q], sizeof(T)) != 0;
      }
  return n;
}

template <typename T>
void check_variants() {
  SKIP_WITHOUT_GPU();
  for (int dims : {2, 3}) {
    const GridDesc g = make_grid(dims);
    for (const BcCase& bc : bc_cases()) {
      std::vector<T> first;  // the first variant's result: every variant must give its bits
      for (const std::string& v : kVariants) {
        SCOPED_TRACE(v + " " + std::to_string(dims) + "D " + bc.name);
        BackendOptions o;
        o.kernel = v;
        auto dev = make_backend<T>(BackendKind::Cuda, o);
        EXPECT_EQ(dev->prepare(g), v);
        std::string where;
        std::vector<T> got;
        const double err = compare_steps<T>(
            *dev, g, bc.faces, steps(50), 17u + dims,
            [&](const T* u, T* out, const T* f, const StencilCoeffs<T>& c) {
              dev->stencil(u, out, f, g, c);
            },
            &where, &got);
        EXPECT_LE(err, tolerance<T>()) << "worst at " << where;
        if (first.empty())
          first = got;
        else
          EXPECT_EQ(differing_cells(got, first, g), 0) << "bits differ from " << kVariants[0];
      }
    }
  }
}

// A described source (Backend::describe_source) is generated inside the sweeps: every rung,
// the region sweeps, the rules-in-sweep path and the temporal passes must give the bits of the
// same values read from a stored field.
template <typename T>
void check_generated_source() {
  SKIP_WITHOUT_GPU();
  for (int dims : {2, 3}) {
    const GridDesc g = make_grid(dims);
    const std::size_t n = g.padded_size();
    const std::int64_t ss = dims == 3 ? g.stride_z() : g.stride_y();
    SeparableSource<T> form;
    form.offset = T(0.3);
    form.scale = T(-1.7);
    form.plane = random_field<T>(std::size_t(ss), 5u + dims);
    form.column = random_field<T>(std::size_t(dims == 3 ? g.nz : g.ny), 6u + dims);
    std::vector<T> field;
    fill_separable(field, form, g);
    const std::vector<T> u0 = random_field<T>(n, 7u + dims);
    const StencilCoeffs<T> c = heat_coeffs<T>(g, 1.0, 0.9 * stable_dt(g, 1.0));
    std::vector<std::string> kernels = kVariants;
    kernels.push_back("temporal");
    for (const std::string& v : kernels) {
      SCOPED_TRACE(v + " " + std::to_string(dims) + "D");
      BackendOptions o;
      o.kernel = v;
      auto dev = make_backend<T>(BackendKind::Cuda, o);
      auto described = dev->allocate(n), stored = dev->allocate(n), u = dev->allocate(n);
      auto a = dev->allocate(n), b = dev->allocate(n);
      described->copy_from_host(field.data());
      stored->copy_from_host(field.data());
      dev->describe_source(described->data(), g, &form);
      dev->prepare(g);
      const BoundaryFaces bc = bc_cases().front().faces;  // Dirichlet where not quick
      const auto same = [&](const char* what, auto&& run) {
        u->copy_from_host(u0.data());
        run(described->data(), a.get());
        u->copy_from_host(u0.data());
        run(stored->data(), b.get());
        dev->synchronize();
        std::vector<T> ga(n), gb(n);
        a->copy_to_host(ga.data());
        b->copy_to_host(gb.data());
        EXPECT_EQ(differing_cells(ga, gb, g), 0) << what << ": generated differs from stored";
      };
      same("stencil", [&](const T* f, Array<T>* out) {
        dev->apply_boundary(u->data(), g, bc);
        dev->stencil(u->data(), out->data(), f, g, c);
      });
      same("stencil_with_boundary", [&](const T* f, Array<T>* out) {
        dev->stencil_with_boundary(u->data(), out->data(), f, g, c, bc);
      });
      same("stencil_region", [&](const T* f, Array<T>* out) {
        dev->apply_boundary(u->data(), g, bc);
        const int axis = dims - 1, ns = dims == 3 ? g.nz : g.ny;
        CellRange lo, hi;
        lo.hi = hi.hi = {g.nx, g.ny, dims == 3 ? g.nz : 1};
        lo.hi[axis] = hi.lo[axis] = ns / 3;
        ASSERT_TRUE(dev->stencil_region(u->data(), out->data(), f, g, c, lo));
        ASSERT_TRUE(dev->stencil_region(u->data(), out->data(), f, g, c, hi));
      });
      if (v == "temporal")
        same("stencil_steps", [&](const T* f, Array<T>* out) {
          T* res = dev->stencil_steps(u->data(), out->data(), f, g, c, bc, 7);
          if (res != out->data()) out->copy_from(*u);
        });
    }
  }
}

// A described source whose strength changes (Backend::rescale_source: a deck table over time):
// the stored field then holds the new form's values, bit for bit a fresh fill's, and a sweep
// given it (generated by a device backend) gives the bits of a sweep reading a stored copy.
// The CPU backend refills the field in place; neither touches a field it holds no form for.
template <typename T>
void check_rescaled_source(BackendKind kind) {
  for (int dims : {2, 3}) {
    SCOPED_TRACE(std::to_string(dims) + "D");
    const GridDesc g = make_grid(dims);
    const std::size_t n = g.padded_size();
    const std::int64_t ss = dims == 3 ? g.stride_z() : g.stride_y();
    SeparableSource<T> form;
    form.offset = T(0.3);
    form.scale = T(-1.7);
    form.plane = random_field<T>(std::size_t(ss), 15u + dims);
    form.column = random_field<T>(std::size_t(dims == 3 ? g.nz : g.ny), 16u + dims);
    std::vector<T> field;
    fill_separable(field, form, g);
    auto be = make_backend<T>(kind, BackendOptions{});
    auto f = be->allocate(n), stored = be->allocate(n), u = be->allocate(n);
    auto a = be->allocate(n), b = be->allocate(n);
    f->copy_from_host(field.data());
    EXPECT_FALSE(be->rescale_source(f->data(), g, T(1), T(2))) << "no form described yet";
    be->describe_source(f->data(), g, &form);
    be->prepare(g);
    SeparableSource<T> next = form;
    next.offset = T(-0.6);
    next.scale = T(2.3);
    ASSERT_TRUE(be->rescale_source(f->data(), g, next.offset, next.scale));
    std::vector<T> want, got(n);
    fill_separable(want, next, g);
    be->synchronize();
    f->copy_to_host(got.data());
    EXPECT_EQ(differing_cells(got, want, g), 0) << "rescaled field differs from a fresh fill";
    stored->copy_from_host(want.data());
    const std::vector<T> u0 = random_field<T>(n, 17u + dims);
    const StencilCoeffs<T> c = heat_coeffs<T>(g, 1.0, 0.9 * stable_dt(g, 1.0));
    const BoundaryFaces bc = bc_cases().front().faces;
    for (auto [src, out] : {std::pair{f.get(), a.get()}, std::pair{stored.get(), b.get()}}) {
      u->copy_from_host(u0.data());
      be->apply_boundary(u->data(), g, bc);
      be->stencil(u->data(), out->data(), src->data(), g, c);
    }
    be->synchronize();
    std::vector<T> ga(n), gb(n);
    a->copy_to_host(ga.data());
    b->copy_to_host(gb.data());
    EXPECT_EQ(differing_cells(ga, gb, g), 0) << "a sweep of the rescaled source differs";
    GridDesc other = g;
    other.nx -= 1;
    EXPECT_FALSE(be->rescale_source(f->data(), other, T(0), T(1))) << "another grid's extents";
    be->describe_source(f->data(), g, nullptr);
    EXPECT_FALSE(be->rescale_source(f->data(), g, T(0), T(1))) << "a forgotten form";
  }
}

TEST(RescaledSource, CpuRefillsInPlaceFloat) {
  check_rescaled_source<float>(BackendKind::Cpu);
}
TEST(RescaledSource, CpuRefillsInPlaceDouble) {
  check_rescaled_source<double>(BackendKind::Cpu);
}
TEST(CudaStencil, RescaledSourceMatchesAFreshFillFloat) {
  SKIP_WITHOUT_GPU();
  check_rescaled_source<float>(BackendKind::Cuda);
}
TEST(CudaStencil, RescaledSourceMatchesAFreshFillDouble) {
  SKIP_WITHOUT_GPU();
  check_rescaled_source<double>(BackendKind::Cuda);
}

TEST(CudaStencil, GeneratedSourceMatchesStoredFloat) {
  check_generated_source<float>();
}
TEST(CudaStencil, GeneratedSourceMatchesStoredDouble) {
  check_generated_source<double>();
}

// One field described for two grids of different extents (a block's field and its deep-halo
// view where the margins start at the block, as on the first rank of a split): each grid's
// sweeps generate their own form, and forgetting one keeps the other. The stored field holds
// zeros, so a sweep that read it instead would differ.
TEST(CudaStencil, SourceDescribedForTwoGridsKeepsBoth) {
  using T = double;
  SKIP_WITHOUT_GPU();
  const GridDesc g = make_grid(3);
  GridDesc big = g;
  big.nz += 4;
  const auto form_of = [&](const GridDesc& grid, unsigned seed) {
    SeparableSource<T> f;
    f.offset = 0.3;
    f.scale = -1.7;
    f.plane = random_field<T>(std::size_t(grid.stride_z()), seed);
    f.column = random_field<T>(std::size_t(grid.nz), seed + 1);
    return f;
  };
  const SeparableSource<T> block_form = form_of(g, 31), big_form = form_of(big, 41);
  auto dev = make_backend<T>(BackendKind::Cuda, {});
  const std::size_t n = big.padded_size();
  auto field = dev->allocate(n), stored = dev->allocate(n), u = dev->allocate(n);
  auto a = dev->allocate(n), b = dev->allocate(n);
  u->copy_from_host(random_field<T>(n, 51).data());
  dev->describe_source(field->data(), g, &block_form);
  dev->describe_source(field->data(), big, &big_form);
  const StencilCoeffs<T> c = heat_coeffs<T>(g, 1.0, 0.9 * stable_dt(g, 1.0));
  const auto check = [&](const GridDesc& grid, const SeparableSource<T>* form, const char* what) {
    std::vector<T> values(n, T(0));
    if (form) {
      std::vector<T> filled;
      fill_separable(filled, *form, grid);
      std::copy(filled.begin(), filled.end(), values.begin());
    }
    stored->copy_from_host(values.data());
    dev->prepare(grid);
    dev->stencil(u->data(), a->data(), field->data(), grid, c);
    dev->stencil(u->data(), b->data(), stored->data(), grid, c);
    std::vector<T> ga(n), gb(n);
    a->copy_to_host(ga.data());
    b->copy_to_host(gb.data());
    EXPECT_EQ(differing_cells(ga, gb, grid), 0) << what;
  };
  check(g, &block_form, "the block");
  check(big, &big_form, "the larger grid");
  dev->describe_source(field->data(), big, nullptr);
  check(g, &block_form, "the block, the larger grid's form forgotten");
  check(big, nullptr, "the larger grid, its form forgotten: the stored zeros");
}

TEST(CudaStencil, EveryVariantMatchesCpuFloat) {
  check_variants<float>();
}
TEST(CudaStencil, EveryVariantMatchesCpuDouble) {
  check_variants<double>();
}

// Without a source (f == nullptr) too.
TEST(CudaStencil, NoSourceMatchesCpu) {
  SKIP_WITHOUT_GPU();
  for (int dims : {2, 3}) {
    const GridDesc g = make_grid(dims);
    for (const std::string& v : kVariants) {
      SCOPED_TRACE(v + " " + std::to_string(dims) + "D");
      BackendOptions o;
      o.kernel = v;
      auto dev = make_backend<double>(BackendKind::Cuda, o);
      CpuBackend<double> cpu;
      const std::size_t n = g.padded_size();
      std::vector<double> u = random_field<double>(n, 5), ref(n), got(n);
      const BoundaryFaces bc = bc_cases().back().faces;
      cpu_apply_boundary(u.data(), g, bc);
      const StencilCoeffs<double> c = jacobi_coeffs<double>(g);
      cpu_stencil(u.data(), ref.data(), static_cast<const double*>(nullptr), g, c);
      auto du = dev->allocate(n), dout = dev->allocate(n);
      du->copy_from_host(u.data());
      std::vector<double> poison(n, std::numeric_limits<double>::quiet_NaN());
      dout->copy_from_host(poison.data());
      dev->stencil(du->data(), dout->data(), nullptr, g, c);
      dout->copy_to_host(got.data());
      EXPECT_LE(max_rel_interior(got, ref, g), 1e-13);
    }
  }
}

TEST(CudaStencil, GhostFillMatchesCpu) {
  SKIP_WITHOUT_GPU();
  for (int dims : {2, 3})
    for (const BcCase& bc : bc_cases()) {
      SCOPED_TRACE(std::to_string(dims) + "D " + bc.name);
      const GridDesc g = make_grid(dims);
      auto dev = make_backend<double>(BackendKind::Cuda, {});
      const std::size_t n = g.padded_size();
      std::vector<double> ref = random_field<double>(n, 9), got(n);
      auto du = dev->allocate(n);
      du->copy_from_host(ref.data());
      BoundaryFaces faces = bc.faces;
      faces[1].type = BoundaryType::Exchange;  // must stay untouched
      cpu_apply_boundary(ref.data(), g, faces);
      dev->apply_boundary(du->data(), g, faces);
      du->copy_to_host(got.data());
      for (std::size_t q = 0; q < n; ++q) ASSERT_EQ(got[q], ref[q]) << "index " << q;
    }
}

// Ten steps of dev's stencil() (its chosen variant) on g against the CPU's.
void expect_stencil_matches_cpu(Backend<float>& dev, const GridDesc& g) {
  std::string where;
  const double err = compare_steps<float>(
      dev, g, bc_cases()[0].faces, steps(10), 3,
      [&](const float* u, float* out, const float* f, const StencilCoeffs<float>& c) {
        dev.stencil(u, out, f, g, c);
      },
      &where);
  EXPECT_LE(err, 1e-5) << where;
}

TEST(CudaStencil, AutoPicksAVariant) {
  SKIP_WITHOUT_GPU();
  for (int dims : {2, 3}) {
    auto dev = make_backend<float>(BackendKind::Cuda, {});
    const GridDesc g = make_grid(dims);
    const std::string choice = dev->prepare(g);
    EXPECT_NE(std::find(kVariants.begin(), kVariants.end(), choice), kVariants.end()) << choice;
    EXPECT_EQ(dev->prepare(g), choice);  // cached
    expect_stencil_matches_cpu(*dev, g);
  }
}

#ifdef HEATSOLVE_HAVE_CUDA
// Multigrid's small levels: an untimed grid takes naive (one thread a cell; the pipelined
// rungs march a small grid's planes in a few blocks), with and without a source, and still
// sweeps as the CPU does; a named kernel stays.
TEST(CudaStencil, UntimedGridTakesNaive) {
  SKIP_WITHOUT_GPU();
  for (int dims : {2, 3}) {
    auto dev = make_backend<float>(BackendKind::Cuda, {});
    const GridDesc g = make_grid(dims);
    dev->prepare_untimed(g);
    EXPECT_EQ(dev->prepare(g), "naive");  // cached, not tuned
    expect_stencil_matches_cpu(*dev, g);
    BackendOptions named;
    named.kernel = "2.5d";
    auto fixed = make_backend<float>(BackendKind::Cuda, named);
    fixed->prepare_untimed(g);
    EXPECT_EQ(fixed->prepare(g), "2.5d");
  }
}
#endif

// The MPI overlap path sweeps the core and the boundary slabs separately: slabs of whole
// outer layers (z in 3D, y in 2D), of any thickness down to one layer, must tile the interior
// to exactly stencil()'s bits, for every variant.
TEST(CudaStencil, SlabRegionsTileToTheFullSweep) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (const std::string& name : kVariants) {
    for (int dims : {2, 3}) {
      BackendOptions opts;
      opts.kernel = name;
      auto dev = make_backend<double>(BackendKind::Cuda, opts);
      const GridDesc g = make_grid(dims);
      dev->prepare(g);
      const std::size_t n = g.padded_size();
      std::vector<double> host(n), fh(n);
      for (auto& v : host) v = dist(rng);
      for (auto& v : fh) v = dist(rng);
      auto u = dev->allocate(n), f = dev->allocate(n), full = dev->allocate(n),
           split = dev->allocate(n);
      u->copy_from_host(host.data());
      f->copy_from_host(fh.data());
      const std::vector<double> poison(n, std::numeric_limits<double>::quiet_NaN());
      full->copy_from_host(poison.data());
      split->copy_from_host(poison.data());
      const StencilCoeffs<double> c = heat_coeffs<double>(g, 1.0, 0.2 * stable_dt(g, 1.0));
      dev->stencil(u->data(), full->data(), f->data(), g, c);
      const int outer = dims == 3 ? g.nz : g.ny, ax = dims == 3 ? 2 : 1;
      const int cuts[] = {0, 1, 3, outer - 1, outer};  // slabs of 1, 2, outer-4 and 1 layers
      for (int s = 0; s + 1 < 5; ++s) {
        CellRange r;
        r.hi = {g.nx, g.ny, dims == 3 ? g.nz : 1};
        r.lo[ax] = cuts[s];
        r.hi[ax] = cuts[s + 1];
        ASSERT_TRUE(dev->stencil_region(u->data(), split->data(), f->data(), g, c, r)) << name;
      }
      CellRange partial_x;  // not a whole-layer slab: the backend declines
      partial_x.hi = {g.nx - 1, g.ny, dims == 3 ? g.nz : 1};
      EXPECT_FALSE(dev->stencil_region(u->data(), split->data(), f->data(), g, c, partial_x));
      std::vector<double> a(n), b(n);
      full->copy_to_host(a.data());
      split->copy_to_host(b.data());
      const int nz = dims == 3 ? g.nz : 1;
      for (int k = 0; k < nz; ++k)
        for (int j = 0; j < g.ny; ++j)
          for (int i = 0; i < g.nx; ++i) {
            const std::int64_t idx = g.index(i, j, dims == 3 ? k : 0);
            ASSERT_EQ(a[idx], b[idx])
                << name << " dims " << dims << " at " << i << "," << j << "," << k;
          }
    }
  }
}

// The multigrid smoother of a decomposed level sweeps its core and boundary slabs with the
// face rules (stencil_region_with_boundary: 2.5d-tma applies them in the sweep, the others
// fill the slab's ghosts): the slabs must tile to apply_boundary + stencil()'s bits, with
// the Exchange faces' ghosts (a neighbour's layers) read from memory, for every variant and
// rule (Robin takes the ghost fill).
TEST(CudaStencil, SlabRegionsWithRulesTileToTheGhostFillAndSweep) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  using B = BoundaryType;
  for (const std::string& name : kVariants) {
    for (int dims : {2, 3}) {
      const int ax = dims == 3 ? 2 : 1;  // the stream axis: the split one
      std::vector<BoundaryFaces> cases(3);
      for (BoundaryFaces& bc : cases)
        for (int f = 0; f < 6; ++f) bc[f] = {B::Dirichlet, 0.25 + 0.5 * f};
      cases[0][2 * ax + 1] = {B::Exchange, 0.0};  // the lowest block of a split
      cases[0][1] = {B::Neumann, -0.5};
      cases[1][2 * ax] = {B::Exchange, 0.0};  // a middle block
      cases[1][2 * ax + 1] = {B::Exchange, 0.0};
      cases[2][2 * ax] = {B::Exchange, 0.0};  // the highest, a Robin face
      cases[2][0] = {B::Robin, 0.3, 0.6};
      if (dims == 3) cases[1][2] = {B::Periodic, 0.0}, cases[1][3] = {B::Periodic, 0.0};
      for (std::size_t ci = 0; ci < cases.size(); ++ci) {
        const BoundaryFaces& bc = cases[ci];
        SCOPED_TRACE(name + " " + std::to_string(dims) + "D case " + std::to_string(ci));
        BackendOptions opts;
        opts.kernel = name;
        auto dev = make_backend<double>(BackendKind::Cuda, opts);
        const GridDesc g = make_grid(dims);
        dev->prepare(g);
        const std::size_t n = g.padded_size();
        std::vector<double> host(n), fh(n);
        for (auto& v : host) v = dist(rng);
        for (auto& v : fh) v = dist(rng);
        auto u_full = dev->allocate(n), u_split = dev->allocate(n), f = dev->allocate(n),
             full = dev->allocate(n), split = dev->allocate(n);
        u_full->copy_from_host(host.data());
        u_split->copy_from_host(host.data());
        f->copy_from_host(fh.data());
        const StencilCoeffs<double> c = heat_coeffs<double>(g, 1.0, 0.2 * stable_dt(g, 1.0));
        dev->apply_boundary(u_full->data(), g, bc);
        dev->stencil(u_full->data(), full->data(), f->data(), g, c);
        const int outer = dims == 3 ? g.nz : g.ny;
        const int cuts[] = {0, 1, 3, outer - 1, outer};
        for (int s = 0; s + 1 < 5; ++s) {
          CellRange r;
          r.hi = {g.nx, g.ny, dims == 3 ? g.nz : 1};
          r.lo[ax] = cuts[s];
          r.hi[ax] = cuts[s + 1];
          ASSERT_TRUE(dev->stencil_region_with_boundary(u_split->data(), split->data(), f->data(),
                                                        g, c, bc, r));
        }
        CellRange partial_x;
        partial_x.hi = {g.nx - 1, g.ny, dims == 3 ? g.nz : 1};
        EXPECT_FALSE(dev->stencil_region_with_boundary(u_split->data(), split->data(), f->data(), g,
                                                       c, bc, partial_x));
        std::vector<double> a(n), b(n);
        full->copy_to_host(a.data());
        split->copy_to_host(b.data());
        const int nz = dims == 3 ? g.nz : 1;
        for (int k = 0; k < nz; ++k)
          for (int j = 0; j < g.ny; ++j)
            for (int i = 0; i < g.nx; ++i) {
              const std::int64_t idx = g.index(i, j, dims == 3 ? k : 0);
              ASSERT_EQ(a[idx], b[idx]) << "at " << i << "," << j << "," << k;
            }
      }
    }
  }
}

TEST(CudaStencil, UnknownKernelAndBadBlockThrow) {
  SKIP_WITHOUT_GPU();
  BackendOptions o;
  o.kernel = "no-such-kernel";
  EXPECT_THROW(make_backend<float>(BackendKind::Cuda, o), BackendError);
  o.kernel = "naive";
  o.block = {3, 5, 7};
  auto dev = make_backend<float>(BackendKind::Cuda, o);
  EXPECT_THROW(dev->prepare(make_grid(3)), BackendError);
}

template <typename T>
void check_reductions() {
  SKIP_WITHOUT_GPU();
  for (int dims : {2, 3}) {
    const GridDesc g = make_grid(dims);
    const std::size_t n = g.padded_size();
    const std::vector<T> a = random_field<T>(n, 21, -2, 3), b = random_field<T>(n, 22),
                         f = random_field<T>(n, 23);
    CpuBackend<T> cpu;
    auto dev = make_backend<T>(BackendKind::Cuda, {});
    auto da = dev->allocate(n), db = dev->allocate(n), df = dev->allocate(n);
    da->copy_from_host(a.data());
    db->copy_from_host(b.data());
    df->copy_from_host(f.data());
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::SumSquares, ReduceOp::MaxAbs}) {
      SCOPED_TRACE(std::to_string(dims) + "D op " + std::to_string(int(op)));
      auto near = [](double got, double want) {
        EXPECT_NEAR(got, want, 1e-11 * std::max(1.0, std::abs(want)));
      };
      const double r1 = dev->reduce(da->data(), g, op);
      near(r1, cpu.reduce(a.data(), g, op));
      EXPECT_EQ(r1, dev->reduce(da->data(), g, op));  // deterministic, bit for bit
      near(dev->reduce_diff(da->data(), db->data(), g, op),
           cpu.reduce_diff(a.data(), b.data(), g, op));
      near(dev->reduce_residual(da->data(), df->data(), g, op),
           cpu.reduce_residual(a.data(), f.data(), g, op));
      near(dev->reduce_residual(da->data(), nullptr, g, op),
           cpu.reduce_residual(a.data(), nullptr, g, op));
    }
  }
}

TEST(CudaReduce, MatchesCpuFloat) {
  check_reductions<float>();
}
TEST(CudaReduce, MatchesCpuDouble) {
  check_reductions<double>();
}

TEST(CudaStencil, BenchWithoutDeviceOrCudaFails) {
  if (cuda_device_available()) GTEST_SKIP() << "a device is present";
  StencilBenchOptions o;
  o.size = 16;
  EXPECT_NE(run_stencil_bench(o, false), 0);
}

#ifdef HEATSOLVE_HAVE_CUDA
// Planes per block (host arithmetic, no device needed). The cases are the measured ones of
// docs/performance.md (session 5, H200: 132 SMs).
TEST(CudaChunking, WaveChunkPicksFullRounds) {
  using cuda::wave_chunk;
  // 3D float temporal k = 2: 171 tiles, 2 blocks per SM. 43 planes: 12 chunks, 7.77 rounds.
  EXPECT_EQ(wave_chunk(171, 512, 2 * 132, 4, 32), 43);
  // 2D double 2.5d-tma: 16 tiles, 2 blocks per SM: 99 chunks of 83 rows, exactly 6 rounds.
  EXPECT_EQ(wave_chunk(16, 8192, 2 * 132, 2, 32), 83);
  // No chunk of >= 32 planes makes 6 rounds: the best score, here the most blocks (34).
  EXPECT_EQ(wave_chunk(1, 100, 1000, 4, 32), 34);
  // ... and here one round filled to 99 % (58 chunks of 142 planes, 1044 of 1056 slots).
  EXPECT_EQ(wave_chunk(18, 8192, 8 * 132, 8, 32), 142);
  // Fewer planes than min_chunk: one chunk.
  EXPECT_EQ(wave_chunk(1, 5, 264, 4, 32), 5);
  // Every result is a real chunk: >= min_chunk (or all planes), <= ns, and where 6 rounds are
  // possible its last round is at least 5/6 full.
  for (int tiles : {1, 7, 64, 128, 171, 387, 1000})
    for (int ns : {1, 31, 64, 200, 512, 4096})
      for (int slots : {132, 264, 396}) {
        const int chunk = wave_chunk(tiles, ns, slots, 4, 32);
        EXPECT_GE(chunk, std::min(32, ns));
        EXPECT_LE(chunk, ns);
        const double w = double(tiles) * cuda::cdiv(ns, chunk) / slots;
        int most = 1;  // chunks of the smallest chunk >= 32 planes
        while (most < ns && cuda::cdiv(ns, most + 1) >= 32) ++most;
        if (double(tiles) * most / slots >= 6 && ns >= 32) {
          EXPECT_GE(w, 6.0) << tiles << " " << ns << " " << slots;
          EXPECT_GE(w / std::ceil(w), 5.0 / 6.0) << tiles << " " << ns << " " << slots;
        }
      }
}

// Each rung's automatic planes per block: the measured choices (docs/performance.md).
TEST(CudaChunking, RungDefaultsAreTheMeasuredOnes) {
  using namespace cuda;
  EXPECT_EQ(tma_chunk(3, 4, 32, 512, 132, 132), 128);      // 3D float: one round, 4 x 128 planes
  EXPECT_EQ(tma_chunk(3, 4, 128, 1024, 132, 132), 1024);   // 1024^3: 128 whole columns
  EXPECT_EQ(tma_chunk(3, 8, 64, 512, 132, 132), 32);       // 3D double: 7.8 full rounds
  EXPECT_EQ(tma_chunk(2, 8, 16, 8192, 2 * 132, 132), 83);  // 2D: the wave-aware rule
  EXPECT_EQ(register_chunk(2, 16, 8192, 132), 12);         // 2D: 12 rows
  EXPECT_EQ(register_chunk(3, 256, 512, 132), auto_chunk(256, 512, 16 * 132));
  EXPECT_EQ(temporal_chunk(2, 387, 512, 5 * 132), 35);  // 3D float k = 2 default (partial sums,
                                                        // 9 x 43 tiles, 5 blocks per SM)
  EXPECT_EQ(temporal_chunk(2, 171, 512, 2 * 132), 43);  // rings 32x8 (3D float until session 7)
  // 3D double k = 3 on a 2-GPU block's 256 x 256 x 128 level with its margins (136 planes, 100
  // tiles, 2 blocks per SM): 5 chunks of 28 planes, not 2 of 68 (200 blocks, 264 slots); a
  // 256^3 level (one GPU) and the weak block's 264 planes fill the slots with 5 chunks anyway.
  EXPECT_EQ(temporal_chunk(3, 100, 136, 2 * 132), 28);
  EXPECT_EQ(temporal_chunk(3, 100, 256, 2 * 132), 52);
  EXPECT_EQ(temporal_chunk(3, 100, 264, 2 * 132), 53);
  // 2.5d-async: one round of long chunks when the tiles leave slots free, else auto_chunk.
  EXPECT_EQ(one_round_chunk(64, 512, 256, 132), 128);
  EXPECT_EQ(one_round_chunk(512, 512, 256, 132), auto_chunk(512, 512, 16 * 132));
  EXPECT_EQ(one_round_chunk(2, 64, 132, 132), 16);  // small grids: at least 16 planes
}
#endif

}  // namespace
}  // namespace heatsolve
