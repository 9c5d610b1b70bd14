#include <type_traits>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/stencil/cuda/variable_stencil.cuh"

namespace heatsolve::cuda {

namespace {

// Every operation rounded on its own, as on the host (variable_point's order).
struct DeviceOps {
  __device__ static float add(float a, float b) { return __fadd_rn(a, b); }
  __device__ static float sub(float a, float b) { return __fsub_rn(a, b); }
  __device__ static float mul(float a, float b) { return __fmul_rn(a, b); }
  __device__ static float div(float a, float b) { return __fdiv_rn(a, b); }
  __device__ static double add(double a, double b) { return __dadd_rn(a, b); }
  __device__ static double sub(double a, double b) { return __dsub_rn(a, b); }
  __device__ static double mul(double a, double b) { return __dmul_rn(a, b); }
  __device__ static double div(double a, double b) { return __ddiv_rn(a, b); }
};

// A block of kBlockX x kBlockY threads walks kPlanes planes of the stream axis (z; 2D: one
// row band per block), one column per thread: consecutive planes reuse the column's u and wz
// through L1, and x/y neighbours come from the block's own rows (coalesced along x).
constexpr int kBlockX = 32, kBlockY = 8, kPlanes = 8;

template <int DIM, VariableForm FORM, typename T>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    variable_kernel(const T* __restrict__ u, T* __restrict__ out, const T* __restrict__ f,
                    GridDesc g, VariableCoeffs<T> c, CellRange r) {
  const int i = r.lo[0] + blockIdx.x * kBlockX + threadIdx.x;
  const int j = r.lo[1] + blockIdx.y * kBlockY + threadIdx.y;
  if (i >= r.hi[0] || j >= r.hi[1]) return;
  const std::int64_t sy = g.stride_y(), sz = g.stride_z();
  if (DIM == 2) {
    const std::int64_t idx = g.index(i, j, 0);
    out[idx] = variable_point<DeviceOps, DIM, FORM>(c, u, f, idx, sy, sz);
    return;
  }
  const int k0 = r.lo[2] + blockIdx.z * kPlanes;
  const int k1 = min(k0 + kPlanes, r.hi[2]);
  std::int64_t idx = g.index(i, j, k0);
  for (int k = k0; k < k1; ++k, idx += sz)
    out[idx] = variable_point<DeviceOps, DIM, FORM>(c, u, f, idx, sy, sz);
}

template <int DIM, VariableForm FORM, typename T>
void launch(const T* u, T* out, const T* f, const GridDesc& g, const VariableCoeffs<T>& c,
            const CellRange& r, cudaStream_t stream) {
  const dim3 block(kBlockX, kBlockY, 1);
  const int planes = DIM == 3 ? r.hi[2] - r.lo[2] : 1;
  const dim3 grid((r.hi[0] - r.lo[0] + kBlockX - 1) / kBlockX,
                  (r.hi[1] - r.lo[1] + kBlockY - 1) / kBlockY,
                  DIM == 3 ? (planes + kPlanes - 1) / kPlanes : 1);
  variable_kernel<DIM, FORM, T><<<grid, block, 0, stream>>>(u, out, f, g, c, r);
  CUDA_CHECK_LAUNCH();
}

template <VariableForm FORM, typename T>
void launch_dims(const T* u, T* out, const T* f, const GridDesc& g, const VariableCoeffs<T>& c,
                 const CellRange& r, cudaStream_t stream) {
  if (g.dims == 3)
    launch<3, FORM>(u, out, f, g, c, r, stream);
  else
    launch<2, FORM>(u, out, f, g, c, r, stream);
}

}  // namespace

template <typename T>
void launch_stencil_variable(const T* u, T* out, const T* f, const GridDesc& g,
                             const VariableCoeffs<T>& c, const CellRange& r, cudaStream_t stream) {
  if (r.empty()) return;
  switch (c.form) {
    case VariableForm::Step:
      return launch_dims<VariableForm::Step>(u, out, f, g, c, r, stream);
    case VariableForm::Residual:
      return launch_dims<VariableForm::Residual>(u, out, f, g, c, r, stream);
    case VariableForm::Apply:
      return launch_dims<VariableForm::Apply>(u, out, f, g, c, r, stream);
    case VariableForm::Jacobi:
      return launch_dims<VariableForm::Jacobi>(u, out, f, g, c, r, stream);
    case VariableForm::Combine:
      return launch_dims<VariableForm::Combine>(u, out, f, g, c, r, stream);
  }
}

template void launch_stencil_variable<float>(const float*, float*, const float*, const GridDesc&,
                                             const VariableCoeffs<float>&, const CellRange&,
                                             cudaStream_t);
template void launch_stencil_variable<double>(const double*, double*, const double*,
                                              const GridDesc&, const VariableCoeffs<double>&,
                                              const CellRange&, cudaStream_t);

}  // namespace heatsolve::cuda
