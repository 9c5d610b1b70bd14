// Vector operations on the fields of one grid (a rank's block, or one multigrid level): the
// linear algebra that PCG, multigrid and the steady solvers share. Dot products and sums are
// combined over ranks when the space spans a decomposed grid (global_sum set).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

#include "kernels/backend.hpp"
#include "solvers/parallel/margins.hpp"

namespace heatsolve {

template <typename T>
class FieldSpace {
 public:
  FieldSpace() = default;
  // `global_sum`: sum over the ranks that share the grid; unset: this grid alone. `margins`:
  // the memory allocate() puts around each field (solvers/parallel/margins.hpp).
  FieldSpace(Backend<T>& backend, const GridDesc& g, std::function<double(double)> global_sum = {},
             Margins margins = {})
      : backend_(&backend), g_(g), global_sum_(std::move(global_sum)), margins_(margins) {}

  // The same grid, ranks and margins with fields of precision U on `backend` (mixed precision).
  template <typename U>
  FieldSpace<U> in_precision(Backend<U>& backend) const {
    return FieldSpace<U>(backend, g_, global_sum_, margins_);
  }

  Backend<T>& backend() const { return *backend_; }
  const GridDesc& grid() const { return g_; }
  bool decomposed() const { return bool(global_sum_); }

  double sum_over_ranks(double local) const { return global_sum_ ? global_sum_(local) : local; }
  // sum a*b over the interior (all ranks).
  double dot(const T* a, const T* b) const { return sum_over_ranks(backend_->dot(a, b, g_)); }
  double sum(const T* x) const { return sum_over_ranks(backend_->reduce(x, g_, ReduceOp::Sum)); }
  // Interior cells over all ranks.
  double cells() const { return sum_over_ranks(double(g_.interior_size())); }

  // y = a y + b x over the interior.
  void axpby(T* y, double a, const T* x, double b) const {
    const T* in[] = {y, x};
    const double c[] = {a, b};
    backend_->combine(y, in, c, 2, g_);
  }
  // x = 0 over the interior (the ghosts keep their values): written without reading x.
  void zero(T* x) const { backend_->combine(x, nullptr, nullptr, 0, g_); }
  // Every value of the padded array, in order with the backend's other work.
  void copy(T* dst, const T* src) const { backend_->copy_values(dst, src, g_.padded_size()); }
  std::unique_ptr<Array<T>> allocate() const {
    return allocate_with_margins(*backend_, g_.padded_size(), margins_);
  }

 private:
  Backend<T>* backend_ = nullptr;
  GridDesc g_;
  std::function<double(double)> global_sum_;
  Margins margins_;
};

}  // namespace heatsolve
