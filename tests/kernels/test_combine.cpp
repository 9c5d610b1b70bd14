// Backend::combine on every backend: a weighted sum of fields over the interior, and with no
// fields the zero that FieldSpace::zero writes (a multigrid level's correction before each
// visit) without reading the field. The Cuda* tests skip themselves without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "core/grid.hpp"
#include "kernels/backend.hpp"

namespace heatsolve {
namespace {

GridDesc box() {
  GridDesc g;
  g.dims = 3;
  g.nx = 7;
  g.ny = 5;
  g.nz = 3;
  return g;
}

// Every value of the padded array: interior cell c holds `interior(c)`, ghosts hold -7.
template <class F>
std::vector<double> field(const GridDesc& g, F interior) {
  std::vector<double> v(g.padded_size(), -7.0);
  for (std::int64_t c = 0; c < std::int64_t(g.interior_size()); ++c)
    v[std::size_t(g.interior_index(c))] = interior(c);
  return v;
}

void check_combine(Backend<double>& b) {
  const GridDesc g = box();
  const std::vector<double> a0 = field(g, [](std::int64_t c) { return 1.0 + double(c); });
  const std::vector<double> b0 = field(g, [](std::int64_t c) { return 0.5 * double(c); });
  auto x = b.allocate(a0.size()), y = b.allocate(b0.size());
  x->copy_from_host(a0.data());
  y->copy_from_host(b0.data());
  std::vector<double> got(a0.size());

  // out = 2 x - 4 y = 2 (1 + c) - 2 c = 2 on the interior; ghosts untouched.
  const double* in[] = {x->data(), y->data()};
  const double coeffs[] = {2.0, -4.0};
  b.combine(x->data(), in, coeffs, 2, g);
  x->copy_to_host(got.data());
  EXPECT_EQ(got, field(g, [](std::int64_t) { return 2.0; }));

  // No fields: zeros, even over NaN and infinities (0 * NaN would be NaN: nothing is read).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> bad = field(g, [&](std::int64_t c) { return c % 2 ? nan : -inf; });
  x->copy_from_host(bad.data());
  b.combine(x->data(), nullptr, nullptr, 0, g);
  x->copy_to_host(got.data());
  const std::vector<double> want = field(g, [](std::int64_t) { return 0.0; });
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << "index " << i;
    ASSERT_FALSE(std::signbit(got[i]) && got[i] == 0.0) << "index " << i << ": -0";
  }
}

TEST(Combine, CpuWeightedSumAndZero) {
  auto cpu = make_backend<double>(BackendKind::Cpu, {});
  check_combine(*cpu);
}

TEST(Combine, CudaWeightedSumAndZero) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device available";
  auto dev = make_backend<double>(BackendKind::Cuda, {});
  check_combine(*dev);
}

}  // namespace
}  // namespace heatsolve
