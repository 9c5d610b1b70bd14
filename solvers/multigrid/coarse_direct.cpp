#include "solvers/multigrid/coarse_direct.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace heatsolve {

namespace coarse_direct {

template <typename T>
std::vector<double> probe_matrix(const HelmholtzOperator<T>& op) {
  const GridDesc& g = op.grid();
  const int axes = g.dims == 3 ? 3 : 2;
  const int len[3] = {g.nx, g.ny, axes == 3 ? g.nz : 1};
  const std::size_t n = g.interior_size();
  const BoundaryFaces& faces = op.faces(BoundaryMode::Homogeneous);
  // Cell (i, j, k) has colour (i mod m0, j mod m1, k mod m2). A column's rows are its cell and
  // the face neighbours (7-point operators), so cells of one colour, 3 apart along some axis
  // (around the wrap too where the axis is periodic), have disjoint rows and one application
  // of A probes them all: 27 applications in 3D, fewer on short axes.
  int mod[3] = {1, 1, 1};
  bool periodic[3] = {false, false, false};
  for (int a = 0; a < axes; ++a) {
    periodic[a] = faces[std::size_t(2 * a)].type == BoundaryType::Periodic;
    mod[a] = std::min(len[a], 3);
    if (periodic[a] && len[a] % 3 != 0) mod[a] = len[a];
  }
  const auto cell_of = [&](std::size_t c, int ijk[3]) {
    ijk[0] = int(c % std::size_t(len[0]));
    ijk[1] = int(c / std::size_t(len[0]) % std::size_t(len[1]));
    ijk[2] = int(c / (std::size_t(len[0]) * std::size_t(len[1])));
  };
  const auto number = [&](const int ijk[3]) {
    return std::size_t(ijk[0]) +
           std::size_t(len[0]) * (std::size_t(ijk[1]) + std::size_t(len[1]) * std::size_t(ijk[2]));
  };

  Backend<T>& backend = op.backend();
  const std::unique_ptr<Array<T>> v = backend.allocate(g.padded_size());
  const std::unique_ptr<Array<T>> y = backend.allocate(g.padded_size());
  std::vector<T> hv(g.padded_size()), hy(g.padded_size());
  std::vector<double> a(n * n, 0.0);
  for (int c2 = 0; c2 < mod[2]; ++c2)
    for (int c1 = 0; c1 < mod[1]; ++c1)
      for (int c0 = 0; c0 < mod[0]; ++c0) {
        const int colour[3] = {c0, c1, c2};
        const auto in_colour = [&](const int ijk[3]) {
          for (int d = 0; d < 3; ++d)
            if (ijk[d] % mod[d] != colour[d]) return false;
          return true;
        };
        std::fill(hv.begin(), hv.end(), T(0));
        for (std::size_t col = 0; col < n; ++col) {
          int ijk[3];
          cell_of(col, ijk);
          if (in_colour(ijk)) hv[std::size_t(g.interior_index(std::int64_t(col)))] = T(1);
        }
        v->copy_from_host(hv.data());
        op.apply(v->data(), y->data(), BoundaryMode::Homogeneous);
        y->copy_to_host(hy.data());
        for (std::size_t col = 0; col < n; ++col) {
          int ijk[3];
          cell_of(col, ijk);
          if (!in_colour(ijk)) continue;
          a[col * n + col] = double(hy[std::size_t(g.interior_index(std::int64_t(col)))]);
          for (int d = 0; d < axes; ++d)
            for (int step : {-1, 1}) {
              int nb[3] = {ijk[0], ijk[1], ijk[2]};
              nb[d] += step;
              if (nb[d] < 0 || nb[d] >= len[d]) {
                if (!periodic[d]) continue;
                nb[d] = (nb[d] + len[d]) % len[d];
              }
              a[col * n + number(nb)] = double(hy[std::size_t(g.index(nb[0], nb[1], nb[2]))]);
            }
        }
      }
  return a;
}

std::vector<double> solution_matrix(std::vector<double> a, std::size_t n, bool singular) {
  // B = A + c 1 1^T (row-major) with c n the mean diagonal: the constants' eigenvalue then
  // sits among A's others instead of at 0.
  double trace = 0, largest = 0;
  for (std::size_t i = 0; i < n; ++i) trace += a[i * n + i];
  const double c = singular ? trace / double(n) / double(n) : 0.0;
  std::vector<double> b(n * n), inv(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    inv[i * n + i] = 1;
    for (std::size_t j = 0; j < n; ++j) {
      b[i * n + j] = a[j * n + i] + c;
      largest = std::max(largest, std::abs(b[i * n + j]));
    }
  }
  a.clear();
  // Gauss-Jordan elimination with partial pivoting: inv = B^-1.
  const double tiny = double(n) * std::numeric_limits<double>::epsilon() * largest;
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t p = k;
    for (std::size_t i = k + 1; i < n; ++i)
      if (std::abs(b[i * n + k]) > std::abs(b[p * n + k])) p = i;
    if (!(std::abs(b[p * n + k]) > tiny))
      throw SingularCoarseLevel("multigrid: the coarsest level's operator (" + std::to_string(n) +
                                " cells) is singular" +
                                (singular ? " beyond the constants" : std::string()));
    if (p != k)
      for (std::size_t j = 0; j < n; ++j) {
        std::swap(b[k * n + j], b[p * n + j]);
        std::swap(inv[k * n + j], inv[p * n + j]);
      }
    const double d = 1.0 / b[k * n + k];
    for (std::size_t j = 0; j < n; ++j) {
      b[k * n + j] *= d;
      inv[k * n + j] *= d;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const double f = b[i * n + k];
      if (i == k || f == 0) continue;
      for (std::size_t j = k; j < n; ++j) b[i * n + j] -= f * b[k * n + j];
      for (std::size_t j = 0; j < n; ++j) inv[i * n + j] -= f * inv[k * n + j];
    }
  }
  if (singular) {  // P inv P: each row's mean, then each column's, removed
    for (std::size_t i = 0; i < n; ++i) {
      double mean = 0;
      for (std::size_t j = 0; j < n; ++j) mean += inv[i * n + j];
      mean /= double(n);
      for (std::size_t j = 0; j < n; ++j) inv[i * n + j] -= mean;
    }
    for (std::size_t j = 0; j < n; ++j) {
      double mean = 0;
      for (std::size_t i = 0; i < n; ++i) mean += inv[i * n + j];
      mean /= double(n);
      for (std::size_t i = 0; i < n; ++i) inv[i * n + j] -= mean;
    }
  }
  std::vector<double> m(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) m[j * n + i] = inv[i * n + j];
  return m;
}

}  // namespace coarse_direct

