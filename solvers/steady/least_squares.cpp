#include "solvers/steady/least_squares.hpp"

#include <algorithm>
#include <cmath>

namespace heatsolve {

std::vector<double> solve_anderson_least_squares(const std::vector<double>& gram, int n, int mk) {
  const int f_col = n - 1;
  std::vector<double> a(mk * mk), b(mk), gamma(mk, 0.0);
  double diag_max = 0;
  for (int i = 0; i < mk; ++i) diag_max = std::max(diag_max, gram[i * n + i]);
  if (diag_max <= 0) return gamma;
  const double shift = 1e-12 * diag_max;
  for (int i = 0; i < mk; ++i) {
    for (int j = 0; j < mk; ++j) a[i * mk + j] = gram[i * n + j];
    a[i * mk + i] += shift;
    b[i] = gram[i * n + f_col];
  }
  // Cholesky A = L L^T in place (lower triangle).
  std::vector<bool> dropped(mk, false);
  for (int j = 0; j < mk; ++j) {
    double d = a[j * mk + j];
    for (int k = 0; k < j; ++k) d -= a[j * mk + k] * a[j * mk + k];
    if (d <= shift) {  // (nearly) dependent column: leave it out
      dropped[j] = true;
      for (int k = 0; k <= j; ++k) a[j * mk + k] = 0;
      a[j * mk + j] = 1;
      for (int i = j + 1; i < mk; ++i) a[i * mk + j] = 0;
      b[j] = 0;
      continue;
    }
    const double l = std::sqrt(d);
    a[j * mk + j] = l;
    for (int i = j + 1; i < mk; ++i) {
      double s = a[i * mk + j];
      for (int k = 0; k < j; ++k) s -= a[i * mk + k] * a[j * mk + k];
      a[i * mk + j] = s / l;
    }
  }
  std::vector<double> y(mk);
  for (int i = 0; i < mk; ++i) {
    double s = b[i];
    for (int k = 0; k < i; ++k) s -= a[i * mk + k] * y[k];
    y[i] = s / a[i * mk + i];
  }
  for (int i = mk - 1; i >= 0; --i) {
    double s = y[i];
    for (int k = i + 1; k < mk; ++k) s -= a[k * mk + i] * gamma[k];
    gamma[i] = dropped[i] ? 0.0 : s / a[i * mk + i];
  }
  return gamma;
}

}  // namespace heatsolve
