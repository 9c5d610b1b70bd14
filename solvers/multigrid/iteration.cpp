#include "solvers/multigrid/iteration.hpp"

#include <cmath>
#include <utility>

namespace heatsolve {

template <typename T>
MultigridIteration<T>::MultigridIteration(const HelmholtzOperator<T>& fine,
                                          const MultigridSettings& settings, SolverMethod method,
                                          std::unique_ptr<Agglomeration<T>> agglomeration)
    : op_(fine),
      method_(method),
      mg_(std::make_unique<Multigrid<T>>(fine, settings, std::move(agglomeration))) {
  if (method_ == SolverMethod::MultigridCG)
    cg_ = std::make_unique<Pcg<T>>(mg_->fine_operator(), mg_.get(), CgBeta::PolakRibiere);
  else
    r_ = fine.space().allocate();
}

template <typename T>
double MultigridIteration<T>::start(T* u, const T* f) {
  if (cg_) return cg_->start(u, f, BoundaryMode::Deck);
  op_.residual(u, f, r_->data(), BoundaryMode::Deck);
  return std::sqrt(op_.space().dot(r_->data(), r_->data()));
}

template <typename T>
double MultigridIteration<T>::iterate(T* u, const T* f) {
  if (cg_) return cg_->iterate(u);
  mg_->cycle(u, f);
  op_.residual(u, f, r_->data(), BoundaryMode::Deck);
  return std::sqrt(op_.space().dot(r_->data(), r_->data()));
}

template <typename T>
double MultigridIteration<T>::confirm(T* u, const T* f, double rn, double reference,
                                      double tolerance) {
  if (!cg_ || rn / reference > tolerance) return rn;
  T* scratch = cg_->scratch();
  op_.residual(u, f, scratch, BoundaryMode::Deck);
  const double true_rn = std::sqrt(op_.space().dot(scratch, scratch));
  return true_rn / reference <= tolerance ? true_rn : start(u, f);
}

template <typename T>
const T* MultigridIteration<T>::residual() {
  return cg_ ? cg_->residual() : r_->data();
}

template <typename T>
nlohmann::json MultigridIteration<T>::report(const Config& cfg, std::int64_t cycles,
                                             const std::vector<double>& factors,
                                             double setup_seconds) const {
  nlohmann::json j;
  j["method"] = to_string(cfg.method);
  j["cycle"] = to_string(cfg.multigrid.cycle);
  j["smoother"] = to_string(cfg.multigrid.smoother);
  j["pre_sweeps"] = cfg.multigrid.pre_sweeps;
  j["post_sweeps"] = cfg.multigrid.post_sweeps;
  j["prolongation"] = to_string(cfg.multigrid.prolongation);
  j["levels"] = mg_->levels();
  j["hierarchy"] = mg_->describe();
  j["singular"] = mg_->singular();
  j["cycles"] = cycles;
  j["convergence_factors"] = factors;
  // The geometric mean: the factor per cycle that the whole solve achieved.
  double log_sum = 0;
  int n = 0;
  for (double f : factors)
    if (f > 0) log_sum += std::log(f), ++n;
  j["mean_convergence_factor"] = n > 0 ? std::exp(log_sum / n) : 0.0;
  const auto& t = mg_->timing();
  j["seconds"] = {{"smoother_and_residual", t.smooth},
                  {"transfer", t.transfer},
                  {"coarse_solve", t.coarse},
                  {"per_level", t.per_level}};
  j["coarse_cg_iterations"] = mg_->coarse_iterations();
  // Decomposed: the levels' placement (distributed, gathered), exchanges and gathers.
  if (const nlohmann::json d = mg_->decomposition_report(); !d.is_null()) j["decomposed"] = d;
  // Building the hierarchy (allocation, kernel tuning per level), inside wall_seconds.
  j["setup_seconds"] = setup_seconds;
  return j;
}

template class MultigridIteration<float>;
template class MultigridIteration<double>;

}  // namespace heatsolve
