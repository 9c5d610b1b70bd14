#include "solvers/multigrid/iteration.hpp"

#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace heatsolve {

template <typename T>
MultigridIteration<T>::MultigridIteration(const HelmholtzOperator<T>& fine,
                                          const MultigridSettings& settings, SolverMethod method,
                                          std::unique_ptr<Agglomeration<T>> agglomeration,
                                          MixedParts mixed)
    : op_(fine), method_(method), settings_(settings), track_true_(std::is_same_v<T, float>) {
  Preconditioner<T>* m = nullptr;
  if constexpr (std::is_same_v<T, double>) {
    if (mixed) {
      mixed_ = std::make_unique<FloatCorrection>(fine, settings, std::move(mixed));
      m = mixed_.get();
      if (mixed_->multigrid().singular()) {
        ones_ = fine.space().allocate();
        const std::vector<T> host(ones_->size(), T(1));
        ones_->copy_from_host(host.data());
      }
    }
  } else {
    if (mixed) throw std::logic_error("MultigridIteration: mixed precision needs double fields");
  }
  if (!mixed_) {
    mg_ = std::make_unique<Multigrid<T>>(fine, settings, std::move(agglomeration));
    m = mg_.get();
  }
  if (method_ == SolverMethod::MultigridCG)
    cg_ = std::make_unique<Pcg<T>>(op_, m, CgBeta::PolakRibiere);
  else
    r_ = fine.space().allocate();
}

template <typename T>
MultigridIteration<T>::~MultigridIteration() = default;

template <typename T>
void MultigridIteration<T>::rescale(double rn) {
  if (mixed_) mixed_->set_scale(std::sqrt(op_.space().cells()) / rn);
}

template <typename T>
double MultigridIteration<T>::start(T* u, const T* f) {
  if (mg_) mg_->forget_begun();
  // Plain cycles: the first cycle's first pass measures the norm where it can (begin_cycle), so
  // that the residual is not swept and stored once more; not where it is read next (a singular
  // problem's shift, a planned full-multigrid pass).
  double begun_norm = 0;
  if (!cg_ && mg_ && !fmg_next_ && !mg_->singular() && mg_->begin_cycle(u, f, &begun_norm))
    return begun_norm;
  // Pcg::start's steps, with the scale of a mixed preconditioner set from the residual
  // before its first application.
  T* r = cg_ ? cg_->residual() : r_->data();
  op_.residual(u, f, r, BoundaryMode::Deck);
  const double rn = std::sqrt(op_.space().dot(r, r));
  rescale(rn);
  if (cg_) cg_->start_from_residual();
  return rn;
}

template <typename T>
void MultigridIteration<T>::plan_fmg(BoundaryMode form) {
  fmg_next_ = settings_.cycle == MultigridCycle::FMG;
  fmg_form_ = form;
}

template <typename T>
double MultigridIteration<T>::fmg_pass(T* u, const T* f) {
  fmg_next_ = false;
  if (fmg_form_ == BoundaryMode::Deck) {
    if (mixed_) {
      if constexpr (std::is_same_v<T, double>) mixed_->fmg(u, f, BoundaryMode::Deck);
    } else {
      mg_->fmg(u, f, BoundaryMode::Deck);
    }
  } else {
    // u += e with A e = r, r = f - A u as of start().
    const T* r = residual();
    if (mixed_) {
      if constexpr (std::is_same_v<T, double>) mixed_->fmg(u, r, BoundaryMode::Homogeneous);
    } else {
      if (!cg_ && !e_) e_ = op_.space().allocate();
      T* e = cg_ ? cg_->scratch() : e_->data();
      mg_->fmg(e, r, BoundaryMode::Homogeneous);
      op_.space().axpby(u, 1.0, e, 1.0);
    }
  }
  if (mixed_) remove_mean(u);
  // CG restarts from the pass's u; cycles measure its residual.
  return start(u, f);
}

template <typename T>
double MultigridIteration<T>::iterate(T* u, const T* f) {
  if (fmg_next_) return fmg_pass(u, f);
  if (cg_) {
    const double rn = cg_->iterate(u);
    rescale(rn);
    return rn;
  }
  // The cycle's shape: FMG's cycles after its first pass are V-cycles.
  const MultigridCycle type =
      settings_.cycle == MultigridCycle::F ? MultigridCycle::F : MultigridCycle::V;
  if (mixed_) {
    if constexpr (std::is_same_v<T, double>) mixed_->correct(u, r_->data(), type);
    if (mixed_->multigrid().singular()) remove_mean(u);
  } else {
    // A cycle begun by the last iterate() on these fields continues; otherwise a whole one.
    if (mg_->begun(u, f))
      mg_->cycle_begun(u, f);
    else
      mg_->cycle(u, f);
    // Plain cycles need only the residual's norm: measured by the next cycle's first pass
    // where it can (begun here, completed by the next iterate(); a caller that stops wastes
    // that pass and keeps u), else by a pass of its own.
    double rn = 0;
    if (!mg_->begin_cycle(u, f, &rn))
      rn = op_.residual_norm(u, f, r_->data(), BoundaryMode::Deck, settings_.fused);
    return rn;
  }
  // The next cycle of a mixed solve corrects from r_.
  const double rn = op_.residual_norm(u, f, r_->data(), BoundaryMode::Deck, false);
  rescale(rn);
  return rn;
}

