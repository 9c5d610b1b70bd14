// Anderson-accelerated Jacobi for -Lap u = f (Walker & Ni's type II mixing with depth m and
// damping beta):
//   x+ = beta g + (1-beta) x - sum_j gamma_j (dG_j - (1-beta) dF_j),
// where g = Jacobi(x) (solver.anderson.every sweeps: alternating Anderson-Jacobi), f = g - x,
// dF/dG the last m differences of f/g, and gamma minimises ||f - dF gamma|| (regularised
// normal equations of the (m+1)x(m+1) Gram matrix of [dF, f], one tall-skinny product). A
// singular problem gets a compatible source and returns the solution of zero mean
// (compatible_start, solvers/steady/jacobi.hpp).
#pragma once

#include <memory>
#include <vector>

#include "solvers/footprint.hpp"
#include "solvers/operator/helmholtz.hpp"
#include "solvers/run/solver_interface.hpp"
#include "solvers/run/sweeper.hpp"

namespace heatsolve {

template <typename T>
class Anderson final : public Solver<T> {
 public:
  explicit Anderson(Sweeper<T>& sweeper);
  static Footprint footprint(const Config& cfg, const GridDesc& local, bool decomposed);

  bool transient() const override { return false; }
  std::int64_t total() const override { return sw_.config().max_iterations; }
  StepReport start(const CheckpointState* restored) override;
  StepReport advance(std::int64_t count, Monitor monitor) override;
  void save(CheckpointState& s) const override;
  int checkpoint_fields() const override { return 2 * m_ + 3; }
  void result(RunResult& r) const override { r.converged = converged_; }

 private:
  // Column stride rounded to 16 bytes so the Gram kernel can use vector loads.
  std::size_t stride() const { return (sw_.grid().padded_size() + 3) / 4 * 4; }

  Sweeper<T>& sw_;
  HelmholtzOperator<T> op_;
  SweepForm<T> form_;
  int m_ = 1, every_ = 1;
  double beta_ = 1, reference_ = 1, residual_ = 0;
  std::int64_t it_ = 0;
  bool converged_ = false, singular_ = false;
  // Columns 0..m-1 of F: the dF ring; column m: the current f. Ghost cells stay zero, so
  // products over the padded length equal products over the interior.
  std::unique_ptr<Array<T>> F_, G_, g_prev_, scratch_, residual_field_;
  std::vector<double> gram_, gamma_, coeffs_;
  std::vector<const T*> inputs_;
};

}  // namespace heatsolve
