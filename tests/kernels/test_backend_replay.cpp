// Backend::replay: the CPU runs the work every time; the CUDA backend runs it once, records
// it at its second call and replays it, so that every call's device work happens exactly
// once (a field doubled per call is 2^n times itself after n calls), and work that cannot be
// recorded (a host read inside) runs as is at every call; Backend::prerecord and
// while_waiting. The Cuda* tests skip themselves without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "core/grid.hpp"
#include "kernels/backend.hpp"

namespace heatsolve {
namespace {

GridDesc cube(int n) {
  GridDesc g;
  g.dims = 3;
  g.nx = g.ny = g.nz = n;
  return g;
}

// A field of 1 + cell number, the work that doubles it (optionally reading its dot product on
// the host), and the interior values read back.
struct Doubling {
  Backend<double>& backend;
  GridDesc g = cube(8);
  std::unique_ptr<Array<double>> x;
  int bodies = 0;  // times the work's host code ran
  bool read_back = false;

  explicit Doubling(Backend<double>& b) : backend(b) {
    std::vector<double> v(g.padded_size(), 0.0);
    for (std::int64_t c = 0; c < std::int64_t(g.interior_size()); ++c)
      v[std::size_t(g.interior_index(c))] = 1.0 + double(c);
    x = backend.allocate(v.size());
    x->copy_from_host(v.data());
  }
  void work() {
    ++bodies;
    double* p = x->data();
    const double* in[] = {p};
    const double c[] = {2.0};
    backend.combine(p, in, c, 1, g);
    if (read_back) EXPECT_GT(backend.dot(p, p, g), 0.0);
  }
  // Whether every interior value is (1 + cell number) * 2^calls.
  bool doubled(int calls) const {
    std::vector<double> v(g.padded_size());
    x->copy_to_host(v.data());
    for (std::int64_t c = 0; c < std::int64_t(g.interior_size()); ++c)
      if (v[std::size_t(g.interior_index(c))] != std::ldexp(1.0 + double(c), calls)) return false;
    return true;
  }
};

TEST(BackendReplay, CpuRunsTheWorkEveryTime) {
  auto cpu = make_backend<double>(BackendKind::Cpu, {});
  EXPECT_FALSE(cpu->records());
  Doubling d(*cpu);
  std::unique_ptr<Recording> slot;
  for (int call = 1; call <= 3; ++call) {
    EXPECT_FALSE(cpu->replay(&slot, [&] { d.work(); }));
    EXPECT_EQ(d.bodies, call);
    EXPECT_TRUE(d.doubled(call)) << "call " << call;
  }
}

TEST(BackendReplay, CudaRecordsAtTheSecondCallAndReplays) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  auto dev = make_backend<double>(BackendKind::Cuda, {});
  EXPECT_TRUE(dev->records());
  Doubling d(*dev);
  std::unique_ptr<Recording> slot;
  const bool replayed[] = {false, true, true, true};
  const int bodies[] = {1, 2, 2, 2};  // run, recorded, then replayed without the host code
  for (int call = 1; call <= 4; ++call) {
    EXPECT_EQ(dev->replay(&slot, [&] { d.work(); }), replayed[call - 1]) << "call " << call;
    EXPECT_EQ(d.bodies, bodies[call - 1]) << "call " << call;
    EXPECT_TRUE(d.doubled(call)) << "call " << call;
  }
}

TEST(BackendReplay, CudaWorkThatCannotBeRecordedRunsAsIs) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  auto dev = make_backend<double>(BackendKind::Cuda, {});
  Doubling d(*dev);
  d.read_back = true;
  std::unique_ptr<Recording> slot;
  const int bodies[] = {1, 3, 4};  // the second call: a refused recording, then the work as is
  for (int call = 1; call <= 3; ++call) {
    EXPECT_FALSE(dev->replay(&slot, [&] { d.work(); })) << "call " << call;
    EXPECT_EQ(d.bodies, bodies[call - 1]) << "call " << call;
    EXPECT_TRUE(d.doubled(call)) << "call " << call;
  }
}

// Backend::prerecord: nothing before the work's first call (its lazy set-up), then the work
// recorded without running (its host code runs, the field stays as it was), and the next call
// replays it; the CPU never records.
TEST(BackendReplay, CudaPrerecordsAfterTheFirstCallWithoutRunning) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  auto dev = make_backend<double>(BackendKind::Cuda, {});
  Doubling d(*dev);
  std::unique_ptr<Recording> slot;
  EXPECT_FALSE(dev->prerecord(&slot, [&] { d.work(); }));
  EXPECT_EQ(d.bodies, 0);
  EXPECT_TRUE(d.doubled(0));
  EXPECT_FALSE(dev->replay(&slot, [&] { d.work(); }));
  EXPECT_TRUE(d.doubled(1));
  EXPECT_TRUE(dev->prerecord(&slot, [&] { d.work(); }));
  EXPECT_EQ(d.bodies, 2);
  EXPECT_TRUE(d.doubled(1)) << "a recording ran";
  EXPECT_TRUE(dev->prerecord(&slot, [&] { d.work(); }));  // recorded already: nothing
  EXPECT_EQ(d.bodies, 2);
  for (int call = 2; call <= 3; ++call) {
    EXPECT_TRUE(dev->replay(&slot, [&] { d.work(); })) << "call " << call;
    EXPECT_EQ(d.bodies, 2) << "call " << call;
    EXPECT_TRUE(d.doubled(call)) << "call " << call;
  }
}

TEST(BackendReplay, CudaWorkThatCannotBeRecordedIsNotPrerecorded) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  auto dev = make_backend<double>(BackendKind::Cuda, {});
  Doubling d(*dev);
  d.read_back = true;
  std::unique_ptr<Recording> slot;
  EXPECT_FALSE(dev->replay(&slot, [&] { d.work(); }));
  EXPECT_FALSE(dev->prerecord(&slot, [&] { d.work(); }));  // refused: nothing ran
  EXPECT_EQ(d.bodies, 2);
  EXPECT_TRUE(d.doubled(1));
  EXPECT_FALSE(dev->replay(&slot, [&] { d.work(); }));  // as is from then on
  EXPECT_EQ(d.bodies, 3);
  EXPECT_TRUE(d.doubled(2));
}

TEST(BackendReplay, CpuNeverPrerecordsNorRunsWorkWhileWaiting) {
  auto cpu = make_backend<double>(BackendKind::Cpu, {});
  Doubling d(*cpu);
  std::unique_ptr<Recording> slot;
  cpu->replay(&slot, [&] { d.work(); });
  EXPECT_FALSE(cpu->prerecord(&slot, [&] { d.work(); }));
  int ran = 0;
  cpu->while_waiting([&] { ++ran; });
  EXPECT_GT(cpu->dot(d.x->data(), d.x->data(), d.g), 0.0);
  cpu->while_waiting(nullptr);
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(d.bodies, 1);
}

// Backend::while_waiting: the work runs once, at the next read of a device result, before it;
// null forgets it.
TEST(BackendReplay, CudaRunsWorkWhileWaitingOnce) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  auto dev = make_backend<double>(BackendKind::Cuda, {});
  Doubling d(*dev);
  int ran = 0;
  dev->while_waiting([&] { ++ran; });
  EXPECT_EQ(ran, 0);
  const double first = dev->dot(d.x->data(), d.x->data(), d.g);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(dev->dot(d.x->data(), d.x->data(), d.g), first);
  EXPECT_EQ(ran, 1);
  dev->while_waiting([&] { ++ran; });
  dev->while_waiting(nullptr);
  dev->dot(d.x->data(), d.x->data(), d.g);
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace heatsolve