template <typename T>
double MultigridIteration<T>::confirm(T* u, const T* f, double rn, double reference,
                                      double tolerance) {
  if (!cg_) return rn;
  // The true residual is measured where the recurrence claims the tolerance, and at every
  // iteration once the two have parted (a restart below) or in float, whose recurrence falls
  // below the precision's floor within a few iterations while f - A u stays there: the
  // caller's stagnation test then sees the floor, as it does for cycles. One residual sweep
  // and a dot product more per iteration (an mg-cg iteration costs ~30 sweeps).
  if (!track_true_ && rn / reference > tolerance) return rn;
  T* scratch = cg_->scratch();
  op_.residual(u, f, scratch, BoundaryMode::Deck);
  const double true_rn = std::sqrt(op_.space().dot(scratch, scratch));
  if (true_rn / reference <= tolerance) return true_rn;
  // The recurrence claims what the true residual misses, or has run far below it: restart
  // from the true residual (residual replacement; start() returns its norm).
  if (rn / reference <= tolerance || true_rn > kGapFactor * rn) {
    track_true_ = true;
    return start(u, f);
  }
  return true_rn;
}

template <typename T>
const T* MultigridIteration<T>::residual() {
  return cg_ ? cg_->residual() : r_->data();
}

template <typename T>
bool MultigridIteration<T>::singular() const {
  return mixed_ ? mixed_->multigrid().singular() : mg_->singular();
}

template <typename T>
void MultigridIteration<T>::remove_mean(T* x) {
  if (mg_) {
    mg_->remove_mean(x);
    return;
  }
  if (!ones_) return;
  const FieldSpace<T>& s = op_.space();
  const double sum = s.sum(x), cells = s.cells();
  const T* in[] = {x, ones_->data()};
  const double c[] = {1.0, -sum / cells};
  s.backend().combine(x, in, c, 2, s.grid());
}

template <typename T>
int MultigridIteration<T>::levels() const {
  return mixed_ ? mixed_->multigrid().levels() : mg_->levels();
}

template <typename T>
std::string MultigridIteration<T>::describe() const {
  return mixed_ ? mixed_->multigrid().describe() : mg_->describe();
}

template <typename T>
int MultigridIteration<T>::coarse_iterations() const {
  return mixed_ ? mixed_->multigrid().coarse_iterations() : mg_->coarse_iterations();
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
  j["coarse_sweeps"] = cfg.multigrid.coarse_sweeps;
  j["prolongation"] = to_string(cfg.multigrid.prolongation);
  // The hierarchy's precision: the run's, or float under a double solve (mixed).
  j["hierarchy_precision"] = mixed_ ? "float" : std::is_same_v<T, float> ? "float" : "double";
  j["mixed_precision"] = bool(mixed_);
  j["levels"] = levels();
  j["hierarchy"] = describe();
  j["singular"] = singular();
  j["cycles"] = cycles;
  j["convergence_factors"] = factors;
  // The geometric mean: the factor per cycle that the whole solve achieved.
  double log_sum = 0;
  int n = 0;
  for (double f : factors)
    if (f > 0) log_sum += std::log(f), ++n;
  j["mean_convergence_factor"] = n > 0 ? std::exp(log_sum / n) : 0.0;
  const auto seconds = [&](const auto& t) {
    return nlohmann::json{{"smoother_and_residual", t.smooth},
                          {"transfer", t.transfer},
                          {"coarse_solve", t.coarse},
                          {"per_level", t.per_level}};
  };
  j["seconds"] = mixed_ ? seconds(mixed_->multigrid().timing()) : seconds(mg_->timing());
  // The coarsest level: "direct" (a dense inverse on the device) or "cg"; the CG's
  // iterations in the last solve (0 when direct).
  j["coarse_solver"] = mixed_ ? mixed_->multigrid().coarse_solver() : mg_->coarse_solver();
  j["coarse_cg_iterations"] = coarse_iterations();
  // Visits of the local coarse levels replayed as one launch (CUDA graphs; 0 elsewhere).
  j["replays"] = mixed_ ? mixed_->multigrid().replays() : mg_->replays();
  // Of their recordings, those made while the host waited for a norm (not in a cycle's launches).
  j["recorded_ahead"] = mixed_ ? mixed_->multigrid().recorded_ahead() : mg_->recorded_ahead();
  // Decomposed: the levels' placement (distributed, gathered), exchanges and gathers.
  if (nlohmann::json d =
          mixed_ ? mixed_->multigrid().decomposition_report() : mg_->decomposition_report();
      !d.is_null()) {
    d["setup_breakdown"]["planning"] = planning_seconds_;
    j["decomposed"] = d;
  }
  // Building the hierarchy (allocation, kernel tuning per level), inside wall_seconds.
  j["setup_seconds"] = setup_seconds;
  return j;
}

template class MultigridIteration<float>;
template class MultigridIteration<double>;

}  // namespace heatsolve
