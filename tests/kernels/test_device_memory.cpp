// Where the CUDA backend's memory lives. BackendOptions::device: a backend made while another
// device is current allocates everything, its workspaces included, on its own. The test skips
// itself without two devices.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/device.hpp"

namespace heatsolve {
namespace {

// The workspaces of the reductions are members of the backend: they were once made on the
// device current before the backend selected its own, and a rank whose current device was
// not its GPU then faulted at its first norm.
TEST(CudaBackendDevice, ReductionsRunOnTheBackendsOwnDevice) {
  if (device::count() < 2) GTEST_SKIP() << "needs two CUDA devices";
  ASSERT_TRUE(device::free_memory(0));  // device 0 current
  BackendOptions o;
  o.device = 1;
  auto backend = make_backend<double>(BackendKind::Cuda, o);
  GridDesc g;
  g.nx = 40, g.ny = 30, g.nz = 20;
  const auto u = backend->allocate(g.padded_size());
  std::vector<double> h(g.padded_size(), 0.0);
  for (std::size_t c = 0; c < g.interior_size(); ++c)
    h[g.interior_index(std::int64_t(c))] = double(c % 7);
  u->copy_from_host(h.data());
  double expect = 0;
  for (std::size_t c = 0; c < g.interior_size(); ++c) expect += double(c % 7) * double(c % 7);
  EXPECT_EQ(backend->reduce(u->data(), g, ReduceOp::SumSquares), expect);
  EXPECT_EQ(backend->dot(u->data(), u->data(), g), expect);
}

}  // namespace
}  // namespace heatsolve
