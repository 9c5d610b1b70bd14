#include "solvers/steady/anderson.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "solvers/steady/jacobi.hpp"
#include "solvers/steady/least_squares.hpp"

namespace heatsolve {

template <typename T>
Anderson<T>::Anderson(Sweeper<T>& sweeper)
    : sw_(sweeper), op_(sweeper.make_operator(0.0, false, false)) {}

template <typename T>
Footprint Anderson<T>::footprint(const Config& cfg, const GridDesc& local, bool decomposed) {
  (void)local, (void)decomposed;
  Footprint fp;
  const double m = std::max(1, cfg.anderson_depth);
  fp.add(2 * m + 2, fmt::format("Anderson history 2m+2 = {:.0f}", 2 * m + 2));
  if (cfg.anderson_every > 1) fp.add(1, "sweep scratch");
  if (singular_poisson(cfg) && !has_source_field(cfg)) fp.add(1, "compatible source");
  fp.host_bytes = (m + 1) * (m + 1) * 8.0;
  return fp;
}

template <typename T>
StepReport Anderson<T>::start(const CheckpointState* restored) {
  const Config& cfg = sw_.config();
  m_ = std::max(1, cfg.anderson_depth);
  beta_ = cfg.anderson_damping;
  form_ = op_.jacobi();
  if (form_.variable) residual_field_ = sw_.allocate();
  singular_ = compatible_start(sw_, op_, restored != nullptr, &reference_, residual_field_.get());
  const std::size_t n_field = sw_.grid().padded_size(), P = stride();
  F_ = sw_.backend().allocate((m_ + 1) * P);
  G_ = sw_.backend().allocate(m_ * P);
  g_prev_ = sw_.backend().allocate(n_field);
  gram_.assign((m_ + 1) * (m_ + 1), 0.0);
  residual_ = std::numeric_limits<double>::infinity();
  if (restored) {
    const std::string& path = sw_.context().restart_path;
    if (restored->anderson_depth != m_)
      throw std::runtime_error(fmt::format("checkpoint '{}' has Anderson depth {}, the deck {}",
                                           path, restored->anderson_depth, m_));
    const GridDesc& g = sw_.grid();
    std::vector<T> host((m_ + 1) * P, T(0));  // ghost cells of the history stay zero
    for (int j = 0; j <= m_; ++j)
      insert_interior(host.data() + j * P, g,
                      checkpoint_field(*restored, fmt::format("F{}", j), path).bytes);
    F_->copy_from_host(host.data());
    host.assign(m_ * P, T(0));
    for (int j = 0; j < m_; ++j)
      insert_interior(host.data() + j * P, g,
                      checkpoint_field(*restored, fmt::format("G{}", j), path).bytes);
    G_->copy_from_host(host.data());
    host.assign(P, T(0));
    insert_interior(host.data(), g, checkpoint_field(*restored, "g_prev", path).bytes);
    g_prev_->copy_from_host(host.data());
    it_ = restored->step;
    residual_ = restored->residual;
  }
  converged_ = restarted_converged(restored, cfg.tolerance);
  every_ = std::max(1, cfg.anderson_every);
  if (every_ > 1) scratch_ = sw_.allocate();
  return StepReport::iteration(it_, residual_, false, converged_ || it_ >= cfg.max_iterations);
}

template <typename T>
StepReport Anderson<T>::advance(std::int64_t count, Monitor monitor) {
  (void)count, (void)monitor;  // one mixing per advance; the residual comes at the checks
  const Config& cfg = sw_.config();
  const GridDesc& g = sw_.grid();
  Backend<T>& backend = sw_.backend();
  const std::size_t n_field = g.padded_size(), P = stride();
  const T* f = sw_.source();
  T* const Fm = F_->data() + m_ * P;
  T* x = sw_.u().data();
  sw_.sweep(x, sw_.v().data(), f, form_);
  for (int s = 1; s < every_; ++s) {
    sw_.sweep(sw_.v().data(), scratch_->data(), f, form_);
    sw_.swap_v(scratch_);
  }
  T* gx = sw_.v().data();
  if (it_ > 0) {  // new differences into ring slot (it-1) % m, before f and g_prev move on
    T* dF = F_->data() + ((it_ - 1) % m_) * P;
    T* dG = G_->data() + ((it_ - 1) % m_) * P;
    const T* in_f[] = {gx, x, Fm};
    const double c_f[] = {1.0, -1.0, -1.0};
    backend.combine(dF, in_f, c_f, 3, g);
    const T* in_g[] = {gx, g_prev_->data()};
    const double c_g[] = {1.0, -1.0};
    backend.combine(dG, in_g, c_g, 2, g);
  }
  {
    const T* in[] = {gx, x};
    const double cf[] = {1.0, -1.0};
    backend.combine(Fm, in, cf, 2, g);
  }
  const int mk = int(std::min<std::int64_t>(m_, it_));
  inputs_.assign({gx});
  coeffs_.assign({beta_});
  if (beta_ != 1.0) {  // undamped mixing reads no x
    inputs_.push_back(x);
    coeffs_.push_back(1.0 - beta_);
  }
  if (mk > 0) {
    backend.gram(F_->data(), m_ + 1, F_->data(), m_ + 1, P, n_field, gram_.data());
    sw_.global_sum_each(gram_);  // one message, not (m + 1)^2
    gamma_ = solve_anderson_least_squares(gram_, m_ + 1, mk);
    for (int j = 0; j < mk; ++j) {
      inputs_.push_back(G_->data() + j * P);
      coeffs_.push_back(-gamma_[j]);
      if (beta_ != 1.0) {
        inputs_.push_back(F_->data() + j * P);
        coeffs_.push_back((1.0 - beta_) * gamma_[j]);
      }
    }
  }
  // Pointwise, so mixing in place into x's buffer is safe.
  backend.combine(x, inputs_.data(), coeffs_.data(), int(inputs_.size()), g);
  // g(x) becomes the previous g by a swap, not a copy: the next sweep writes into the old
  // one's buffer.
  sw_.swap_v(g_prev_);
  ++it_;
  const int check = std::max(1, cfg.check_every);
  bool fresh = false;
  if (it_ % check == 0 || it_ == cfg.max_iterations) {
    const double rn = residual_norm(sw_, op_, x, f, residual_field_.get());
    residual_ = reference_ > 0 ? rn / reference_ : rn;
    converged_ = residual_ <= cfg.tolerance;
    fresh = true;
  }
  const StepReport r =
      StepReport::iteration(it_, residual_, fresh, converged_ || it_ == cfg.max_iterations);
  // A singular problem: the solution of zero mean, as multigrid returns it (once converged:
  // an iterate stopped short of the tolerance continues from its checkpoint bit for bit).
  if (converged_ && singular_) sw_.remove_mean(sw_.u());
  return r;
}

template <typename T>
void Anderson<T>::save(CheckpointState& s) const {
  // The ring of differences, the current f (column m), G, g_prev.
  const GridDesc& g = sw_.grid();
  const std::size_t P = stride();
  s.anderson_depth = m_;
  s.ring_position = s.step > 0 ? (s.step - 1) % m_ : -1;
  std::vector<T> host((m_ + 1) * P);
  F_->copy_to_host(host.data());
  for (int j = 0; j <= m_; ++j)
    s.fields.push_back(checkpoint_field_of(fmt::format("F{}", j), host.data() + j * P, g));
  G_->copy_to_host(host.data());
  for (int j = 0; j < m_; ++j)
    s.fields.push_back(checkpoint_field_of(fmt::format("G{}", j), host.data() + j * P, g));
  g_prev_->copy_to_host(host.data());
  s.fields.push_back(checkpoint_field_of(std::string("g_prev"), host.data(), g));
}

template class Anderson<float>;
template class Anderson<double>;

}  // namespace heatsolve
