#include "solvers/multigrid/multigrid.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace heatsolve {

namespace {
using Clock = std::chrono::steady_clock;

// Accumulates the time of a phase into `slot` (the backend is synchronised first, so that a
// device backend's queued work is charged to the phase that queued it).
template <typename T>
class PhaseTimer {
 public:
  PhaseTimer(Backend<T>& b, double& slot) : b_(b), slot_(slot), t0_(Clock::now()) {}
  ~PhaseTimer() {
    b_.synchronize();
    slot_ += std::chrono::duration<double>(Clock::now() - t0_).count();
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  Backend<T>& b_;
  double& slot_;
  Clock::time_point t0_;
};

int extent(const GridDesc& g, int a) {
  return a == 0 ? g.nx : a == 1 ? g.ny : g.nz;
}
double spacing(const GridDesc& g, int a) {
  return a == 0 ? g.hx : a == 1 ? g.hy : g.hz;
}
}  // namespace

GridDesc coarsen(const GridDesc& g, std::array<int, 3>* ratio) {
  *ratio = {1, 1, 1};
  double h_min = spacing(g, 0);
  for (int a = 1; a < g.dims; ++a) h_min = std::min(h_min, spacing(g, a));
  GridDesc c = g;
  for (int a = 0; a < g.dims; ++a) {
    const int n = extent(g, a);
    // Halve the axes whose cells are among the finest (semi-coarsening), while even and at
    // least 4 cells long.
    if (n % 2 != 0 || n < 4 || spacing(g, a) > 1.5 * h_min) continue;
    (*ratio)[a] = 2;
  }
  c.nx = g.nx / (*ratio)[0];
  c.ny = g.ny / (*ratio)[1];
  c.nz = g.dims == 3 ? g.nz / (*ratio)[2] : 1;
  c.hx = g.hx * (*ratio)[0];
  c.hy = g.hy * (*ratio)[1];
  c.hz = g.dims == 3 ? g.hz * (*ratio)[2] : g.hz;
  return c;
}

template <typename T>
Multigrid<T>::Multigrid(Backend<T>& backend, const GridDesc& fine, const BoundaryFaces& faces,
                        double sigma, const MultigridSettings& settings, Hooks hooks, bool singular,
                        std::unique_ptr<Agglomeration<T>> agglomeration)
    : backend_(backend),
      faces_(faces),
      sigma_(sigma),
      settings_(settings),
      hooks_(std::move(hooks)),
      singular_(singular),
      agg_(std::move(agglomeration)) {
  for (int f = 0; f < 6; ++f) {
    zero_faces_[f] = faces[f];
    zero_faces_[f].value = 0;
  }
  // Smoothing weights: the reciprocal roots of the Chebyshev polynomial of degree m on
  // [a, b] for the eigenvalues of D^-1 A, b = 2 bounding them and a = 1/3 (3D) or 1/2 (2D)
  // the lower end of the oscillatory modes the coarse grid cannot represent. Degree 1 is
  // weighted Jacobi with omega = 2 / (a + b) (6/7 in 3D, 4/5 in 2D).
  const double b = 2.0, a = fine.dims == 3 ? 1.0 / 3.0 : 0.5;
  const int m = std::max(settings.pre_sweeps, settings.post_sweeps);
  weights_.resize(std::max(1, m));
  for (int k = 0; k < int(weights_.size()); ++k) {
    double lambda = 0.5 * (a + b);
    if (settings.smoother == MultigridSmoother::Chebyshev)
      lambda += 0.5 * (b - a) * std::cos(M_PI * (2.0 * k + 1.0) / (2.0 * double(weights_.size())));
    weights_[k] = 1.0 / lambda;
  }
  build(fine);
}

template <typename T>
void Multigrid<T>::build(const GridDesc& fine) {
  const auto make_level = [&](const GridDesc& g, bool owned) {
    Level lv;
    lv.g = g;
    lv.diag = sigma_ + 2.0 / (g.hx * g.hx) + 2.0 / (g.hy * g.hy) +
              (g.dims == 3 ? 2.0 / (g.hz * g.hz) : 0.0);
    const std::size_t n = g.padded_size();
    if (owned) {
      lv.u = backend_.allocate(n);
      lv.f = backend_.allocate(n);
    }
    lv.r = backend_.allocate(n);
    lv.tmp = backend_.allocate(n);
    return lv;
  };
  levels_.push_back(make_level(fine, false));
  if (agg_) {
    // Decomposed: this rank's block of the first coarse level (the global grid's ratio; the
    // caller checked that every block halves evenly), everything coarser on rank 0.
    const GridDesc& gc = agg_->global_coarse;
    const std::array<int, 3> ratio{fine.hx != gc.hx ? 2 : 1, fine.hy != gc.hy ? 2 : 1,
                                   fine.dims == 3 && fine.hz != gc.hz ? 2 : 1};
    levels_[0].ratio = ratio;
    GridDesc local = fine;
    local.nx /= ratio[0];
    local.ny /= ratio[1];
    if (fine.dims == 3) local.nz /= ratio[2];
    local.hx = gc.hx;
    local.hy = gc.hy;
    local.hz = gc.hz;
    levels_.push_back(make_level(local, true));
    stage_local_.resize(local.padded_size());
    if (agg_->root) {
      Hooks hooks;
      Backend<T>* be = agg_->backend ? agg_->backend.get() : &backend_;
      const BoundaryFaces zero = agg_->global_zero_faces;

      hooks.global_sum = [](double v) { return v; };
      coarse_ = std::make_unique<Multigrid<T>>(*be, gc, zero, sigma_, settings_, hooks, singular_);
      coarse_->homogeneous_fine_ = true;
      // Gathered at the finest level (blocks that do not halve evenly): the ranks have
      // smoothed it; rank 0 corrects from its coarser levels only, as the serial cycle does.
      coarse_->smooth_finest_ = ratio != std::array<int, 3>{1, 1, 1};
      agg_rhs_ = backend_.allocate(gc.padded_size());
      agg_corr_ = backend_.allocate(gc.padded_size());
      stage_global_.resize(gc.padded_size());
    }
  } else {
    for (;;) {
      std::array<int, 3> ratio{};
      const GridDesc c = coarsen(levels_.back().g, &ratio);
      if (ratio == std::array<int, 3>{1, 1, 1}) break;
      levels_.back().ratio = ratio;
      levels_.push_back(make_level(c, true));
    }
    Level& last = levels_.back();
    last.p = backend_.allocate(last.g.padded_size());
    last.q = backend_.allocate(last.g.padded_size());
  }
  if (singular_) {
    for (Level& lv : levels_) {
      const std::vector<T> host(lv.g.padded_size(), T(1));
      lv.ones = backend_.allocate(host.size());
      lv.ones->copy_from_host(host.data());
    }
  }
  // Each level's grid is tuned (CUDA "auto") here, not inside the first cycle.
  // A decomposed hierarchy's local coarse level is never swept: no tuning (a collective).
  if (!agg_)
    for (std::size_t l = 1; l < levels_.size(); ++l) backend_.prepare(levels_[l].g);
  timing_.per_level.assign(levels_.size(), 0.0);
}

template <typename T>
std::string Multigrid<T>::describe() const {
  std::string s;
  const auto add = [&s](const GridDesc& g) {
    if (!s.empty()) s += " -> ";
    s += g.dims == 3 ? fmt::format("{}x{}x{}", g.nx, g.ny, g.nz) : fmt::format("{}x{}", g.nx, g.ny);
  };
  for (const Level& lv : levels_) add(lv.g);
  if (coarse_) s += " | rank 0: " + coarse_->describe();
  return s;
}

template <typename T>
StencilCoeffs<T> Multigrid<T>::jacobi(int l, double omega) const {
  // x' = x + omega D^-1 (f - A x) = (1 - omega) x + omega/D (sum_d (x_d- + x_d+)/h_d^2 + f).
  const GridDesc& g = levels_[l].g;
  const double w = omega / levels_[l].diag;
  StencilCoeffs<T> c;
  c.center = static_cast<T>(1.0 - omega);
  c.cx = static_cast<T>(w / (g.hx * g.hx));
  c.cy = static_cast<T>(w / (g.hy * g.hy));
  c.cz = static_cast<T>(g.dims == 3 ? w / (g.hz * g.hz) : 0.0);
  c.source = static_cast<T>(w);
  return c;
}

template <typename T>
StencilCoeffs<T> Multigrid<T>::residual_coeffs(int l) const {
  // r = f - A x = f - D x + sum_d (x_d- + x_d+)/h_d^2.
  const GridDesc& g = levels_[l].g;
  StencilCoeffs<T> c;
  c.center = static_cast<T>(-levels_[l].diag);
  c.cx = static_cast<T>(1.0 / (g.hx * g.hx));
  c.cy = static_cast<T>(1.0 / (g.hy * g.hy));
  c.cz = static_cast<T>(g.dims == 3 ? 1.0 / (g.hz * g.hz) : 0.0);
  c.source = T(1);
  return c;
}

template <typename T>
void Multigrid<T>::fill(int l, T* x) {
  if (l == 0 && hooks_.exchange) hooks_.exchange(x);
  backend_.apply_boundary(x, levels_[l].g, level_faces(l));
}

template <typename T>
void Multigrid<T>::zero(int l, T* x) {
  const T* in[] = {x};
  const double c[] = {0.0};
  backend_.combine(x, in, c, 1, levels_[l].g);
}

template <typename T>
void Multigrid<T>::smooth(int l, T** cur, T** other, const T* f, int sweeps, bool reverse) {
  if (sweeps <= 0) return;
  double slot = 0;
  {
    PhaseTimer<T> t(backend_, slot);
    const Level& lv = levels_[l];
    // Without a halo exchange the backend may apply the face rules inside the sweep (CUDA
    // 2.5d-tma: no ghost-fill pass); whatever reads the iterate's ghosts later fills them.
    const bool rules_in_sweep = l > 0 || !hooks_.exchange;
    for (int s = 0; s < sweeps; ++s) {
      const int k = int(weights_.size()) == 1 ? 0 : (reverse ? sweeps - 1 - s : s);
      const StencilCoeffs<T> c = jacobi(l, weights_[std::min<std::size_t>(k, weights_.size() - 1)]);
      if (rules_in_sweep) {
        backend_.stencil_with_boundary(*cur, *other, f, lv.g, c, level_faces(l));
      } else {
        fill(l, *cur);
        backend_.stencil(*cur, *other, f, lv.g, c);
      }
      std::swap(*cur, *other);
    }
  }
  timing_.smooth += slot;
  timing_.per_level[l] += slot;
}

template <typename T>
void Multigrid<T>::level_residual(int l, T* x, const T* f, T* r) {
  double slot = 0;
  {
    PhaseTimer<T> t(backend_, slot);
    fill(l, x);
    backend_.stencil(x, r, f, levels_[l].g, residual_coeffs(l));
  }
  timing_.smooth += slot;
  timing_.per_level[l] += slot;
}

template <typename T>
double Multigrid<T>::level_dot(int l, const T* a, const T* b) {
  const double local = backend_.dot(a, b, levels_[l].g);
  return l == 0 ? hooks_.global_sum(local) : local;
}

template <typename T>
void Multigrid<T>::level_remove_mean(int l, T* x) {
  const GridDesc& g = levels_[l].g;
  double sum = backend_.reduce(x, g, ReduceOp::Sum), cells = double(g.interior_size());
  if (l == 0) {
    sum = hooks_.global_sum(sum);
    cells = hooks_.global_sum(cells);
  }
  const T* in[] = {x, levels_[l].ones->data()};
  const double c[] = {1.0, -sum / cells};
  backend_.combine(x, in, c, 2, g);
}

template <typename T>
void Multigrid<T>::remove_mean(T* x) {
  if (singular_) level_remove_mean(0, x);
}

template <typename T>
double Multigrid<T>::dot(const T* a, const T* b) {
  return level_dot(0, a, b);
}

template <typename T>
double Multigrid<T>::residual(T* u, const T* f, T* r) {
  homogeneous_fine_ = false;
  level_residual(0, u, f, r);
  return std::sqrt(level_dot(0, r, r));
}

template <typename T>
void Multigrid<T>::apply(T* x, T* y) {
  // y = A x = D x - sum_d (x_d- + x_d+)/h_d^2: the residual sweep's coefficients negated.
  homogeneous_fine_ = true;
  fill(0, x);
  StencilCoeffs<T> c = residual_coeffs(0);
  c.center = -c.center;
  c.cx = -c.cx;
  c.cy = -c.cy;
  c.cz = -c.cz;
  backend_.stencil(x, y, nullptr, levels_[0].g, c);
  homogeneous_fine_ = false;
}

template <typename T>
void Multigrid<T>::cycle(T* u, const T* f) {
  homogeneous_fine_ = false;
  run(u, f, settings_.cycle);
  if (singular_) level_remove_mean(0, u);
}

template <typename T>
void Multigrid<T>::precondition(const T* r, T* e) {
  homogeneous_fine_ = true;
  zero(0, e);
  run(e, r, MultigridCycle::V);
  if (singular_) level_remove_mean(0, e);
  homogeneous_fine_ = false;
}

template <typename T>
void Multigrid<T>::run(T* u, const T* f, MultigridCycle type) {
  visit(0, u, f, type);
}

// One visit of level l: pre-smoothing, the coarse-grid correction, post-smoothing. The
// post-smoother runs the weights in reverse order (the pre-smoother's adjoint); restriction
// is not the transpose of linear prolongation, so the cycle is not quite symmetric and mg-cg
// uses flexible CG. An F-cycle corrects with an F-visit then a V-visit of the next level.
template <typename T>
void Multigrid<T>::visit(int l, T* x, const T* f, MultigridCycle type) {
  if (!agg_ && l == int(levels_.size()) - 1) {
    coarse_solve(l, x, f);
    return;
  }
  const bool smoothed = l > 0 || smooth_finest_;
  Level& lv = levels_[l];
  T* cur = x;
  T* other = lv.tmp->data();
  if (smoothed) smooth(l, &cur, &other, f, settings_.pre_sweeps, false);
  level_residual(l, cur, f, lv.r->data());
  if (agg_) {
    agglomerated_correction(cur, type);
  } else {
    Level& lc = levels_[l + 1];
    {
      PhaseTimer<T> t(backend_, timing_.transfer);
      backend_.restrict_average(lv.r->data(), lv.g, lc.f->data(), lc.g, lv.ratio);
      zero(l + 1, lc.u->data());
    }
    if (type == MultigridCycle::F) visit(l + 1, lc.u->data(), lc.f->data(), MultigridCycle::F);
    visit(l + 1, lc.u->data(), lc.f->data(), MultigridCycle::V);
    PhaseTimer<T> t(backend_, timing_.transfer);
    fill(l + 1, lc.u->data());
    backend_.prolong_add(lc.u->data(), lc.g, cur, lv.g, lv.ratio, settings_.prolongation);
  }
  if (smoothed) smooth(l, &cur, &other, f, settings_.post_sweeps, true);
  // An odd number of sweeps in all leaves the iterate in the scratch buffer.
  if (cur != x) backend_.copy_values(x, cur, lv.g.padded_size());
}

// Decomposed finest level: the residual restricted on each rank's block, gathered onto rank
// 0, corrected there by the global coarse hierarchy, scattered back with one ghost layer
// and prolongated on each rank.
template <typename T>
void Multigrid<T>::agglomerated_correction(T* x, MultigridCycle type) {
  Level& lv = levels_[0];
  Level& lc = levels_[1];
  {
    PhaseTimer<T> t(backend_, timing_.transfer);
    backend_.restrict_average(lv.r->data(), lv.g, lc.f->data(), lc.g, lv.ratio);
    lc.f->copy_to_host(stage_local_.data());
  }
  agg_->gather(stage_local_, stage_global_);
  if (agg_->root) {
    PhaseTimer<T> t(backend_, timing_.coarse);
    agg_rhs_->copy_from_host(stage_global_.data());
    coarse_->zero(0, agg_corr_->data());
    if (!coarse_->smooth_finest_) {  // the fine residual itself: one unsmoothed visit
      coarse_->run(agg_corr_->data(), agg_rhs_->data(), type);
    } else {  // the first coarse level: as visit() corrects from the next level
      if (type == MultigridCycle::F) coarse_->run(agg_corr_->data(), agg_rhs_->data(), type);
      coarse_->run(agg_corr_->data(), agg_rhs_->data(), MultigridCycle::V);
    }
    backend_.apply_boundary(agg_corr_->data(), agg_->global_coarse, agg_->global_zero_faces);
    agg_corr_->copy_to_host(stage_global_.data());
  }
  agg_->scatter(stage_global_, stage_local_);
  PhaseTimer<T> t(backend_, timing_.transfer);
  lc.u->copy_from_host(stage_local_.data());
  backend_.prolong_add(lc.u->data(), lc.g, x, lv.g, lv.ratio, settings_.prolongation);
}

// The coarsest level: x += e with A e = f - A x solved by conjugate gradients (zero face
// values, e from 0) to a relative residual of settings.coarse_tolerance. Coarse levels
// start from x = 0, so e is their solution; a hierarchy of one level corrects the caller's x.
template <typename T>
void Multigrid<T>::coarse_solve(int l, T* x, const T* f) {
  double slot = 0;
  {
    PhaseTimer<T> t(backend_, slot);
    Level& lv = levels_[l];
    const GridDesc& g = lv.g;
    T* e = lv.tmp->data();
    T* r = lv.r->data();
    T* p = lv.p->data();
    T* q = lv.q->data();
    level_residual(l, x, f, r);
    if (singular_) level_remove_mean(l, r);
    zero(l, e);
    backend_.copy_values(p, r, g.padded_size());
    double rr = level_dot(l, r, r);
    const double stop = rr * settings_.coarse_tolerance * settings_.coarse_tolerance;
    StencilCoeffs<T> ca = residual_coeffs(l);  // negated below: q = A p
    ca.center = -ca.center, ca.cx = -ca.cx, ca.cy = -ca.cy, ca.cz = -ca.cz;
    const int max_it = int(std::min<std::size_t>(g.interior_size() * 2 + 10, 100000));
    int it = 0;
    for (; it < max_it && rr > stop && rr > 0; ++it) {
      backend_.apply_boundary(p, g, zero_faces_);
      backend_.stencil(p, q, nullptr, g, ca);
      const double pq = level_dot(l, p, q);
      if (!(pq > 0)) break;  // converged to rounding
      const double alpha = rr / pq;
      axpby(l, e, 1.0, p, alpha);
      axpby(l, r, 1.0, q, -alpha);
      const double rr_new = level_dot(l, r, r);
      axpby(l, p, rr_new / rr, r, 1.0);
      rr = rr_new;
    }
    if (singular_) level_remove_mean(l, e);
    axpby(l, x, 1.0, e, 1.0);
    coarse_iterations_ = it;
  }
  timing_.coarse += slot;
}

template <typename T>
void Multigrid<T>::axpby(int l, T* y, double a, const T* x, double b) {
  const T* in[] = {y, x};
  const double c[] = {a, b};
  backend_.combine(y, in, c, 2, levels_[l].g);
}

template class Multigrid<float>;
template class Multigrid<double>;

}  // namespace heatsolve
