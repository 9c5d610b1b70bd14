#include "solvers/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "solvers/least_squares.hpp"

namespace heatsolve {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
}  // namespace

template <typename T>
Simulation<T>::Simulation(const Config& cfg, RunContext& ctx, std::vector<FieldWriter*> writers)
    : cfg_(cfg), ctx_(ctx), writers_(std::move(writers)), g_(ctx.domain.local) {
  if constexpr (std::is_same_v<T, float>)
    exchanger_ = ctx.exchanger_f;
  else
    exchanger_ = ctx.exchanger_d;
  backend_ = make_backend<T>(cfg.backend, ctx.backend_options);
  kernel_ = backend_->prepare(g_);

  const std::size_t n = g_.padded_size();
  u_ = backend_->allocate(n);
  v_ = backend_->allocate(n);
  std::vector<T> host;
  fill_shape(host, cfg.initial, cfg, ctx.domain);
  u_->copy_from_host(host.data());
  v_->copy_from_host(host.data());  // ghosts of both buffers start defined
  if (cfg.source.type != ShapeType::None) {
    f_ = backend_->allocate(n);
    fill_shape(host, cfg.source, cfg, ctx.domain);
    f_->copy_from_host(host.data());
  }
  const GridDesc& gg = ctx.domain.global;
  global_points_ = static_cast<std::int64_t>(gg.interior_size());
}

template <typename T>
void Simulation<T>::fill_ghosts(T* u) {
  if (exchanger_) exchanger_->exchange(*backend_, u);
  backend_->apply_boundary(u, g_, ctx_.domain.faces);
}

template <typename T>
double Simulation<T>::global_reduce(double local, ReduceOp op) const {
  const Reducer& r = ctx_.reducer ? *ctx_.reducer : serial_reducer_;
  return r.combine(local, op);
}

template <typename T>
double Simulation<T>::norm2(double local_sum_squares) const {
  return std::sqrt(global_reduce(local_sum_squares, ReduceOp::SumSquares));
}

template <typename T>
std::vector<T> Simulation<T>::interior() const {
  std::vector<T> padded(g_.padded_size());
  u_->copy_to_host(padded.data());
  std::vector<T> out;
  out.reserve(g_.interior_size());
  const int nz = g_.dims == 3 ? g_.nz : 1;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g_.ny; ++j) {
      const T* row = padded.data() + g_.index(0, j, g_.dims == 3 ? k : 0);
      out.insert(out.end(), row, row + g_.nx);
    }
  return out;
}

template <typename T>
void Simulation<T>::write_output(std::int64_t step, double time) {
  if (writers_.empty()) return;
  const std::vector<T> data = interior();
  for (FieldWriter* w : writers_) w->write(step, time, data.data(), ctx_.domain.block);
}

template <typename T>
void Simulation<T>::report(std::int64_t step, std::int64_t total, double time, double residual,
                           bool force) {
  if (!ctx_.on_progress) return;
  if (!force && seconds_since(last_report_) < 1.0) return;
  last_report_ = Clock::now();
  ProgressInfo p;
  p.step = step;
  p.total = total;
  p.time = time;
  p.residual = residual;
  p.elapsed_seconds = seconds_since(start_);
  p.points_per_second =
      p.elapsed_seconds > 0 ? double(global_points_) * double(step) / p.elapsed_seconds : 0;
  p.eta_seconds = step > 0 ? p.elapsed_seconds * double(total - step) / double(step) : -1;
  ctx_.on_progress(p);
}

template <typename T>
RunResult Simulation<T>::base_result() const {
  RunResult r;
  r.backend = backend_->name();
  r.backend_description = backend_->description();
  r.kernel = kernel_;
  r.precision = std::is_same_v<T, float> ? Precision::Float : Precision::Double;
  return r;
}

template <typename T>
RunResult Simulation<T>::run() {
  start_ = last_report_ = Clock::now();
  RunResult r = cfg_.problem == ProblemType::Heat ? run_heat() : run_poisson();
  backend_->synchronize();
  r.wall_seconds = seconds_since(start_);
  r.points_per_second =
      r.wall_seconds > 0 ? double(global_points_) * double(r.steps) / r.wall_seconds : 0;
  const double cell_volume = g_.hx * g_.hy * (g_.dims == 3 ? g_.hz : 1.0);
  r.total_heat =
      global_reduce(backend_->reduce(u_->data(), g_, ReduceOp::Sum), ReduceOp::Sum) * cell_volume;
  r.residual_history = history_;
  return r;
}

