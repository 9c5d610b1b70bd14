#include "kernels/multigrid/cpu/dense_apply_cpu.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace heatsolve {

// Row by row, each row's sum in double over the columns in order (the CUDA kernel's order).
template <typename T>
void cpu_dense_apply_add(const T* m, const T* r, T* x, const GridDesc& g) {
  const std::size_t n = g.interior_size();
  std::vector<double> rc(n);
  for (std::size_t j = 0; j < n; ++j) rc[j] = double(r[g.interior_index(std::int64_t(j))]);
  for (std::size_t i = 0; i < n; ++i) {
    double acc = 0;
    for (std::size_t j = 0; j < n; ++j) acc += double(m[j * n + i]) * rc[j];
    T& xi = x[g.interior_index(std::int64_t(i))];
    xi = T(double(xi) + acc);
  }
}

template void cpu_dense_apply_add<float>(const float*, const float*, float*, const GridDesc&);
template void cpu_dense_apply_add<double>(const double*, const double*, double*, const GridDesc&);

}  // namespace heatsolve
