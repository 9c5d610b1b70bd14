// Where the CUDA backend's memory lives. device::AllocationBatch (kernels/device.hpp): inside
// one, small arrays are carved one after another from a shared block, aligned, zeroed and
// apart; outside it, and for large arrays, nothing is carved. BackendOptions::device: a
// backend made while another device is current allocates everything, its workspaces
// included, on its own. The Cuda* tests skip themselves without a device (two for the last).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/device.hpp"

namespace heatsolve {
namespace {

TEST(AllocationBatch, CarvesNothingWithoutDevice) {
  if (cuda_device_available()) GTEST_SKIP() << "a device is present";
  const device::AllocationBatch batch;
  std::shared_ptr<void> owner;
  EXPECT_EQ(device::carve(1024, &owner), nullptr);
  EXPECT_FALSE(owner);
}

std::ptrdiff_t distance(const Array<double>& a, const Array<double>& b) {
  return reinterpret_cast<const char*>(b.data()) - reinterpret_cast<const char*>(a.data());
}

TEST(CudaAllocationBatch, SmallArraysFollowEachOtherAlignedZeroedAndApart) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  auto backend = make_backend<double>(BackendKind::Cuda, {});
  const std::size_t sizes[] = {10, 1000, 3, 4096};
  const std::ptrdiff_t rounded[] = {256, 8192, 256};
  std::vector<std::unique_ptr<Array<double>>> a;
  {
    const device::AllocationBatch outer;
    a.push_back(backend->allocate(sizes[0]));
    {
      const device::AllocationBatch inner;  // nested: the same block continues
      a.push_back(backend->allocate(sizes[1]));
    }
    a.push_back(backend->allocate(sizes[2]));
    a.push_back(backend->allocate(sizes[3]));
  }
  for (std::size_t i = 1; i < a.size(); ++i) EXPECT_EQ(distance(*a[i - 1], *a[i]), rounded[i - 1]);
  for (const auto& x : a) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(x->data()) % 256, 0u);
  // Zeroed, and each its own memory after the batch ended: values written to every array
  // read back unchanged.
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::vector<double> h(a[i]->size(), -1.0);
    a[i]->copy_to_host(h.data());
    for (double v : h) ASSERT_EQ(v, 0.0) << i;
    for (std::size_t k = 0; k < h.size(); ++k) h[k] = double(i * 100000 + k);
    a[i]->copy_from_host(h.data());
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::vector<double> h(a[i]->size());
    a[i]->copy_to_host(h.data());
    for (std::size_t k = 0; k < h.size(); ++k) ASSERT_EQ(h[k], double(i * 100000 + k)) << i;
  }
}

TEST(CudaAllocationBatch, LargeRequestsAndOtherTimesAreNotCarved) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  auto backend = make_backend<double>(BackendKind::Cuda, {});  // a current device
  std::shared_ptr<void> owner;
  EXPECT_EQ(device::carve(1024, &owner), nullptr) << "no batch";
  const device::AllocationBatch batch;
  EXPECT_EQ(device::carve(device::kCarvedMaxBytes + 1, &owner), nullptr);
  EXPECT_FALSE(owner);
  void* p = device::carve(device::kCarvedMaxBytes, &owner);
  EXPECT_NE(p, nullptr);
  EXPECT_TRUE(owner);
}

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
