#include "kernels/gemm/cpu/gemm_cpu.hpp"

#include <cmath>
#include <vector>

namespace heatsolve::cpu {

template <typename T>
void gemm_reference(int M, int N, int K, const T* A, const T* B, double* C, double* c_abs) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < M; ++i) {
    std::vector<double> acc(static_cast<std::size_t>(N), 0.0), aacc;
    if (c_abs) aacc.assign(static_cast<std::size_t>(N), 0.0);
    for (int k = 0; k < K; ++k) {
      const double a = A[std::int64_t(i) * K + k];
      const T* brow = B + std::int64_t(k) * N;
      for (int j = 0; j < N; ++j) acc[j] += a * static_cast<double>(brow[j]);
      if (c_abs)
        for (int j = 0; j < N; ++j)
          aacc[j] += std::fabs(a) * std::fabs(static_cast<double>(brow[j]));
    }
    for (int j = 0; j < N; ++j) {
      C[std::int64_t(i) * N + j] = acc[j];
      if (c_abs) c_abs[std::int64_t(i) * N + j] = aacc[j];
    }
  }
}

template <typename T>
void gemm_atb_reference(std::int64_t N, int m, int n, const T* A, const T* B, double* C,
                        double* c_abs) {
  for (int e = 0; e < m * n; ++e) {
    C[e] = 0.0;
    if (c_abs) c_abs[e] = 0.0;
  }
  for (std::int64_t r = 0; r < N; ++r)
    for (int i = 0; i < m; ++i) {
      const double a = A[r * m + i];
      for (int j = 0; j < n; ++j) {
        const double b = B[r * n + j];
        C[i * n + j] += a * b;
        if (c_abs) c_abs[i * n + j] += std::fabs(a) * std::fabs(b);
      }
    }
}

template void gemm_reference<float>(int, int, int, const float*, const float*, double*, double*);
template void gemm_reference<double>(int, int, int, const double*, const double*, double*, double*);
template void gemm_atb_reference<float>(std::int64_t, int, int, const float*, const float*, double*,
                                        double*);
template void gemm_atb_reference<double>(std::int64_t, int, int, const double*, const double*,
                                         double*, double*);

}  // namespace heatsolve::cpu