template <typename T>
RunResult Simulation<T>::run_heat() {
  RunResult r = base_result();
  const StencilCoeffs<T> c = heat_coeffs<T>(g_, cfg_.diffusivity, cfg_.dt);
  const T* f = f_ ? f_->data() : nullptr;
  const std::int64_t steps = cfg_.steps;
  write_output(0, 0.0);
  double rate = 0;  // RMS of du/dt, computed where someone looks at it
  for (std::int64_t s = 1; s <= steps; ++s) {
    fill_ghosts(u_->data());
    backend_->stencil(u_->data(), v_->data(), f, g_, c);
    const bool last = s == steps;
    const bool report_due = ctx_.on_progress && seconds_since(last_report_) >= 1.0;
    if (last || report_due) {
      const double ss =
          global_reduce(backend_->reduce_diff(v_->data(), u_->data(), g_, ReduceOp::SumSquares),
                        ReduceOp::SumSquares);
      rate = std::sqrt(ss / double(global_points_)) / cfg_.dt;
      history_.emplace_back(s, rate);
    }
    std::swap(u_, v_);
    const double t = last ? cfg_.end_time : double(s) * cfg_.dt;
    if (last || (cfg_.output_every > 0 && s % cfg_.output_every == 0)) write_output(s, t);
    report(s, steps, t, rate, last);
  }
  r.steps = steps;
  r.final_time = steps > 0 ? cfg_.end_time : 0.0;
  r.final_residual = rate;
  return r;
}

// Relative Poisson residual ||f + lap u|| / ||f|| of u (ghosts refilled here), or, when
// f = 0, the relative update ||u - previous|| / ||u||.
template <typename T>
double Simulation<T>::poisson_residual(T* u, const T* f, double f_norm, const T* previous) {
  if (f_norm == 0.0) {
    const double du = norm2(backend_->reduce_diff(u, previous, g_, ReduceOp::SumSquares));
    const double un = norm2(backend_->reduce(u, g_, ReduceOp::SumSquares));
    return un > 0 ? du / un : du;
  }
  fill_ghosts(u);
  return norm2(backend_->reduce_residual(u, f, g_, ReduceOp::SumSquares)) / f_norm;
}

template <typename T>
RunResult Simulation<T>::run_poisson() {
  if (cfg_.method == SolverMethod::Anderson) return run_anderson();
  RunResult r = base_result();
  const StencilCoeffs<T> c = jacobi_coeffs<T>(g_);
  const T* f = f_ ? f_->data() : nullptr;
  const double f_norm = f ? norm2(backend_->reduce(f, g_, ReduceOp::SumSquares)) : 0.0;
  write_output(0, 0.0);
  double residual = std::numeric_limits<double>::infinity();
  std::int64_t it = 0;
  const int check = std::max(1, cfg_.check_every);
  while (it < cfg_.max_iterations) {
    fill_ghosts(u_->data());
    backend_->stencil(u_->data(), v_->data(), f, g_, c);
    ++it;
    if (it % check == 0 || it == cfg_.max_iterations) {
      residual = poisson_residual(v_->data(), f, f_norm, u_->data());
      history_.emplace_back(it, residual);
      r.converged = residual <= cfg_.tolerance;
    }
    std::swap(u_, v_);
    if (cfg_.output_every > 0 && it % cfg_.output_every == 0 && !r.converged &&
        it < cfg_.max_iterations)
      write_output(it, double(it));
    report(it, cfg_.max_iterations, double(it), residual, r.converged);
    if (r.converged) break;
  }
  if (it > 0) write_output(it, double(it));
  r.steps = it;
  r.final_time = 0;
  r.final_residual = residual;
  return r;
}

