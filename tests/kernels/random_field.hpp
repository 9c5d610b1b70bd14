// Reproducible random test fields, shared by the kernel tests.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace heatsolve::test_fields {

// n values uniform in [lo, hi) from a seeded generator.
template <typename T>
std::vector<T> random_field(std::size_t n, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

}  // namespace heatsolve::test_fields
