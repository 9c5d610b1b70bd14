#include "solvers/steady/pcg.hpp"

#include <cmath>

namespace heatsolve {

template <typename T>
Pcg<T>::Pcg(const HelmholtzOperator<T>& op, Preconditioner<T>* preconditioner, CgBeta beta)
    : op_(op), m_(preconditioner), beta_(beta) {
  const FieldSpace<T>& s = op_.space();
  r_ = s.allocate();
  if (m_) z_ = s.allocate();
  p_ = s.allocate();
  q_ = s.allocate();
}

template <typename T>
double Pcg<T>::start(T* x, const T* b, BoundaryMode mode) {
  const FieldSpace<T>& s = op_.space();
  op_.residual(x, b, r_->data(), mode);
  const double rn = std::sqrt(s.dot(r_->data(), r_->data()));
  start_from_residual();
  return rn;
}

template <typename T>
void Pcg<T>::start_from_residual() {
  const FieldSpace<T>& s = op_.space();
  T* r = r_->data();
  if (m_) {
    m_->apply(r, z_->data());
    s.copy(p_->data(), z_->data());  // in order with M's work, no host wait
    rz_ = s.dot(r, z_->data());
  } else {
    s.copy(p_->data(), r);
    rz_ = s.dot(r, r);
  }
}

template <typename T>
double Pcg<T>::iterate(T* x, bool stop_on_breakdown, bool* breakdown) {
  const FieldSpace<T>& s = op_.space();
  T* r = r_->data();
  T* p = p_->data();
  T* q = q_->data();
  T* z = m_ ? z_->data() : r;
  op_.apply(p, q, BoundaryMode::Homogeneous);
  const double pq = s.dot(p, q);
  if (breakdown) *breakdown = !(pq > 0);
  if (!(pq > 0) && stop_on_breakdown) return std::sqrt(m_ ? s.dot(r, r) : rz_);
  const double alpha = pq > 0 ? rz_ / pq : 0.0;
  s.axpby(x, 1.0, p, alpha);
  s.axpby(r, 1.0, q, -alpha);
  if (!m_) {
    const double rr = s.dot(r, r);
    s.axpby(p, rr / rz_, r, 1.0);
    rz_ = rr;
    return std::sqrt(rr);
  }
  const double rn = std::sqrt(s.dot(r, r));
  double rz;
  if (beta_ == CgBeta::PolakRibiere) {
    const double r_zold = s.dot(r, z);
    m_->apply(r, z);
    rz = s.dot(r, z);
    s.axpby(p, rz_ > 0 ? (rz - r_zold) / rz_ : 0.0, z, 1.0);
  } else {
    m_->apply(r, z);
    rz = s.dot(r, z);
    s.axpby(p, rz_ > 0 ? rz / rz_ : 0.0, z, 1.0);
  }
  rz_ = rz;
  return rn;
}

template class Pcg<float>;
template class Pcg<double>;

}  // namespace heatsolve
