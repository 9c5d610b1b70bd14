// The variable-coefficient operator A u = m u - div(K grad u) in cell-centred finite volumes:
//   L(u)_i = sum over the faces f of cell i of w_f (u_nb(f) - u_i),   w_f = K_f / h_f^2,
// K_f the face's conductance (the harmonic mean of the two cells' conductivities; a boundary
// face's conductance to the exterior value its ghost holds). The face coefficients of a grid
// are stored per cell for its lower face: wx at index(i, j, k) is the face between cells
// i - 1 and i, for i in [0, nx] (i = nx: the upper boundary face, in the ghost column); the
// same for wy and wz. One sweep computes one form:
//   Step      out = u + (dt s_i) (L(u) + f)        explicit heat, s = 1/(rho cp)
//   Residual  out = (f - m_i u) + L(u)              r = f - A u
//   Apply     out = m_i u - L(u)                    y = A u
//   Jacobi    out = u + omega ((f - m_i u) + L(u)) / (m_i + sum_f w_f)
//   Combine   out = (m_i u + a L(u)) + b f              an implicit step's right side
// with every operation rounded on its own, in the order of variable_point(), on every backend
// (the CUDA kernels use __fadd_rn/__fmul_rn/__fdiv_rn): CPU and GPU results agree bit for bit.
#pragma once

#include <cstdint>

#include "core/grid.hpp"

namespace heatsolve {

enum class VariableForm { Step, Residual, Apply, Jacobi, Combine };

template <typename T>
struct VariableCoeffs {
  const T* wx = nullptr;
  const T* wy = nullptr;
  const T* wz = nullptr;     // null in 2D
  const T* mass = nullptr;   // m per cell; null: 0 (Poisson)
  const T* scale = nullptr;  // Step: 1/(rho cp) per cell
  VariableForm form = VariableForm::Step;
  T dt = 0;        // Step
  T omega = 1;     // Jacobi
  T a = 0, b = 0;  // Combine
};

// The rounded operations the kernels share (host: plain operators; the host build contracts
// nothing).
struct HostOps {
  template <typename T>
  static T add(T a, T b) {
    return a + b;
  }
  template <typename T>
  static T sub(T a, T b) {
    return a - b;
  }
  template <typename T>
  static T mul(T a, T b) {
    return a * b;
  }
  template <typename T>
  static T div(T a, T b) {
    return a / b;
  }
};

// One point of form FORM (c.form is not read): u at index i, its neighbours at i -+ 1, i -+ sy,
// i -+ sz (3D), the face coefficients at i and i + stride. f may be null.
template <typename Ops, int DIM, VariableForm FORM, typename T>
HS_HOST_DEVICE inline T variable_point(const VariableCoeffs<T>& c, const T* u, const T* f,
                                       std::int64_t i, std::int64_t sy, std::int64_t sz) {
  const T uc = u[i];
  const T w0 = c.wx[i], w1 = c.wx[i + 1], w2 = c.wy[i], w3 = c.wy[i + sy];
  T l = Ops::mul(w0, Ops::sub(u[i - 1], uc));
  l = Ops::add(l, Ops::mul(w1, Ops::sub(u[i + 1], uc)));
  l = Ops::add(l, Ops::mul(w2, Ops::sub(u[i - sy], uc)));
  l = Ops::add(l, Ops::mul(w3, Ops::sub(u[i + sy], uc)));
  T w4 = T(0), w5 = T(0);
  if (DIM == 3) {
    w4 = c.wz[i];
    w5 = c.wz[i + sz];
    l = Ops::add(l, Ops::mul(w4, Ops::sub(u[i - sz], uc)));
    l = Ops::add(l, Ops::mul(w5, Ops::sub(u[i + sz], uc)));
  }
  const T m = c.mass ? c.mass[i] : T(0);
  switch (FORM) {
    case VariableForm::Step: {
      const T t = f ? Ops::add(l, f[i]) : l;
      return Ops::add(uc, Ops::mul(Ops::mul(c.dt, c.scale[i]), t));
    }
    case VariableForm::Residual: {
      const T mu = Ops::mul(m, uc);
      return Ops::add(f ? Ops::sub(f[i], mu) : -mu, l);
    }
    case VariableForm::Apply:
      return Ops::sub(Ops::mul(m, uc), l);
    case VariableForm::Jacobi: {
      T d = Ops::add(Ops::add(Ops::add(m, w0), w1), Ops::add(w2, w3));
      if (DIM == 3) d = Ops::add(d, Ops::add(w4, w5));
      const T mu = Ops::mul(m, uc);
      const T r = Ops::add(f ? Ops::sub(f[i], mu) : -mu, l);
      return Ops::add(uc, Ops::mul(c.omega, Ops::div(r, d)));
    }
    case VariableForm::Combine: {
      const T v = Ops::add(Ops::mul(m, uc), Ops::mul(c.a, l));
      return f ? Ops::add(v, Ops::mul(c.b, f[i])) : v;
    }
  }
  return uc;
}

}  // namespace heatsolve
