#include "solvers/operator/helmholtz.hpp"

#include <algorithm>
#include <utility>

namespace heatsolve {

template <typename T>
HelmholtzOperator<T>::HelmholtzOperator(FieldSpace<T> space, const BoundaryFaces& faces,
                                        double sigma, double alpha,
                                        std::function<void(T*)> exchange)
    : space_(std::move(space)),
      faces_(faces),
      sigma_(sigma),
      alpha_(alpha),
      exchange_(std::move(exchange)) {
  for (int f = 0; f < 6; ++f) {
    zero_faces_[f] = faces[f];
    zero_faces_[f].value = 0;
  }
  const GridDesc& g = grid();
  diag_ = sigma_ + alpha_ * 2.0 / (g.hx * g.hx) + alpha_ * 2.0 / (g.hy * g.hy) +
          (g.dims == 3 ? alpha_ * 2.0 / (g.hz * g.hz) : 0.0);
}

template <typename T>
bool HelmholtzOperator<T>::singular() const {
  if (sigma_ != 0.0) return false;
  // A decomposed grid asks every rank: a block without a Dirichlet face may belong to a
  // problem that has one (collective then).
  double dirichlet = 0;
  for (int f = 0; f < 2 * grid().dims; ++f)
    if (faces_[f].type == BoundaryType::Dirichlet) dirichlet = 1;
  return space_.sum_over_ranks(dirichlet) == 0;
}

template <typename T>
StencilCoeffs<T> HelmholtzOperator<T>::explicit_step(double dt) const {
  return heat_coeffs<T>(grid(), alpha_, dt);
}

template <typename T>
StencilCoeffs<T> HelmholtzOperator<T>::jacobi() const {
  return jacobi_coeffs<T>(grid());
}

template <typename T>
StencilCoeffs<T> HelmholtzOperator<T>::weighted_jacobi(double omega) const {
  // x' = x + omega D^-1 (f - A x) = (1 - omega) x + omega/D (alpha sum_d (x_d- + x_d+)/h_d^2 + f).
  const GridDesc& g = grid();
  const double w = omega / diag_;
  StencilCoeffs<T> c;
  c.center = static_cast<T>(1.0 - omega);
  c.cx = static_cast<T>(w * alpha_ / (g.hx * g.hx));
  c.cy = static_cast<T>(w * alpha_ / (g.hy * g.hy));
  c.cz = static_cast<T>(g.dims == 3 ? w * alpha_ / (g.hz * g.hz) : 0.0);
  c.source = static_cast<T>(w);
  return c;
}

template <typename T>
StencilCoeffs<T> HelmholtzOperator<T>::residual_form() const {
  // r = f - A x = f - D x + alpha sum_d (x_d- + x_d+)/h_d^2.
  const GridDesc& g = grid();
  StencilCoeffs<T> c;
  c.center = static_cast<T>(-diag_);
  c.cx = static_cast<T>(alpha_ / (g.hx * g.hx));
  c.cy = static_cast<T>(alpha_ / (g.hy * g.hy));
  c.cz = static_cast<T>(g.dims == 3 ? alpha_ / (g.hz * g.hz) : 0.0);
  c.source = T(1);
  return c;
}

template <typename T>
StencilCoeffs<T> HelmholtzOperator<T>::apply_form() const {
  StencilCoeffs<T> c = residual_form();
  c.center = -c.center;
  c.cx = -c.cx;
  c.cy = -c.cy;
  c.cz = -c.cz;
  c.source = T(0);
  return c;
}

template <typename T>
void HelmholtzOperator<T>::fill(T* x, BoundaryMode mode) const {
  if (exchange_) exchange_(x);
  backend().apply_boundary(x, grid(), faces(mode));
}

template <typename T>
void HelmholtzOperator<T>::residual(T* x, const T* f, T* r, BoundaryMode mode) const {
  fill(x, mode);
  backend().stencil(x, r, f, grid(), residual_form());
}

template <typename T>
void HelmholtzOperator<T>::apply(T* x, T* y, BoundaryMode mode) const {
  fill(x, mode);
  backend().stencil(x, y, nullptr, grid(), apply_form());
}

template <typename T>
void HelmholtzOperator<T>::smooth(T** cur, T** other, const T* f,
                                  const std::vector<double>& weights, int sweeps, bool reverse,
                                  BoundaryMode mode) const {
  const int n = int(weights.size());
  for (int s = 0; s < sweeps; ++s) {
    const int k = n == 1 ? 0 : std::min(reverse ? sweeps - 1 - s : s, n - 1);
    const StencilCoeffs<T> c = weighted_jacobi(weights[k]);
    if (!exchange_) {
      backend().stencil_with_boundary(*cur, *other, f, grid(), c, faces(mode));
    } else {
      fill(*cur, mode);
      backend().stencil(*cur, *other, f, grid(), c);
    }
    std::swap(*cur, *other);
  }
}

template <typename T>
HelmholtzOperator<T> HelmholtzOperator<T>::coarsened(FieldSpace<T> space) const {
  return HelmholtzOperator(std::move(space), zero_faces_, sigma_, alpha_);
}

template class HelmholtzOperator<float>;
template class HelmholtzOperator<double>;

}  // namespace heatsolve
