// GPU tests of temporal blocking (kernels/stencil/cuda/temporal_*.cu*): a pass of k fused heat
// steps against k single steps (apply_boundary + the 2.5d-register sweep) on the same device, on
// odd sizes, every boundary type, with a source, output poisoned with NaN. Dirichlet/Neumann
// faces run fused passes; periodic faces (and any mix containing one) must take the backend's
// single-step fallback. Skipped without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/stencil/coefficients.hpp"
#include "kernels/stencil/separable_fill.hpp"
#include "tests/kernels/stencil/sweep_cases.hpp"

#ifdef HEATSOLVE_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/stencil/cuda/stencil_launch.cuh"
#include "kernels/stencil/cuda/temporal_launch.cuh"
#endif

namespace heatsolve {
namespace {

#ifdef HEATSOLVE_HAVE_CUDA

using namespace sweep_test;

std::vector<GridDesc> grids(int dims) {
  std::vector<GridDesc> out;
  // Odd and even nx: with nx even the partial-sums design shifts its tiles and loads aligned
  // vectors (partial_vector_shift), with nx odd it loads single values.
  const int sizes3[][3] = {{37, 29, 23}, {64, 30, 17}, {70, 45, 19}};
  const int sizes2[][2] = {{67, 45}, {130, 20}, {131, 9}};
  for (int q = 0; q < 3; ++q) {
    if (quick() && q == 2) break;
    GridDesc g;
    g.dims = dims;
    if (dims == 3) {
      g.nx = sizes3[q][0];
      g.ny = sizes3[q][1];
      g.nz = sizes3[q][2];
    } else {
      g.nx = sizes2[q][0];
      g.ny = sizes2[q][1];
      g.nz = 1;
    }
    g.hx = 1.0 / g.nx;
    g.hy = 1.3 / g.ny;
    g.hz = dims == 3 ? 0.8 / g.nz : 1.0;
    out.push_back(g);
  }
  return out;
}

// `n` steps from the same random state: reference = n x (apply_boundary + 2.5d-register
// sweep); fused = `run(u, tmp)` returning the buffer with the result. Scratch buffers are
// poisoned with NaN first.
template <typename T, typename Run>
Diff run_case(Backend<T>& dev, const GridDesc& g, const BoundaryFaces& bc, int n, bool source,
              Run&& run) {
  const std::size_t np = g.padded_size();
  const std::vector<T> u0 = random_field<T>(np, 11 + n), f0 = random_field<T>(np, 12 + n);
  const std::vector<T> poison(np, std::numeric_limits<T>::quiet_NaN());
  const StencilCoeffs<T> c = heat_coeffs<T>(g, 1.0, 0.9 * stable_dt(g, 1.0));
  auto a = dev.allocate(np), b = dev.allocate(np), fa = dev.allocate(np);
  fa->copy_from_host(f0.data());
  const T* f = source ? fa->data() : nullptr;
  // Reference.
  a->copy_from_host(u0.data());
  b->copy_from_host(poison.data());
  const StencilShape shape = cuda::resolve_shape<T>(StencilVariant::Register25D, g.dims, {0, 0, 0});
  T* u = a->data();
  T* t = b->data();
  for (int s = 0; s < n; ++s) {
    dev.apply_boundary(u, g, bc);
    cuda::launch_stencil<T>(StencilVariant::Register25D, shape, u, t, f, g, c, nullptr);
    std::swap(u, t);
  }
  dev.synchronize();
  std::vector<T> ref(np), got(np);
  if (u == a->data())
    a->copy_to_host(ref.data());
  else
    b->copy_to_host(ref.data());
  // Fused.
  a->copy_from_host(u0.data());
  b->copy_from_host(poison.data());
  T* res = run(a->data(), b->data(), f, c);
  dev.synchronize();
  if (res == a->data())
    a->copy_to_host(got.data());
  else
    b->copy_to_host(got.data());
  return compare(got, ref, g);
}

// Every compiled shape, one pass of k steps, with and without source, small chunks too.
template <typename T>
void check_shapes() {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  for (int dims : {2, 3})
    for (const GridDesc& g : grids(dims))
      for (cuda::TemporalShape shape : cuda::temporal_shapes<T>(dims))
        for (int chunk : {0, 5})
          for (const Case& bc : cases()) {
            if (!cuda::temporal_supported(g, bc.faces)) continue;
            for (bool source : {true, false}) {
              if (quick() && (!source || chunk)) continue;
              shape.chunk = chunk;
              SCOPED_TRACE(shape.str() + " " + std::to_string(g.nx) + "x" + std::to_string(g.ny) +
                           "x" + std::to_string(g.nz) + " " + bc.name + (source ? " +f" : " no f"));
              auto dev = make_backend<T>(BackendKind::Cuda, {});
              const Diff d =
                  run_case<T>(*dev, g, bc.faces, shape.k, source,
                              [&](T* u, T* tmp, const T* f, const StencilCoeffs<T>& c) {
                                cuda::launch_temporal<T>(shape, u, tmp, f, g, c, bc.faces, nullptr);
                                return tmp;
                              });
              // The same point update, every rounding explicit: bit for bit.
              EXPECT_EQ(d.differing, 0) << "worst at " << d.where << " (rel " << d.rel << ")";
            }
          }
}

TEST(CudaTemporal, EveryShapeMatchesSingleStepsFloat) {
  check_shapes<float>();
}
TEST(CudaTemporal, EveryShapeMatchesSingleStepsDouble) {
  check_shapes<double>();
}

// The bench's memory-only twin of a partial-sums shape (row "temporal-memory") must move every
// cell the real pass moves: it stores input plane p + k as plane p, so a twin that skipped a
// load or a store (or stored outside the interior) fails here. Rings shapes have no twin.
template <typename T>
void check_memory_twin() {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  int twins = 0;
  for (int dims : {2, 3})
    for (const GridDesc& g : grids(dims))
      for (cuda::TemporalShape shape : cuda::temporal_shapes<T>(dims))
        for (int chunk : {0, 5}) {
          shape.chunk = chunk;
          shape.memory_only = true;
          auto dev = make_backend<T>(BackendKind::Cuda, {});
          const std::size_t np = g.padded_size();
          const std::vector<T> u0 = random_field<T>(np, 21);
          const std::vector<T> poison(np, std::numeric_limits<T>::quiet_NaN());
          auto a = dev->allocate(np), b = dev->allocate(np);
          a->copy_from_host(u0.data());
          b->copy_from_host(poison.data());
          const StencilCoeffs<T> c = heat_coeffs<T>(g, 1.0, 0.9 * stable_dt(g, 1.0));
          const BoundaryFaces bc = cases()[0].faces;
          if (shape.design == cuda::TemporalDesign::Rings) {
            EXPECT_THROW(
                cuda::launch_temporal<T>(shape, a->data(), b->data(), nullptr, g, c, bc, nullptr),
                BackendError);
            continue;
          }
          ++twins;
          SCOPED_TRACE(shape.str() + " " + std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" +
                       std::to_string(g.nz));
          cuda::launch_temporal<T>(shape, a->data(), b->data(), nullptr, g, c, bc, nullptr);
          dev->synchronize();
          std::vector<T> got(np);
          b->copy_to_host(got.data());
          const int ns = dims == 3 ? g.nz : g.ny;
          long long wrong = 0, ghosts_written = 0;
          for (std::int64_t i = 0; i < std::int64_t(np); ++i) {
            if (!std::isnan(double(got[i]))) ++ghosts_written;  // counted back below
          }
          for (int p = 0; p < ns; ++p)
            for (int j = 0; j < (dims == 3 ? g.ny : 1); ++j)
              for (int i = 0; i < g.nx; ++i) {
                const std::int64_t at = dims == 3 ? g.index(i, j, p) : g.index(i, p, 0);
                --ghosts_written;  // an interior cell: every one of them is stored
                if (p + shape.k >= ns) {
                  if (std::isnan(double(got[at]))) ++wrong;  // stored (value: not a plane)
                  continue;
                }
                const std::int64_t src =
                    dims == 3 ? g.index(i, j, p + shape.k) : g.index(i, p + shape.k, 0);
                if (std::memcmp(&got[at], &u0[src], sizeof(T)) != 0) ++wrong;
              }
          EXPECT_EQ(wrong, 0);
          EXPECT_EQ(ghosts_written, 0) << "cells outside the interior were written";
        }
  EXPECT_GT(twins, 0) << "no partial-sums shape compiled";
}

TEST(CudaTemporal, MemoryTwinMovesEveryCellFloat) {
  check_memory_twin<float>();
}
TEST(CudaTemporal, MemoryTwinMovesEveryCellDouble) {
  check_memory_twin<double>();
}

// Plane ranges (PlaneRange, Backend::stencil_steps_planes): a range stores its planes with
// the full pass's bits and nothing else, and ranges that tile the stream axis give the full
// pass, whatever their order and the chunk.
template <typename T>
void check_plane_ranges() {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  for (int dims : {2, 3})
    for (const GridDesc& g : grids(dims))
      for (cuda::TemporalShape shape : cuda::temporal_shapes<T>(dims))
        for (int chunk : {0, 5}) {
          shape.chunk = chunk;
          SCOPED_TRACE(shape.str() + " " + std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" +
                       std::to_string(g.nz));
          auto dev = make_backend<T>(BackendKind::Cuda, {});
          const std::size_t np = g.padded_size();
          const std::vector<T> u0 = random_field<T>(np, 31), f0 = random_field<T>(np, 32);
          const std::vector<T> poison(np, std::numeric_limits<T>::quiet_NaN());
          auto u = dev->allocate(np), f = dev->allocate(np), full = dev->allocate(np),
               part = dev->allocate(np);
          u->copy_from_host(u0.data());
          f->copy_from_host(f0.data());
          full->copy_from_host(poison.data());
          part->copy_from_host(poison.data());
          const StencilCoeffs<T> c = heat_coeffs<T>(g, 1.0, 0.9 * stable_dt(g, 1.0));
          const BoundaryFaces bc = cases()[0].faces;
          const auto pass = [&](T* out, cuda::PlaneRange r) {
            cuda::launch_temporal<T>(shape, u->data(), out, f->data(), g, c, bc, nullptr, r);
          };
          pass(full->data(), {});
          const int ns = dims == 3 ? g.nz : g.ny;
          const int a = std::min(ns, shape.k + 1), b = std::max(a, ns - shape.k - 1);
          pass(part->data(), {a, b});
          dev->synchronize();
          std::vector<T> want(np), got(np);
          full->copy_to_host(want.data());
          part->copy_to_host(got.data());
          long long wrong = 0;
          for (int p = -1; p <= ns; ++p)  // the ghost planes too
            for (int j = -1; j <= (dims == 3 ? g.ny : 0); ++j)
              for (int i = -1; i <= g.nx; ++i) {
                const std::int64_t at = dims == 3 ? g.index(i, j, p) : g.index(i, p, 0);
                const T& expect = p >= a && p < b ? want[at] : poison[at];
                if (std::memcmp(&got[at], &expect, sizeof(T)) != 0) ++wrong;
              }
          EXPECT_EQ(wrong, 0) << "planes [" << a << ", " << b << ")";
          pass(part->data(), {b, ns});
          pass(part->data(), {0, a});
          dev->synchronize();
          part->copy_to_host(got.data());
          EXPECT_EQ(std::memcmp(got.data(), want.data(), np * sizeof(T)), 0);
        }
}

TEST(CudaTemporal, PlaneRangesTileAFullPassFloat) {
  check_plane_ranges<float>();
}
TEST(CudaTemporal, PlaneRangesTileAFullPassDouble) {
  check_plane_ranges<double>();
}

// Through the backend: kernel "temporal", n steps that are not multiples of k (remainders run
// single), every boundary type (periodic ones fall back to single steps).
template <typename T>
void check_backend() {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  for (int dims : {2, 3})
    for (const GridDesc& g : grids(dims))
      for (const Case& bc : cases())
        for (int n : {3, 7, 13}) {
          if (quick() && n != 7) continue;
          SCOPED_TRACE(std::to_string(dims) + "D " + bc.name + " n=" + std::to_string(n));
          BackendOptions o;
          o.kernel = "temporal";
          auto dev = make_backend<T>(BackendKind::Cuda, o);
          const std::string label = dev->prepare(g);
          EXPECT_NE(label.find("temporal"), std::string::npos) << label;
          EXPECT_GE(dev->max_time_block(), 1);
          const Diff d = run_case<T>(*dev, g, bc.faces, n, true,
                                     [&](T* u, T* tmp, const T* f, const StencilCoeffs<T>& c) {
                                       return dev->stencil_steps(u, tmp, f, g, c, bc.faces, n);
                                     });
          EXPECT_EQ(d.differing, 0) << "worst at " << d.where << " (rel " << d.rel << ")";
        }
}

TEST(CudaTemporal, BackendStepsFloat) {
  check_backend<float>();
}
TEST(CudaTemporal, BackendStepsDouble) {
  check_backend<double>();
}

// Backend::stencil_sweeps (the multigrid smoother): n sweeps, each with its own weighted-Jacobi
// coefficients (Chebyshev weights), fused into passes of the compiled k whatever the kernel
// option, against n single sweeps (stencil_with_boundary) with the same coefficients, bit for
// bit; periodic faces take the single sweeps. Where the result lands is the backend's choice.
template <typename T>
void check_sweeps() {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  for (int dims : {2, 3})
    for (const GridDesc& g : grids(dims))
      for (const Case& bc : cases())
        for (int n : {1, 2, 3, 5, 6}) {
          if (quick() && n != 3) continue;
          SCOPED_TRACE(std::to_string(dims) + "D " + bc.name + " n=" + std::to_string(n));
          BackendOptions o;
          o.fuse_min_cells = 0;  // these grids are below the default
          auto dev = make_backend<T>(BackendKind::Cuda, o);
          dev->prepare(g);
          const std::vector<StencilCoeffs<T>> cs = weighted_jacobi_sweeps<T>(g, n, 0.6, 0.23);
          const double ix = 1 / (g.hx * g.hx), iy = 1 / (g.hy * g.hy);
          const double iz = dims == 3 ? 1 / (g.hz * g.hz) : 0.0, diag = 2 * (ix + iy + iz);
          const std::size_t np = g.padded_size();
          const std::vector<T> u0 = random_field<T>(np, 31 + n), f0 = random_field<T>(np, 32 + n);
          auto a = dev->allocate(np), b = dev->allocate(np), fa = dev->allocate(np);
          fa->copy_from_host(f0.data());
          const auto result = [&](T* at) {
            std::vector<T> v(np);
            (at == a->data() ? a : b)->copy_to_host(v.data());
            return v;
          };
          a->copy_from_host(u0.data());
          T* cur = a->data();
          T* other = b->data();
          for (const StencilCoeffs<T>& c : cs) {
            dev->stencil_with_boundary(cur, other, fa->data(), g, c, bc.faces);
            std::swap(cur, other);
          }
          const std::vector<T> ref = result(cur);
          a->copy_from_host(u0.data());
          const std::vector<T> poison(np, std::numeric_limits<T>::quiet_NaN());
          b->copy_from_host(poison.data());
          cur = a->data();
          other = b->data();
          dev->stencil_sweeps(&cur, &other, fa->data(), g, cs.data(), n, bc.faces);
          const Diff d = compare(result(cur), ref, g);
          EXPECT_EQ(d.differing, 0) << "worst at " << d.where << " (rel " << d.rel << ")";

          // The same sweeps measuring the input's residual in their pass (3D double k <= 4
          // only): the sweeps' bits, the input left as it was, and the residual's squared norm
          // that stencil_square_sum gives, with a stored source and without.
          StencilCoeffs<T> rc;  // r = f - A u
          rc.center = T(-diag);
          rc.cx = T(ix);
          rc.cy = T(iy);
          rc.cz = T(iz);
          rc.source = T(1);
          for (const bool source : {true, false}) {
            SCOPED_TRACE(source ? "norm, stored source" : "norm, no source");
            const T* fp = source ? fa->data() : nullptr;
            std::vector<T> want = ref;
            if (!source) {
              a->copy_from_host(u0.data());
              cur = a->data();
              other = b->data();
              for (const StencilCoeffs<T>& c : cs) {
                dev->stencil_with_boundary(cur, other, nullptr, g, c, bc.faces);
                std::swap(cur, other);
              }
              want = result(cur);
            }
            a->copy_from_host(u0.data());
            auto scratch = dev->allocate(np);
            dev->apply_boundary(a->data(), g, bc.faces);
            const double expected = dev->stencil_square_sum(a->data(), fp, g, rc, scratch->data());
            a->copy_from_host(u0.data());
            b->copy_from_host(poison.data());
            cur = a->data();
            other = b->data();
            double sum = -1;
            const bool fused = dev->stencil_sweeps_with_norm(&cur, &other, fp, g, cs.data(), n,
                                                             bc.faces, rc, &sum, 0, -1);
            bool has_pass = std::is_same_v<T, double> && dims == 3 && n >= 2 && n <= 4;
            for (int face = 0; face < 2 * dims; ++face)
              has_pass = has_pass && bc.faces[face].type != BoundaryType::Periodic;
            EXPECT_EQ(fused, has_pass);
            if (!fused) {
              EXPECT_EQ(sum, -1.0) << "nothing is done where there is no such pass";
              continue;
            }
            EXPECT_EQ(cur, b->data()) << "the iterate moves to the other buffer";
            const Diff dn = compare(result(cur), want, g);
            EXPECT_EQ(dn.differing, 0) << "worst at " << dn.where << " (rel " << dn.rel << ")";
            const Diff din = compare(result(a->data()), u0, g);
            EXPECT_EQ(din.differing, 0) << "the input changed at " << din.where;
            EXPECT_GT(expected, 0.0);
            EXPECT_NEAR(sum, expected, 1e-13 * expected);
          }
        }
}

TEST(CudaTemporal, BackendSweepsWithTheirOwnWeightsFloat) {
  check_sweeps<float>();
}
TEST(CudaTemporal, BackendSweepsWithTheirOwnWeightsDouble) {
  check_sweeps<double>();
}

// Backend::prolong_add_sweeps (a multigrid visit's post-smoothing): the coarse correction
// added as the pass reads the iterate gives the bits of prolong_add followed by the sweeps,
// with a stored, a generated and no source; the input is left as it was. With an offset (a
// deep-halo pass on a block's extended grid, whose margin planes lie over the coarse field's
// margins), odd and even: the fine grid is a view from plane `offset % 2` of a grid twice the
// coarse one, the coarse block a view from the coarse plane its children start at. The pass
// exists for 3D double k = 3 (the multigrid smoother's row), Dirichlet/Neumann faces and
// linear prolongation; elsewhere nothing is done and false returned.
template <typename T>
void check_prolonged_sweeps() {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  const int sizes[][3] = {{64, 30, 18}, {38, 46, 22}};
  for (const auto& sz : sizes)
    for (const Case& bc : cases())
      for (int n : {2, 3}) {
        GridDesc g;
        g.dims = 3;
        g.nx = sz[0], g.ny = sz[1], g.nz = sz[2];
        g.hx = 1.0 / g.nx, g.hy = 1.3 / g.ny, g.hz = 0.8 / g.nz;
        GridDesc gc = g;
        gc.nx = g.nx / 2, gc.ny = g.ny / 2, gc.nz = g.nz / 2;
        gc.hx = 2 * g.hx, gc.hy = 2 * g.hy, gc.hz = 2 * g.hz;
        SCOPED_TRACE(std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" +
                     std::to_string(g.nz) + " " + bc.name + " n=" + std::to_string(n));
        BackendOptions o;
        o.fuse_min_cells = 0;
        auto dev = make_backend<T>(BackendKind::Cuda, o);
        dev->prepare(g);
        const std::vector<StencilCoeffs<T>> cs = weighted_jacobi_sweeps<T>(g, n, 0.7, 0.19);
        const std::size_t np = g.padded_size();
        const std::vector<T> u0 = random_field<T>(np, 41),
                             e0 = random_field<T>(gc.padded_size(), 42);
        SeparableSource<T> form;
        form.offset = T(0.2);
        form.scale = T(-1.3);
        form.plane = random_field<T>(std::size_t(g.stride_z()), 43);
        form.column = random_field<T>(std::size_t(g.nz), 44);
        std::vector<T> f0(np, T(0));
        fill_separable_interior(f0.data(), g, form.offset, form.scale, form.plane.data(),
                                form.column.data());
        auto a = dev->allocate(np), b = dev->allocate(np), fs = dev->allocate(np);
        auto fg = dev->allocate(np), e = dev->allocate(gc.padded_size());
        fs->copy_from_host(f0.data());
        fg->copy_from_host(f0.data());
        dev->describe_source(fg->data(), g, &form);
        e->copy_from_host(e0.data());
        const std::vector<T> poison(np, std::numeric_limits<T>::quiet_NaN());
        bool has_pass = std::is_same_v<T, double> && n == 3;
        EXPECT_EQ(dev->prolongs_in_sweeps(3, n), has_pass);
        EXPECT_FALSE(dev->prolongs_in_sweeps(2, n));
        for (int face = 0; face < 6; ++face)
          has_pass = has_pass && bc.faces[face].type != BoundaryType::Periodic;
        for (int offset : {0, 3, 4}) {
          const int shift = offset % 2, first = (offset + shift) / 2;
          const std::ptrdiff_t fine_at = shift * g.stride_z(), coarse_at = first * gc.stride_z();
          GridDesc view = g, block = gc;
          view.nz -= shift;
          block.nz -= first;
          // The view's cells from the buffer holding `at`.
          const auto host = [&](const T* at) {
            std::vector<T> v(np);
            (at == a->data() + fine_at ? a : b)->copy_to_host(v.data());
            return std::vector<T>(v.begin() + fine_at, v.end());
          };
          const std::vector<T> u0_view(u0.begin() + fine_at, u0.end());
          for (const char* source : {"stored", "generated", "none"}) {
            if (offset != 0 && source[0] == 'g') continue;  // described on g only
            SCOPED_TRACE(std::string(source) + " offset " + std::to_string(offset));
            const T* f = source[0] == 's'   ? fs->data() + fine_at
                         : source[0] == 'g' ? fg->data()
                                            : nullptr;
            a->copy_from_host(u0.data());
            dev->prolong_add(e->data(), gc, a->data(), g, {2, 2, 2}, Prolongation::Linear);
            T* cur = a->data() + fine_at;
            T* other = b->data() + fine_at;
            dev->stencil_sweeps(&cur, &other, f, view, cs.data(), n, bc.faces);
            const std::vector<T> want = host(cur);
            a->copy_from_host(u0.data());
            b->copy_from_host(poison.data());
            cur = a->data() + fine_at;
            other = b->data() + fine_at;
            const bool fused = dev->prolong_add_sweeps(e->data() + coarse_at, block, {2, 2, 2},
                                                       Prolongation::Linear, &cur, &other, f, view,
                                                       cs.data(), n, bc.faces, offset);
            EXPECT_EQ(fused, has_pass);
            if (!fused) {
              EXPECT_EQ(cur, a->data() + fine_at) << "nothing is done where there is no such pass";
              EXPECT_EQ(compare(host(a->data() + fine_at), u0_view, view).differing, 0);
              continue;
            }
            EXPECT_EQ(cur, b->data() + fine_at) << "the iterate moves to the other buffer";
            const Diff d = compare(host(cur), want, view);
            EXPECT_EQ(d.differing, 0) << "worst at " << d.where << " (rel " << d.rel << ")";
            const Diff din = compare(host(a->data() + fine_at), u0_view, view);
            EXPECT_EQ(din.differing, 0) << "the input changed at " << din.where;
            // The same pass stored by plane ranges (Backend::prolong_add_sweeps_planes): the
            // ranges tile it with its bits.
            b->copy_from_host(poison.data());
            const int lo = std::min(3, view.nz), hi = std::max(lo, view.nz - 3);
            for (const std::array<int, 2> range :
                 {std::array<int, 2>{0, lo}, {hi, view.nz}, {lo, hi}})
              ASSERT_TRUE(dev->prolong_add_sweeps_planes(e->data() + coarse_at, block, {2, 2, 2},
                                                         Prolongation::Linear, a->data() + fine_at,
                                                         b->data() + fine_at, f, view, cs.data(), n,
                                                         bc.faces, offset, range[0], range[1]));
            const Diff dp = compare(host(b->data() + fine_at), want, view);
            EXPECT_EQ(dp.differing, 0)
                << "parts: worst at " << dp.where << " (rel " << dp.rel << ")";
          }
        }
        // Constant prolongation, a grid not twice the coarse one, children past the fine grid:
        // no such pass.
        T* cur = a->data();
        T* other = b->data();
        EXPECT_FALSE(dev->prolong_add_sweeps(e->data(), gc, {2, 2, 2}, Prolongation::Constant, &cur,
                                             &other, fs->data(), g, cs.data(), n, bc.faces, 0));
        GridDesc odd = gc;
        odd.nx -= 1;
        EXPECT_FALSE(dev->prolong_add_sweeps(e->data(), odd, {2, 2, 2}, Prolongation::Linear, &cur,
                                             &other, fs->data(), g, cs.data(), n, bc.faces, 0));
        EXPECT_FALSE(dev->prolong_add_sweeps(e->data(), gc, {2, 2, 2}, Prolongation::Linear, &cur,
                                             &other, fs->data(), g, cs.data(), n, bc.faces, 1));
        EXPECT_EQ(cur, a->data());
      }
}

TEST(CudaTemporal, ProlongedSweepsAreProlongAddThenSweepsDouble) {
  check_prolonged_sweeps<double>();
}
TEST(CudaTemporal, ProlongedSweepsAreDeclinedInFloat) {
  check_prolonged_sweeps<float>();
}

// A deck's time_block is the k the backend reports and runs; `auto` (0) times the compiled k.
TEST(CudaTemporal, DeckTimeBlockIsNotRetimed) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  const GridDesc g = grids(3)[0];
  for (int k : {2, 3}) {
    BackendOptions o;
    o.kernel = "temporal";
    o.time_block = k;
    auto dev = make_backend<float>(BackendKind::Cuda, o);
    const std::string label = dev->prepare(g);
    EXPECT_EQ(label.rfind("temporal k=" + std::to_string(k) + " + ", 0), 0u) << label;
    EXPECT_EQ(dev->max_time_block(), k);
  }
  BackendOptions o;
  o.kernel = "temporal";
  auto dev = make_backend<float>(BackendKind::Cuda, o);
  dev->prepare(g);
  const std::vector<int>& ks = cuda::temporal_steps<float>(3);
  const int chosen = dev->max_time_block();
  EXPECT_TRUE(chosen == 1 || std::find(ks.begin(), ks.end(), chosen) != ks.end()) << chosen;
}

TEST(CudaTemporal, UnsupportedFacesThrowInTheLauncher) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  GridDesc g = grids(3)[0];
  BoundaryFaces bc{};
  bc[2].type = BoundaryType::Periodic;
  EXPECT_FALSE(cuda::temporal_supported(g, bc));
  bc[2].type = BoundaryType::Exchange;
  EXPECT_FALSE(cuda::temporal_supported(g, bc));
  bc[2].type = BoundaryType::Neumann;
  EXPECT_TRUE(cuda::temporal_supported(g, bc));
  EXPECT_THROW(cuda::temporal_default_shape<float>(3, 5), BackendError);
}

