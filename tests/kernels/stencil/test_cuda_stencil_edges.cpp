// The CUDA stencils at their edges: the face rules applied inside the sweep
// (Backend::stencil_with_boundary) against a ghost fill and sweep, every compiled block shape
// against the CPU reference, and the staged variants' alignment edges (2.5d-async, 2.5d-tma).
// They skip themselves without a CUDA device; without CUDA the file is empty.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "tests/kernels/stencil/cuda_stencil_cases.hpp"

#ifdef HEATSOLVE_HAVE_CUDA
#include "kernels/device.hpp"
#include "kernels/stencil/cuda/stencil_launch.cuh"

namespace heatsolve {
namespace {

using namespace stencil_cases;

// Backend::stencil_with_boundary (the heat loop's sweep) against apply_boundary + stencil: the
// interior of out bit for bit, with u's physical ghosts poisoned (a kernel that applies the
// rules itself must not read them), an Exchange face whose ghosts must be read, every face
// type (periodic: the fallback), odd grids (partial tiles), whole tiles and a degenerate grid.
template <typename T>
void check_rules_in_sweep() {
  SKIP_WITHOUT_GPU();
  for (int dims : {2, 3})
    for (int grid = 0; grid < 3; ++grid) {
      GridDesc g = make_grid(dims);
      if (grid == 1) {  // one cell across x, two across y, one plane in 3D
        g.nx = 1;
        g.ny = 2;
        if (dims == 3) g.nz = 1;
      } else if (grid == 2) {  // whole 2.5d-tma tiles (default shapes: 256 x 8, 2D 512)
        g.nx = dims == 3 ? 256 : 512;
        g.ny = dims == 3 ? 16 : 9;
        g.nz = dims == 3 ? 5 : 1;
      }
      for (const BcCase& bc : bc_cases())
        for (const std::string v : {"2.5d-tma", "naive", "2.5d-register"}) {
          if (!stencil_variant_supported(*parse_stencil_variant(v))) continue;
          SCOPED_TRACE(v + " " + std::to_string(dims) + "D grid " + std::to_string(grid) + " " +
                       bc.name);
          BackendOptions o;
          o.kernel = v;
          auto dev = make_backend<T>(BackendKind::Cuda, o);
          dev->prepare(g);
          BoundaryFaces faces = bc.faces;
          faces[2].type = BoundaryType::Exchange;  // y-: its ghosts are another rank's values
          if (faces[3].type == BoundaryType::Periodic) faces[3].type = BoundaryType::Exchange;
          const std::size_t n = g.padded_size();
          const std::vector<T> u0 = random_field<T>(n, 5), f0 = random_field<T>(n, 6);
          std::vector<T> poisoned = u0;  // NaN in every ghost cell but the Exchange faces'
          const int nz = g.dims == 3 ? g.nz : 1, kg = g.dims == 3 ? 1 : 0;
          for (int k = -kg; k < nz + kg; ++k)
            for (int j = -1; j <= g.ny; ++j)
              for (int i = -1; i <= g.nx; ++i) {
                const bool ghost = i < 0 || i >= g.nx || j < 0 || j >= g.ny || k < 0 || k >= nz;
                const bool exchanged = i >= 0 && i < g.nx && k >= 0 && k < nz &&
                                       ((j == -1 && faces[2].type == BoundaryType::Exchange) ||
                                        (j == g.ny && faces[3].type == BoundaryType::Exchange));
                if (ghost && !exchanged)
                  poisoned[g.index(i, j, k)] = std::numeric_limits<T>::quiet_NaN();
              }
          auto du = dev->allocate(n), dp = dev->allocate(n), df = dev->allocate(n),
               da = dev->allocate(n), db = dev->allocate(n);
          du->copy_from_host(u0.data());
          dp->copy_from_host(poisoned.data());
          df->copy_from_host(f0.data());
          const StencilCoeffs<T> c = heat_coeffs<T>(g, 0.7, 0.2 * stable_dt(g, 0.7));
          dev->apply_boundary(du->data(), g, faces);
          dev->stencil(du->data(), da->data(), df->data(), g, c);
          std::vector<T> want(n), got(n);
          da->copy_to_host(want.data());
          const auto check = [&](const std::string& what) {
            db->copy_to_host(got.data());
            for (int k = 0; k < nz; ++k)
              for (int j = 0; j < g.ny; ++j)
                for (int i = 0; i < g.nx; ++i) {
                  const std::int64_t q = g.index(i, j, k);
                  ASSERT_EQ(std::memcmp(&got[q], &want[q], sizeof(T)), 0)
                      << what << " cell (" << i << "," << j << "," << k << "): " << got[q] << " vs "
                      << want[q];
                }
          };
          dev->stencil_with_boundary(dp->data(), db->data(), df->data(), g, c, faces);
          check("backend");
          // Every compiled shape of a variant that applies the rules; 2.5d-tma with chunks of
          // 1 and 3 planes and the automatic one (a chunk of one plane stages the ghost planes
          // -1 and ns together).
          const StencilVariant sv = *parse_stencil_variant(v);
          if (!cuda::stencil_applies_rules(sv, faces)) continue;
          const bool streaming = stencil_variant_row(sv).streaming;
          for (StencilShape shape : compiled_stencil_shapes(sv, dims, int(sizeof(T))))
            for (int chunk : streaming ? std::vector<int>{1, 3, 0} : std::vector<int>{shape.bz}) {
              shape.bz = chunk;
              // The reference with this shape's own arithmetic (u's ghosts filled above).
              cuda::launch_stencil<T>(sv, shape, du->data(), da->data(), df->data(), g, c, nullptr);
              da->copy_to_host(want.data());
              dp->copy_from_host(poisoned.data());
              cuda::launch_stencil<T>(sv, shape, dp->data(), db->data(), df->data(), g, c, nullptr,
                                      &faces);
              check(shape.str());
            }
        }
    }
}

TEST(CudaStencil, RulesInSweepMatchGhostFillFloat) {
  check_rules_in_sweep<float>();
}
TEST(CudaStencil, RulesInSweepMatchGhostFillDouble) {
  check_rules_in_sweep<double>();
}

// Every compiled block shape of every variant (including the ones BackendOptions.block cannot
// name), with explicit small chunks for the streaming rungs.
template <typename T>
void check_all_shapes() {
  SKIP_WITHOUT_GPU();
  for (int dims : {2, 3}) {
    const GridDesc g = make_grid(dims);
    for (StencilVariant v : kAllStencilVariants) {
      std::vector<StencilShape> shapes = compiled_stencil_shapes(v, dims, int(sizeof(T)));
      if (stencil_variant_row(v).streaming)
        for (std::size_t q = 0, m = shapes.size(); q < m; ++q) {
          StencilShape s = shapes[q];
          s.bz = 5;  // chunks of 5 planes: the last one partial
          shapes.push_back(s);
          s.bz = 1;
          shapes.push_back(s);
        }
      for (const StencilShape& s : shapes) {
        SCOPED_TRACE(std::string(stencil_variant_name(v)) + " " + s.str() + " " +
                     std::to_string(dims) + "D");
        auto dev = make_backend<T>(BackendKind::Cuda, {});
        std::string where;
        const double err = compare_steps<T>(
            *dev, g, bc_cases().back().faces, steps(12), 31,
            [&](const T* u, T* out, const T* f, const StencilCoeffs<T>& c) {
              cuda::launch_stencil<T>(v, s, u, out, f, g, c, nullptr);
            },
            &where);
        EXPECT_LE(err, tolerance<T>()) << "worst at " << where;
      }
    }
  }
}

TEST(CudaStencil, EveryCompiledShapeFloat) {
  check_all_shapes<float>();
}
TEST(CudaStencil, EveryCompiledShapeDouble) {
  check_all_shapes<double>();
}

// 2.5d-async and 2.5d-tma stage planes with copies whose alignment depends on nx, on the plane
// and on the buffer address (vector cp.async; 16-byte aligned bulk row copies): every
// compiled shape of both on grids of both nx parities, degenerate
// extents (nx, ny or nz = 1; a tile wider than the grid; several partial tiles), chunks of
// 1, 3 and auto planes (fewer planes than stages), buffers shifted by 0..3 elements, with
// and without a source; ghost cells of `out` must stay untouched (poisoned).
template <typename T>
void check_async_edges() {
  SKIP_WITHOUT_GPU();
  struct Case {
    int dims, nx, ny, nz;
  };
  const std::vector<Case> cases =
      quick() ? std::vector<Case>{{3, 38, 9, 5}, {2, 66, 7, 1}}
              : std::vector<Case>{{3, 38, 29, 23}, {3, 130, 9, 7},  {3, 37, 1, 1},  {3, 1, 5, 3},
                                  {3, 6, 17, 2},   {3, 259, 35, 6}, {2, 66, 45, 1}, {2, 1030, 4, 1},
                                  {2, 600, 7, 1},  {2, 67, 1, 1},   {2, 1, 9, 1}};
  const BoundaryFaces bc = bc_cases().back().faces;
  for (const Case& cs : cases) {
    GridDesc g;
    g.dims = cs.dims;
    g.nx = cs.nx;
    g.ny = cs.ny;
    g.nz = cs.nz;
    g.hx = 1.0 / g.nx;
    g.hy = 1.3 / g.ny;
    g.hz = 0.8 / g.nz;
    const std::size_t n = g.padded_size();
    const StencilCoeffs<T> c = heat_coeffs<T>(g, 1.0, 0.9 * stable_dt(g, 1.0));
    std::vector<T> u = random_field<T>(n, 41), f = random_field<T>(n, 42);
    cpu_apply_boundary(u.data(), g, bc);
    std::vector<T> ref(n), ref_nof(n);
    cpu_stencil(u.data(), ref.data(), f.data(), g, c);
    cpu_stencil(u.data(), ref_nof.data(), static_cast<const T*>(nullptr), g, c);
    auto dev = make_backend<T>(BackendKind::Cuda, {});
    constexpr int kMaxShift = 3;
    const std::size_t padded = n + kMaxShift;
    auto du = dev->allocate(padded), df = dev->allocate(padded), dout = dev->allocate(padded);
    const std::vector<T> poison(padded, std::numeric_limits<T>::quiet_NaN());
    for (StencilVariant v : {StencilVariant::Async25D, StencilVariant::Tma25D})
      for (const StencilShape& base : compiled_stencil_shapes(v, g.dims, int(sizeof(T))))
        for (int chunk : {0, 1, 3})
          for (int shift = 0; shift <= kMaxShift; ++shift)
            for (bool with_f : {true, false}) {
              StencilShape s = base;
              s.bz = chunk;
              SCOPED_TRACE(std::string(stencil_variant_name(v)) + " " + s.str() + " grid " +
                           std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" +
                           std::to_string(g.nz) + " " + std::to_string(g.dims) + "D shift " +
                           std::to_string(shift) + (with_f ? " source" : " no source"));
              std::vector<T> host(padded, T(0));
              std::copy(u.begin(), u.end(), host.begin() + shift);
              du->copy_from_host(host.data());
              std::fill(host.begin(), host.end(), T(0));
              std::copy(f.begin(), f.end(), host.begin() + shift);
              df->copy_from_host(host.data());
              dout->copy_from_host(poison.data());
              cuda::launch_stencil<T>(v, s, du->data() + shift, dout->data() + shift,
                                      with_f ? df->data() + shift : nullptr, g, c, nullptr);
              dev->synchronize();
              dout->copy_to_host(host.data());
              const std::vector<T> got(host.begin() + shift, host.begin() + shift + n);
              std::string where;
              EXPECT_LE(max_rel_interior(got, with_f ? ref : ref_nof, g, &where), tolerance<T>())
                  << "worst at " << where;
              // Only interior cells are written: everything else keeps its NaN.
              std::size_t written = 0;
              for (const T& v : host) written += !std::isnan(v);
              EXPECT_EQ(written, g.interior_size());
            }
  }
}

TEST(CudaStencil, AsyncEdgesFloat) {
  check_async_edges<float>();
}
TEST(CudaStencil, AsyncEdgesDouble) {
  check_async_edges<double>();
}

}  // namespace
}  // namespace heatsolve
#endif