// Anderson-accelerated Jacobi (Walker & Ni's type II mixing with depth m and damping beta):
//   x+ = beta g + (1-beta) x - sum_j gamma_j (dG_j - (1-beta) dF_j),
// where g = Jacobi(x), f = g - x, dF/dG the last m differences of f/g, and gamma minimises
// ||f - dF gamma|| (regularised normal equations of the (m+1)x(m+1) Gram matrix of
// [dF, f], computed in one tall-skinny product).
template <typename T>
RunResult Simulation<T>::run_anderson() {
  RunResult r = base_result();
  const int m = std::max(1, cfg_.anderson_depth);
  const double beta = cfg_.anderson_damping;
  const StencilCoeffs<T> c = jacobi_coeffs<T>(g_);
  const T* f = f_ ? f_->data() : nullptr;
  const double f_norm = f ? norm2(backend_->reduce(f, g_, ReduceOp::SumSquares)) : 0.0;
  const std::size_t P = g_.padded_size();
  // Columns 0..m-1: dF ring; column m: the current f. Ghost cells stay zero, so products
  // over the padded length equal products over the interior.
  auto F = backend_->allocate((m + 1) * P);
  auto G = backend_->allocate(m * P);
  auto g_prev = backend_->allocate(P);
  T* const Fm = F->data() + m * P;
  std::vector<double> gram((m + 1) * (m + 1)), gamma;
  std::vector<const T*> inputs;
  std::vector<double> coeffs;

  write_output(0, 0.0);
  double residual = std::numeric_limits<double>::infinity();
  std::int64_t it = 0;
  const int check = std::max(1, cfg_.check_every);
  while (it < cfg_.max_iterations) {
    T* x = u_->data();
    T* gx = v_->data();
    fill_ghosts(x);
    backend_->stencil(x, gx, f, g_, c);
    if (it > 0) {  // new differences into ring slot (it-1) % m, before f and g_prev move on
      T* dF = F->data() + ((it - 1) % m) * P;
      T* dG = G->data() + ((it - 1) % m) * P;
      const T* in_f[] = {gx, x, Fm};
      const double c_f[] = {1.0, -1.0, -1.0};
      backend_->combine(dF, in_f, c_f, 3, g_);
      const T* in_g[] = {gx, g_prev->data()};
      const double c_g[] = {1.0, -1.0};
      backend_->combine(dG, in_g, c_g, 2, g_);
    }
    {
      const T* in[] = {gx, x};
      const double cf[] = {1.0, -1.0};
      backend_->combine(Fm, in, cf, 2, g_);
      g_prev->copy_from(*v_);
    }
    const int mk = int(std::min<std::int64_t>(m, it));
    inputs.assign({gx, x});
    coeffs.assign({beta, 1.0 - beta});
    if (mk > 0) {
      backend_->gram(F->data(), m + 1, F->data(), m + 1, P, P, gram.data());
      for (double& v : gram) v = global_reduce(v, ReduceOp::Sum);
      gamma = solve_anderson_least_squares(gram, m + 1, mk);
      for (int j = 0; j < mk; ++j) {
        inputs.push_back(G->data() + j * P);
        coeffs.push_back(-gamma[j]);
        if (beta != 1.0) {
          inputs.push_back(F->data() + j * P);
          coeffs.push_back((1.0 - beta) * gamma[j]);
        }
      }
    }
    // Pointwise, so mixing in place into x's buffer is safe.
    backend_->combine(x, inputs.data(), coeffs.data(), int(inputs.size()), g_);
    ++it;
    if (it % check == 0 || it == cfg_.max_iterations) {
      if (f_norm == 0.0) {  // relative update of the plain Jacobi step, ||g - x|| / ||g||
        const double fn = norm2(backend_->reduce(Fm, g_, ReduceOp::SumSquares));
        const double gn = norm2(backend_->reduce(gx, g_, ReduceOp::SumSquares));
        residual = gn > 0 ? fn / gn : fn;
      } else {
        residual = poisson_residual(x, f, f_norm, nullptr);
      }
      history_.emplace_back(it, residual);
      r.converged = residual <= cfg_.tolerance;
    }
    if (cfg_.output_every > 0 && it % cfg_.output_every == 0 && !r.converged &&
        it < cfg_.max_iterations)
      write_output(it, double(it));
    report(it, cfg_.max_iterations, double(it), residual, r.converged);
    if (r.converged) break;
  }
  if (it > 0) write_output(it, double(it));
  r.steps = it;
  r.final_residual = residual;
  return r;
}

template class Simulation<float>;
template class Simulation<double>;

}  // namespace heatsolve