// The compiled k (what `time_block: auto` times and stencil_steps picks from) are exactly the
// k of the compiled shapes, largest first, each with a default. Host tables: needs no device.
template <typename T>
void check_compiled_steps() {
  for (int dims : {2, 3}) {
    SCOPED_TRACE(std::to_string(dims) + "D");
    const std::vector<int>& ks = cuda::temporal_steps<T>(dims);
    ASSERT_FALSE(ks.empty());
    for (std::size_t i = 1; i < ks.size(); ++i) EXPECT_GT(ks[i - 1], ks[i]);
    for (int k : ks) {
      EXPECT_GE(k, 2);
      EXPECT_EQ(cuda::temporal_default_shape<T>(dims, k).k, k);
    }
    for (const cuda::TemporalShape& s : cuda::temporal_shapes<T>(dims))
      EXPECT_NE(std::find(ks.begin(), ks.end(), s.k), ks.end()) << s.str();
  }
}

TEST(CudaTemporal, CompiledStepsFloat) {
  check_compiled_steps<float>();
  // 3D float also fuses three steps per pass (the partial-sums k = 3 shapes).
  const std::vector<int>& ks = cuda::temporal_steps<float>(3);
  EXPECT_NE(std::find(ks.begin(), ks.end(), 3), ks.end());
}
TEST(CudaTemporal, CompiledStepsDouble) {
  check_compiled_steps<double>();
}

