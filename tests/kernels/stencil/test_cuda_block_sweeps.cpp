// GPU test of a small grid's sweeps in one block (kernels/stencil/cuda:
// stencil_sweeps_block_kernel, launch_sweeps_in_block; multigrid's levels of 16^3 cells and fewer).
// Skipped without a device.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/stencil/coefficients.hpp"
#include "tests/kernels/stencil/sweep_cases.hpp"

#ifdef HEATSOLVE_HAVE_CUDA
#include "kernels/stencil/cuda/stencil_launch.cuh"
#endif

namespace heatsolve {
namespace {

#ifdef HEATSOLVE_HAVE_CUDA

using namespace sweep_test;

// Small grids' sweeps in one block (cuda::launch_sweeps_in_block: multigrid's levels of 16^3
// cells and fewer), each sweep with its own weights and n past one launch's 8, against the same
// sweeps one by one (apply_boundary, then the 2.5d-register sweep), bit for bit; and the
// backend's stencil_sweeps, which takes that path exactly where sweeps_fit_block says (8192
// cells, Dirichlet and Neumann faces), gives the same bits.
template <typename T>
void check_block_sweeps() {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  const int sizes[][3] = {{16, 16, 16}, {5, 7, 3},  {16, 16, 32}, {17, 16, 32},
                          {64, 64, 1},  {13, 9, 1}, {91, 90, 1},  {92, 90, 1}};
  auto dev = make_backend<T>(BackendKind::Cuda, BackendOptions{});
  for (const auto& size : sizes) {
    GridDesc g;
    g.dims = size[2] == 1 ? 2 : 3;
    g.nx = size[0];
    g.ny = size[1];
    g.nz = size[2];
    g.hx = 1.0 / g.nx;
    g.hy = 1.3 / g.ny;
    g.hz = g.dims == 3 ? 0.8 / g.nz : 1.0;
    const long long cells = static_cast<long long>(g.interior_size());
    dev->prepare(g);
    for (const Case& bc : cases()) {
      const bool fits = cuda::sweeps_fit_block(g, bc.faces, BackendOptions{}.block_sweep_max_cells);
      EXPECT_EQ(fits, cells <= 8192 && bc.name.find("periodic") == std::string::npos)
          << cells << " cells, " << bc.name;
      if (!fits) continue;
      for (int n : {2, 3, 8, 11}) {
        for (const bool source : {true, false}) {
          SCOPED_TRACE(std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" +
                       std::to_string(g.nz) + " " + bc.name + " n=" + std::to_string(n) +
                       (source ? " source" : ""));
          const std::vector<StencilCoeffs<T>> cs = weighted_jacobi_sweeps<T>(g, n, 0.6, 0.23);
          const std::size_t np = g.padded_size();
          const std::vector<T> u0 = random_field<T>(np, 41 + n), f0 = random_field<T>(np, 42);
          const std::vector<T> poison(np, std::numeric_limits<T>::quiet_NaN());
          auto a = dev->allocate(np), b = dev->allocate(np), fa = dev->allocate(np);
          fa->copy_from_host(f0.data());
          const T* f = source ? fa->data() : nullptr;
          const auto result = [&](T* at) {
            std::vector<T> v(np);
            (at == a->data() ? a : b)->copy_to_host(v.data());
            return v;
          };
          const StencilShape shape =
              cuda::resolve_shape<T>(StencilVariant::Register25D, g.dims, {0, 0, 0});
          a->copy_from_host(u0.data());
          b->copy_from_host(poison.data());
          T* cur = a->data();
          T* other = b->data();
          for (const StencilCoeffs<T>& c : cs) {
            dev->apply_boundary(cur, g, bc.faces);
            cuda::launch_stencil<T>(StencilVariant::Register25D, shape, cur, other, f, g, c,
                                    nullptr);
            std::swap(cur, other);
          }
          const std::vector<T> ref = result(cur);
          for (const bool through_backend : {false, true}) {
            a->copy_from_host(u0.data());
            b->copy_from_host(poison.data());
            cur = a->data();
            other = b->data();
            if (through_backend)
              dev->stencil_sweeps(&cur, &other, f, g, cs.data(), n, bc.faces);
            else
              cuda::launch_sweeps_in_block<T>(&cur, &other, f, g, cs.data(), n, bc.faces, nullptr);
            const Diff d = compare(result(cur), ref, g);
            EXPECT_EQ(d.differing, 0) << (through_backend ? "backend: " : "launcher: ")
                                      << "worst at " << d.where << " (rel " << d.rel << ")";
          }
        }
      }
    }
  }
}

TEST(CudaTemporal, SmallGridSweepsInOneBlockFloat) {
  check_block_sweeps<float>();
}
TEST(CudaTemporal, SmallGridSweepsInOneBlockDouble) {
  check_block_sweeps<double>();
}

#endif  // HEATSOLVE_HAVE_CUDA

}  // namespace
}  // namespace heatsolve
