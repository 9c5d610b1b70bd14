// CPU references for the CUDA GEMMs (kernels/gemm/cuda/gemm.cuh), accumulated in double.
#pragma once

#include <cstdint>

namespace heatsolve::cpu {

// C[M x N] = A[M x K] * B[K x N], row-major, dense. When c_abs is given it receives |A| |B|
// (the scale of the rounding error bound of each entry).
template <typename T>
void gemm_reference(int M, int N, int K, const T* A, const T* B, double* C,
                    double* c_abs = nullptr);

// C[m x n] = A^T B for A: N x m (lda = m), B: N x n (ldb = n), row-major. c_abs as above.
template <typename T>
void gemm_atb_reference(std::int64_t N, int m, int n, const T* A, const T* B, double* C,
                        double* c_abs = nullptr);

}  // namespace heatsolve::cpu
