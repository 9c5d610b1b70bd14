// Values between the precisions on host memory (contract: Backend::to_float, add_float):
// a mixed-precision solve's residual to its float hierarchy and the correction back.
#pragma once

#include <cstddef>

namespace heatsolve {

// dst[i] = float(scale * src[i]) for i < n.
template <typename T>
void cpu_to_float(const T* src, float* dst, std::size_t n, double scale);
// dst[i] = a dst[i] + b src[i] in T for i < n (a == 0: dst[i] = b src[i], dst not read).
template <typename T>
void cpu_add_float(T* dst, double a, const float* src, double b, std::size_t n);

}  // namespace heatsolve
