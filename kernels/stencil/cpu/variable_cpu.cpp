#include "kernels/stencil/cpu/variable_cpu.hpp"

#include <type_traits>

namespace heatsolve {

namespace {
template <int DIM, VariableForm FORM, typename T>
void sweep(const T* u, T* out, const T* f, const GridDesc& g, const VariableCoeffs<T>& c,
           const CellRange& r) {
  const std::int64_t sy = g.stride_y(), sz = g.stride_z();
  const int k0 = DIM == 3 ? r.lo[2] : 0, k1 = DIM == 3 ? r.hi[2] : 1;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = k0; k < k1; ++k)
    for (int j = r.lo[1]; j < r.hi[1]; ++j) {
      const std::int64_t row = g.index(0, j, k);
      for (int i = r.lo[0]; i < r.hi[0]; ++i)
        out[row + i] = variable_point<HostOps, DIM, FORM>(c, u, f, row + i, sy, sz);
    }
}
}  // namespace

template <typename T>
void cpu_stencil_variable(const T* u, T* out, const T* f, const GridDesc& g,
                          const VariableCoeffs<T>& c, const CellRange& r) {
  if (r.empty()) return;
  const auto run = [&](auto form) {
    if (g.dims == 3)
      sweep<3, decltype(form)::value>(u, out, f, g, c, r);
    else
      sweep<2, decltype(form)::value>(u, out, f, g, c, r);
  };
  switch (c.form) {
    case VariableForm::Step:
      return run(std::integral_constant<VariableForm, VariableForm::Step>{});
    case VariableForm::Residual:
      return run(std::integral_constant<VariableForm, VariableForm::Residual>{});
    case VariableForm::Apply:
      return run(std::integral_constant<VariableForm, VariableForm::Apply>{});
    case VariableForm::Jacobi:
      return run(std::integral_constant<VariableForm, VariableForm::Jacobi>{});
    case VariableForm::Combine:
      return run(std::integral_constant<VariableForm, VariableForm::Combine>{});
  }
}

template void cpu_stencil_variable<float>(const float*, float*, const float*, const GridDesc&,
                                          const VariableCoeffs<float>&, const CellRange&);
template void cpu_stencil_variable<double>(const double*, double*, const double*, const GridDesc&,
                                           const VariableCoeffs<double>&, const CellRange&);

}  // namespace heatsolve
