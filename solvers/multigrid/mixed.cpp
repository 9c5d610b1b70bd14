#include "solvers/multigrid/mixed.hpp"

#include <utility>

namespace heatsolve {

FloatCorrection::FloatCorrection(const HelmholtzOperator<double>& fine,
                                 const MultigridSettings& settings, MixedParts parts)
    : double_backend_(fine.backend()), backend_(std::move(parts.backend)) {
  const GridDesc& g = fine.grid();
  n_ = g.padded_size();
  op_ = std::make_unique<HelmholtzOperator<float>>(
      fine.in_precision<float>(fine.space().in_precision(*backend_), std::move(parts.exchange)));
  // The finest float level is swept by this backend: its kernels are tuned here (the coarse
  // levels' in the hierarchy's build; variable coefficients have one kernel; fused smoothing
  // and restriction run untuned kernels).
  if (!op_->is_variable() && !settings.fused) backend_->prepare(g);
  mg_ = std::make_unique<Multigrid<float>>(*op_, settings, std::move(parts.agglomeration));
  r_ = op_->space().allocate();  // with the block's margins (deep smoothing)
  e_ = op_->space().allocate();
}

FloatCorrection::~FloatCorrection() = default;

void FloatCorrection::apply(const double* r, double* z) {
  double_backend_.to_float(r, r_->data(), n_, scale_);
  mg_->correction(r_->data(), e_->data(), MultigridCycle::V);
  double_backend_.add_float(z, 0.0, e_->data(), 1.0 / scale_, n_);
}

void FloatCorrection::correct(double* u, const double* r, MultigridCycle type) {
  double_backend_.to_float(r, r_->data(), n_, scale_);
  mg_->correction(r_->data(), e_->data(), type);
  double_backend_.add_float(u, 1.0, e_->data(), 1.0 / scale_, n_);
}

void FloatCorrection::fmg(double* u, const double* f, BoundaryMode m) {
  const bool problem = m == BoundaryMode::Deck;
  const double scale = problem ? 1.0 : scale_;
  if (f)
    double_backend_.to_float(f, r_->data(), n_, scale);
  else
    r_->set_zero();
  mg_->fmg(e_->data(), r_->data(), m);
  double_backend_.add_float(u, problem ? 0.0 : 1.0, e_->data(), 1.0 / scale, n_);
}

}  // namespace heatsolve
