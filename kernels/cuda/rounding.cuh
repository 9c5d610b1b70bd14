// Arithmetic with its rounding explicit, overloaded on the precision, so that nvcc cannot
// contract a multiply and an add into an FMA where the CPU's order is to be kept (the
// stencil point update, generated source fields).
#pragma once

#include <cuda_runtime.h>

namespace heatsolve::cuda {

__device__ __forceinline__ float mul_rn(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ __forceinline__ double mul_rn(double a, double b) {
  return __dmul_rn(a, b);
}
__device__ __forceinline__ float add_rn(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ __forceinline__ double add_rn(double a, double b) {
  return __dadd_rn(a, b);
}
__device__ __forceinline__ float fma_rn(float a, float b, float c) {
  return __fmaf_rn(a, b, c);
}
__device__ __forceinline__ double fma_rn(double a, double b, double c) {
  return __fma_rn(a, b, c);
}

}  // namespace heatsolve::cuda
