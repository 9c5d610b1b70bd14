// Mixed precision (execution.precision: mixed): a double solve whose correction equation
// A e = r is solved by a float multigrid hierarchy. The solution, the residual and the outer
// iteration (multigrid's cycles as iterative refinement, mg-cg's conjugate gradients) stay in
// double on the run's double fields; the hierarchy is the double operator in float
// (HelmholtzOperator::in_precision: constant coefficients from the same scalars and faces,
// variable ones converted on the device, coarsened from the same double coefficients), so
// smoothing, transfers and the coarse levels move half the bytes.
//
// A correction converts the double residual to float, scaled to unit RMS (far from float's
// underflow and overflow, whatever the problem's units), runs one float cycle from zero and
// adds the correction back in double (Backend::to_float, add_float). The float cycle contracts
// the error as a double one does while float's rounding floor of the correction equation
// (~eps_f * 6/h^2 * ||e|| / ||r||: 1.8e-3 at 512^3) stays below its convergence factor
// (~0.14), so the outer iteration reaches double accuracy in the double solve's cycle count.
#pragma once

#include <cmath>
#include <functional>
#include <memory>

#include "solvers/multigrid/multigrid.hpp"
#include "solvers/steady/pcg.hpp"

namespace heatsolve {

// What a float hierarchy needs besides the double operator: its backend (the run's kind, on
// the same device), the finest level's halo exchange in float (decomposed grids) and the
// coarse levels' agglomeration in float (null on one rank). Empty: not a mixed solve.
struct MixedParts {
  std::unique_ptr<Backend<float>> backend;
  std::function<void(float*)> exchange;
  std::unique_ptr<Agglomeration<float>> agglomeration;
  explicit operator bool() const { return bool(backend); }
};

class FloatCorrection final : public Preconditioner<double> {
 public:
  FloatCorrection(const HelmholtzOperator<double>& fine, const MultigridSettings& settings,
                  MixedParts parts);
  ~FloatCorrection() override;

  // z = e, e from zero by one float V-cycle on A e = r (mg-cg's preconditioner).
  void apply(const double* r, double* z) override;
  // u += e, e from zero by one float cycle of `type` (V or F) on A e = r.
  void correct(double* u, const double* r, MultigridCycle type);
  // One float full-multigrid pass (Multigrid::fmg): Deck: u = its solution of A u = f (the
  // problem's faces; u's values on entry unused, f unscaled); Homogeneous: u += its e of
  // A e = f, f a residual (scaled as a correction's). f null means zero.
  void fmg(double* u, const double* f, BoundaryMode m);
  // The residuals handed over next are multiplied by `scale` before rounding to float and
  // the corrections divided by it: the owner passes sqrt(cells) / ||r|| of its latest
  // residual (1: unscaled).
  void set_scale(double scale) { scale_ = scale > 0 && std::isfinite(scale) ? scale : 1.0; }

  Multigrid<float>& multigrid() { return *mg_; }
  const Multigrid<float>& multigrid() const { return *mg_; }

  // Padded fine-grid fields of float a mixed hierarchy allocates, in doubles (the memory
  // preflight counts fields of the run's precision).
  static double footprint_fields(const GridDesc& fine, bool singular) {
    return 0.5 * (Multigrid<float>::footprint_fields(fine, singular) + 2);
  }

 private:
  Backend<double>& double_backend_;
  std::unique_ptr<Backend<float>> backend_;
  std::unique_ptr<HelmholtzOperator<float>> op_;
  std::unique_ptr<Multigrid<float>> mg_;
  std::unique_ptr<Array<float>> r_, e_;  // the finest level's right side and correction
  std::size_t n_ = 0;                    // padded size of the finest level
  double scale_ = 1.0;
};

}  // namespace heatsolve