template <typename T>
bool DirectCoarseSolver<T>::suits(const HelmholtzOperator<T>& op) {
  const std::size_t n = op.grid().interior_size();
  return n > 0 && n <= kMaxCells && !op.space().decomposed() && !op.exchanges();
}

template <typename T>
DirectCoarseSolver<T>::DirectCoarseSolver(const HelmholtzOperator<T>& op, bool singular)
    : backend_(op.backend()), grid_(op.grid()) {
  if (!suits(op))
    throw std::invalid_argument("DirectCoarseSolver: a level of at most " +
                                std::to_string(kMaxCells) + " cells on one rank");
  const std::size_t n = grid_.interior_size();
  const std::vector<double> m =
      coarse_direct::solution_matrix(coarse_direct::probe_matrix(op), n, singular);
  const std::vector<T> stored(m.begin(), m.end());
  m_ = backend_.allocate(n * n);
  m_->copy_from_host(stored.data());
}

template <typename T>
void DirectCoarseSolver<T>::solve_add(const T* r, T* x) const {
  backend_.dense_apply_add(m_->data(), r, x, grid_);
}

template class DirectCoarseSolver<float>;
template class DirectCoarseSolver<double>;
template std::vector<double> coarse_direct::probe_matrix(const HelmholtzOperator<float>&);
template std::vector<double> coarse_direct::probe_matrix(const HelmholtzOperator<double>&);

}  // namespace heatsolve