#endif  // HEATSOLVE_HAVE_CUDA

// The generic Backend::stencil_steps (CPU): n steps = n x (apply_boundary, stencil, swap).
TEST(Temporal, GenericStepsEqualSingleSteps) {
  auto cpu = make_backend<double>(BackendKind::Cpu, {});
  GridDesc g;
  g.dims = 3;
  g.nx = 9;
  g.ny = 7;
  g.nz = 5;
  g.hx = g.hy = g.hz = 0.1;
  BoundaryFaces bc{};
  bc[1] = {BoundaryType::Neumann, 0.5};
  const std::size_t n = g.padded_size();
  std::vector<double> u(n), tmp(n), ref, f(n, 0.25);
  for (std::size_t q = 0; q < n; ++q) u[q] = std::sin(0.1 * double(q));
  ref = u;
  std::vector<double> rt(n);
  const StencilCoeffs<double> c = heat_coeffs<double>(g, 1.0, 0.5 * stable_dt(g, 1.0));
  double* a = ref.data();
  double* b = rt.data();
  for (int s = 0; s < 5; ++s) {
    cpu->apply_boundary(a, g, bc);
    cpu->stencil(a, b, f.data(), g, c);
    std::swap(a, b);
  }
  EXPECT_EQ(cpu->max_time_block(), 1);
  double* res = cpu->stencil_steps(u.data(), tmp.data(), f.data(), g, c, bc, 5);
  EXPECT_EQ(res, tmp.data());  // odd number of steps: the scratch buffer
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) ASSERT_EQ(res[g.index(i, j, k)], a[g.index(i, j, k)]);
}

}  // namespace
}  // namespace heatsolve
