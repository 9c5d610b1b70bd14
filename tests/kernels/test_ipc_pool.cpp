// device::export_alloc (kernels/ipc_pool.hpp): ranges of shared exported blocks, which a
// neighbour maps once per block. The CudaIpcPool tests skip themselves without a device.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/ipc_pool.hpp"

namespace heatsolve {
namespace {

bool same_block(const device::ExportedRange& a, const device::ExportedRange& b) {
  return std::memcmp(a.handle().bytes, b.handle().bytes, sizeof a.handle().bytes) == 0;
}

TEST(IpcPool, EmptyWithoutDevice) {
  if (cuda_device_available()) GTEST_SKIP() << "a device is present";
  const device::ExportedRange r = device::export_alloc(1024);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.data(), nullptr);
  EXPECT_FALSE(r.set_zero(8));
}

TEST(CudaIpcPool, SmallRangesShareOneBlockAligned) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  const std::size_t bytes[] = {8, 1000, 4096, 300};
  const std::size_t rounded[] = {256, 1024, 4096, 512};
  std::vector<device::ExportedRange> r;
  for (std::size_t b : bytes) r.push_back(device::export_alloc(b));
  for (const auto& x : r) ASSERT_TRUE(x);
  for (std::size_t i = 1; i < r.size(); ++i) {
    EXPECT_TRUE(same_block(r[0], r[i])) << i;
    EXPECT_EQ(r[i].offset() - r[i - 1].offset(), rounded[i - 1]) << i;
    EXPECT_EQ(static_cast<char*>(r[i].data()) - static_cast<char*>(r[i - 1].data()),
              std::ptrdiff_t(rounded[i - 1]))
        << i;
  }
  // Each range is memory of its own: values written to every range read back unchanged.
  for (std::size_t i = 0; i < r.size(); ++i)
    ASSERT_TRUE(device::ipc_probe_write(r[i].data(), 0xC0FFEE00u + i));
  for (std::size_t i = 0; i < r.size(); ++i) {
    std::uint64_t got = 0;
    ASSERT_TRUE(device::ipc_probe_read(r[i].data(), &got));
    EXPECT_EQ(got, 0xC0FFEE00u + i);
  }
}

TEST(CudaIpcPool, LargeRequestGetsABlockOfItsOwn) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  const device::ExportedRange small = device::export_alloc(1000);
  const device::ExportedRange large = device::export_alloc(device::kExportBlockBytes + 1);
  ASSERT_TRUE(small);
  ASSERT_TRUE(large);
  EXPECT_FALSE(same_block(small, large));
  EXPECT_EQ(large.offset(), 0u);
}

TEST(CudaIpcPool, SetZeroClearsItsRangeOnly) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  const device::ExportedRange a = device::export_alloc(256);
  const device::ExportedRange b = device::export_alloc(256);
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  auto* a8 = static_cast<std::uint64_t*>(a.data());
  ASSERT_TRUE(device::ipc_probe_write(a8, 0xAAu));
  ASSERT_TRUE(device::ipc_probe_write(a8 + 31, 0xABu));  // the range's last 8 bytes
  ASSERT_TRUE(device::ipc_probe_write(b.data(), 0xBBu));
  ASSERT_TRUE(a.set_zero(256));
  std::uint64_t first = 1, last = 1, next = 0;
  ASSERT_TRUE(device::ipc_probe_read(a8, &first));
  ASSERT_TRUE(device::ipc_probe_read(a8 + 31, &last));
  ASSERT_TRUE(device::ipc_probe_read(b.data(), &next));
  EXPECT_EQ(first, 0u);
  EXPECT_EQ(last, 0u);
  EXPECT_EQ(next, 0xBBu);
  // Past its block: refused.
  EXPECT_FALSE(a.set_zero(device::kExportBlockBytes + 1));
}

TEST(CudaIpcPool, BlockFreedWithItsLastRange) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  {
    const device::ExportedRange a = device::export_alloc(512);
    const device::ExportedRange b = device::export_alloc(512);
    ASSERT_TRUE(a);
    ASSERT_TRUE(b);
    EXPECT_EQ(b.offset() - a.offset(), 512u);
  }
  // The pool keeps no block alive by itself: the next range starts a new one.
  const device::ExportedRange c = device::export_alloc(512);
  ASSERT_TRUE(c);
  EXPECT_EQ(c.offset(), 0u);
}

}  // namespace
}  // namespace heatsolve
