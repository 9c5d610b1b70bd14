#include "kernels/field/cpu/convert_cpu.hpp"

#include <cstdint>

namespace heatsolve {

template <typename T>
void cpu_to_float(const T* src, float* dst, std::size_t n, double scale) {
  const auto count = static_cast<std::int64_t>(n);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) dst[i] = static_cast<float>(scale * double(src[i]));
}

template <typename T>
void cpu_add_float(T* dst, double a, const float* src, double b, std::size_t n) {
  const auto count = static_cast<std::int64_t>(n);
  if (a == 0.0) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < count; ++i) dst[i] = static_cast<T>(b * double(src[i]));
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i)
    dst[i] = static_cast<T>(a * double(dst[i]) + b * double(src[i]));
}

template void cpu_to_float<float>(const float*, float*, std::size_t, double);
template void cpu_to_float<double>(const double*, float*, std::size_t, double);
template void cpu_add_float<float>(float*, double, const float*, double, std::size_t);
template void cpu_add_float<double>(double*, double, const float*, double, std::size_t);

}  // namespace heatsolve
