#include "solvers/simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "io/catalyst_adaptor.hpp"
#include "solvers/steady/least_squares.hpp"

namespace heatsolve {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Interior cells of a padded array, x fastest, and back.
template <typename T>
std::vector<T> extract_interior(const T* padded, const GridDesc& g) {
  std::vector<T> out;
  out.reserve(g.interior_size());
  const int nz = g.dims == 3 ? g.nz : 1;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g.ny; ++j) {
      const T* row = padded + g.index(0, j, g.dims == 3 ? k : 0);
      out.insert(out.end(), row, row + g.nx);
    }
  return out;
}

template <typename T>
void insert_interior(T* padded, const GridDesc& g, const std::vector<unsigned char>& bytes) {
  if (bytes.size() != g.interior_size() * sizeof(T))
    throw std::runtime_error("checkpoint field does not match this rank's block");
  const int nz = g.dims == 3 ? g.nz : 1;
  const unsigned char* src = bytes.data();
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g.ny; ++j, src += g.nx * sizeof(T))
      std::memcpy(padded + g.index(0, j, g.dims == 3 ? k : 0), src, g.nx * sizeof(T));
}

template <typename T>
CheckpointField checkpoint_field(std::string name, const T* padded, const GridDesc& g) {
  const std::vector<T> v = extract_interior(padded, g);
  CheckpointField f{std::move(name), {}};
  f.bytes.resize(v.size() * sizeof(T));
  std::memcpy(f.bytes.data(), v.data(), f.bytes.size());
  return f;
}

const char* stop_signal_name(int signo) {
  switch (signo) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
#ifdef SIGUSR1
    case SIGUSR1:
      return "SIGUSR1";
#endif
    default:
      return "a signal";
  }
}

// Under MPI the stop decision is collective: polled every kStopPollSteps steps (at the first
// step past each multiple when fused blocks step over it).
constexpr std::int64_t kStopPollSteps = 10;
// A Poisson residual this many times its first value means divergence.
constexpr double kResidualGrowthLimit = 1e6;
// time_block: auto under MPI: the depth tried where the backend fuses nothing (k single
// sweeps per exchange), and the passes timed against as many single steps.
constexpr int kUnfusedTrialDepth = 4;
constexpr int kTrialPasses = 3;
// A multigrid cycle that reduces the residual by less than this has stagnated.
constexpr double kStagnationFactor = 0.95;
}  // namespace

template <typename T>
Simulation<T>::Simulation(const Config& cfg, RunContext& ctx, std::vector<FieldWriter*> writers)
    : cfg_(cfg), ctx_(ctx), writers_(std::move(writers)), g_(ctx.domain.local) {
  if constexpr (std::is_same_v<T, float>)
    exchanger_ = ctx.exchanger_f;
  else
    exchanger_ = ctx.exchanger_d;
  BackendOptions options = ctx.backend_options;
  options.source = cfg.source.type != ShapeType::None;
  backend_ = make_backend<T>(cfg.backend, options);

  const std::size_t n = g_.padded_size();
  u_ = backend_->allocate(n);
  v_ = backend_->allocate(n);
  std::vector<T> host;
  fill_shape(host, cfg.initial, cfg, ctx.domain);
  u_->copy_from_host(host.data());
  v_->copy_from_host(host.data());  // ghosts of both buffers start defined
  if (cfg.source.type != ShapeType::None) {
    // Stored from its separable form, which the backend may generate in its sweeps instead.
    f_ = backend_->allocate(n);
    const SeparableSource<T> form = separable_shape<T>(cfg.source, cfg, ctx.domain);
    fill_separable(host, form, g_);
    f_->copy_from_host(host.data());
    backend_->describe_source(f_->data(), g_, &form);
  }
  // After the source is described: "auto" then times the sweeps the run will take.
  kernel_ = backend_->prepare(g_);
  for (const FaceBC& face : ctx.domain.faces)
    overlap_ = overlap_ || (cfg.overlap && exchanger_ && face.type == BoundaryType::Exchange);
  // With overlap the physical ghosts are filled before the exchange starts, so only the
  // layers next to Exchange faces wait for it: on a z-split GPU run the core is a z slab
  // that the CUDA backend sweeps while the halos travel.
  core_ = exchange_core_range(g_, ctx.domain.faces);
  shell_ = shell_ranges(g_, core_);
  const GridDesc& gg = ctx.domain.global;
  global_points_ = static_cast<std::int64_t>(gg.interior_size());
  next_poll_ = kStopPollSteps;
}

template <typename T>
void Simulation<T>::fill_ghosts(T* u, bool physical) {
  if (exchanger_) {
    if (pending_ == u) {  // its halos were sent after the sweep that computed it
      exchanger_->finish(*backend_, u);
      pending_ = nullptr;
    } else {
      settle();
      exchanger_->exchange(*backend_, u);
    }
  }
  if (physical) backend_->apply_boundary(u, g_, ctx_.domain.faces);
}

template <typename T>
void Simulation<T>::settle() {
  if (!pending_) return;
  exchanger_->finish(*backend_, pending_);
  pending_ = nullptr;
}

// With overlap the exchange is pipelined across sweeps: a sweep computes the shell of `out`
// (the layers next to Exchange faces) first, queues the packing of out's boundary layers,
// queues the core, and only then waits for the packing and sends; the halos travel while the
// device computes the core, and the next sweep (whose u is this out) finishes the exchange.
// Physical ghosts depend on interior cells only and the stencil reads no edge or corner
// ghosts, so apply_boundary needs no halo. Same arithmetic per point as the plain path, so
// the result is bitwise the same.
template <typename T>
void Simulation<T>::sweep(T* u, T* out, const T* f, const StencilCoeffs<T>& c,
                          bool rules_in_sweep) {
  if (!overlap_ && rules_in_sweep) {
    fill_ghosts(u, false);
    backend_->stencil_with_boundary(u, out, f, g_, c, ctx_.domain.faces);
    return;
  }
  fill_ghosts(u);
  if (!overlap_) {
    backend_->stencil(u, out, f, g_, c);
    return;
  }
  bool split = true;
  for (std::size_t i = 0; i < shell_.size() && split; ++i) {
    split = backend_->stencil_region(u, out, f, g_, c, shell_[i]);
    if (!split && i > 0) throw std::logic_error("backend swept a shell region but not another");
  }
  if (!split) backend_->stencil(u, out, f, g_, c);
  exchanger_->begin(*backend_, out);
  if (split && !backend_->stencil_region(u, out, f, g_, c, core_))
    throw std::logic_error("backend swept the shell regions but not the core");
  exchanger_->send(*backend_);
  pending_ = out;
}

template <typename T>
int Simulation<T>::fused_depth(const T* f, const StencilCoeffs<T>& c) {
  if (fused_depth_ > 0) return fused_depth_;
  // The set-up (margin buffers, IPC mappings, auto's trial) stays out of wall_seconds, as the
  // one-layer exchange's does in run(): the time loop's rate measures steps.
  const auto t0 = Clock::now();
  fused_depth_ = choose_fused_depth(f, c);
  if (exchanger_) {
    backend_->synchronize();
    halo_setup_seconds_ = seconds_since(t0);
  }
  return fused_depth_;
}

template <typename T>
int Simulation<T>::choose_fused_depth(const T* f, const StencilCoeffs<T>& c) {
  const bool automatic = cfg_.time_block <= 0;
  int want = std::max(1, automatic ? backend_->max_time_block() : cfg_.time_block);
  if (!exchanger_) return want;
  // Under MPI, `auto` also tries margins where the backend fuses nothing (the CPU): k sweeps
  // per exchange send fewer, larger messages. The timing below decides.
  if (automatic && want == 1) want = kUnfusedTrialDepth;
  // Every rank takes the same depth: the smallest request (auto's timing is per rank),
  // capped by the thinnest block along the split axes (a margin comes from the neighbour's
  // own cells). Minima as maxima of negated values.
  const double thinnest = -global_reduce(-double(deepest_margin(ctx_.domain)), ReduceOp::MaxAbs);
  const double agreed = -global_reduce(-double(want), ReduceOp::MaxAbs);
  const int depth = int(std::min(agreed, thinnest));
  deep_ = depth > 1 ? exchanger_->make_deep(depth) : nullptr;
  // All ranks or none: an exchanger that cannot make deep halos on one rank keeps every rank
  // on single steps.
  if (global_reduce(deep_ ? 0.0 : 1.0, ReduceOp::MaxAbs) > 0) deep_.reset();
  if (!deep_) return 1;
  const DeepHaloGeometry& geo = deep_->geometry();
  // All ranks or none: an overlapped pass adds an exchange that the neighbours must match.
  overlap_deep_ = cfg_.overlap && overlap_planes(geo, &deep_parts_);  // execution.overlap
  overlap_deep_ = global_reduce(overlap_deep_ ? 0.0 : 1.0, ReduceOp::MaxAbs) == 0;
  deep_ready_ = false;
  // The margin absorbs whatever its outer ghosts hold, so where the serial run's faces all
  // have rules the fused kernels may apply one there too (Dirichlet 0: any rule would do);
  // otherwise (a periodic face) the serial run takes single steps and so does this one.
  deep_faces_ = ctx_.domain.faces;
  bool rules_everywhere = true;
  for (int f = 0; f < 2 * g_.dims; ++f)
    rules_everywhere = rules_everywhere && (cfg_.boundary[f].type == BoundaryType::Dirichlet ||
                                            cfg_.boundary[f].type == BoundaryType::Neumann);
  if (rules_everywhere)
    for (int f = 0; f < 2 * g_.dims; ++f)
      if (deep_faces_[f].type == BoundaryType::Exchange)
        deep_faces_[f] = FaceBC{BoundaryType::Dirichlet, 0.0};
  const std::size_t n = geo.extended.padded_size();
  deep_u_ = backend_->allocate(n);
  deep_v_ = backend_->allocate(n);
  deep_u_->set_zero();
  deep_v_->set_zero();
  if (f_) {  // the source's margins once, from the neighbours (periodic wraps included)
    deep_f_ = backend_->allocate(n);
    deep_f_->set_zero();
    copy_block_to_extended(*backend_, geo, f_->data(), deep_f_->data());
    deep_->exchange(*backend_, deep_f_->data());
    const SeparableSource<T> form = separable_shape<T>(cfg_.source, cfg_, geo.extended_domain);
    backend_->describe_source(deep_f_->data(), geo.extended, &form);
  }
  if (automatic) {
    const double steps = double(kTrialPasses * depth);
    const std::array<double, 2> seconds = time_single_and_fused(f, c, kTrialPasses);
    trial_ms_ = {1e3 * seconds[0] / steps, 1e3 * seconds[1] / steps};
    if (!(seconds[1] < seconds[0])) {  // single steps win (every rank sees the same maxima)
      if (deep_f_) backend_->describe_source(deep_f_->data(), geo.extended, nullptr);
      deep_.reset();  // geo with it
      deep_u_.reset();
      deep_v_.reset();
      deep_f_.reset();
      return 1;
    }
  }
  return depth;
}

// `passes` deep-halo passes against as many single steps with the one-layer exchange, both
// from the current state on scratch copies (the run's fields are left as they are), after one
// untimed pass each (buffers, tuning of the extended grid). The slowest rank's times.
template <typename T>
std::array<double, 2> Simulation<T>::time_single_and_fused(const T* f, const StencilCoeffs<T>& c,
                                                           int passes) {
  const DeepHaloGeometry& geo = deep_->geometry();
  const int steps = passes * geo.depth;
  settle();
  std::unique_ptr<Array<T>> a = backend_->allocate(u_->size()), b = backend_->allocate(u_->size());
  a->copy_from(*u_);
  b->copy_from(*u_);
  std::array<double, 2> seconds{};
  for (int timed = 0; timed < 2; ++timed) {
    backend_->synchronize();
    const auto t0 = Clock::now();
    for (int s = 0; s < (timed ? steps : geo.depth); ++s) {
      sweep(a->data(), b->data(), f, c, true);
      std::swap(a, b);
    }
    settle();
    backend_->synchronize();
    seconds[0] = seconds_since(t0);
  }
  const T* fe = f ? deep_f_->data() : nullptr;
  copy_block_to_extended(*backend_, geo, u_->data(), deep_u_->data());
  deep_ready_ = false;
  for (int timed = 0; timed < 2; ++timed) {
    backend_->synchronize();
    const auto t0 = Clock::now();
    // The run's passes, overlapped as there (the first one's exchange is timed too).
    for (int p = 0; p < (timed ? passes : 1); ++p) deep_pass(fe, c, geo.depth);
    backend_->synchronize();
    seconds[1] = seconds_since(t0);
  }
  return {global_reduce(seconds[0], ReduceOp::MaxAbs), global_reduce(seconds[1], ReduceOp::MaxAbs)};
}

template <typename T>
void Simulation<T>::fused_steps(const T* f, const StencilCoeffs<T>& c, int steps) {
  if (!deep_) {
    // Blocks of the run's k: the backend's stencil_steps would take its largest compiled k
    // for a long run of steps (a Jacobi stretch between residual checks), not the chosen one.
    const int k = std::max(1, fused_depth_);
    for (int left = steps; left > 0;) {
      const int n = std::min(left, k);
      T* res = backend_->stencil_steps(u_->data(), v_->data(), f, g_, c, ctx_.domain.faces, n);
      if (res != u_->data()) std::swap(u_, v_);
      left -= n;
    }
    return;
  }
  const DeepHaloGeometry& geo = deep_->geometry();
  if (!deep_newer_) {
    settle();
    copy_block_to_extended(*backend_, geo, u_->data(), deep_u_->data());
    deep_newer_ = true;
    deep_ready_ = false;
  }
  const T* fe = f ? deep_f_->data() : nullptr;
  for (int left = steps; left > 0;) {
    const int k = std::min(left, geo.depth);
    deep_pass(fe, c, k);
    left -= k;
  }
}

template <typename T>
void Simulation<T>::deep_pass(const T* fe, const StencilCoeffs<T>& c, int k) {
  const DeepHaloGeometry& geo = deep_->geometry();
  if (!deep_ready_) deep_->exchange(*backend_, deep_u_->data());
  deep_ready_ = false;
  const T* u = deep_u_->data();
  T* out = deep_v_->data();
  const auto planes = [&](const std::array<int, 2>& p) {
    return backend_->stencil_steps_planes(u, out, fe, geo.extended, c, deep_faces_, k, p[0], p[1]);
  };
  // An empty range asks whether the backend stores plane ranges for this pass.
  if (!overlap_deep_ || !planes({0, 0})) {
    T* res = backend_->stencil_steps(deep_u_->data(), deep_v_->data(), fe, geo.extended, c,
                                     deep_faces_, k);
    if (res != deep_u_->data()) std::swap(deep_u_, deep_v_);
    return;
  }
  planes(deep_parts_.send_lo);
  planes(deep_parts_.send_hi);
  backend_->fork_side();  // the side lane starts after the send planes
  planes(deep_parts_.rest);
  std::swap(deep_u_, deep_v_);
  // Every rank overlaps the same passes (the parts' support depends on k and the global face
  // rules only), so the exchanges pair up; after the last pass before a sync_state() this one
  // goes unused.
  deep_->exchange(*backend_, deep_u_->data(), Lane::Side);
  backend_->join_side();
  deep_ready_ = true;
}

template <typename T>
void Simulation<T>::sync_state() {
  if (!deep_newer_) return;
  copy_extended_to_block(*backend_, deep_->geometry(), deep_u_->data(), u_->data());
  deep_newer_ = false;
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
  return extract_interior(padded.data(), g_);
}

template <typename T>
void Simulation<T>::write_output(std::int64_t step, double time) {
  if (writers_.empty()) return;
  sync_state();
  const std::vector<T> data = interior();
  for (FieldWriter* w : writers_) w->write(step, time, data.data(), ctx_.domain.block);
}

// A failing script stops the run as a blow-up does, the state being good: it is checkpointed
// first when checkpoints are on.
template <typename T>
void Simulation<T>::in_situ(std::int64_t step, double time, double residual, bool last) {
  CatalystAdaptor* catalyst = ctx_.catalyst;
  if (!catalyst || !catalyst->schedule().any_due(step, last)) return;
  sync_state();
  const std::vector<T> data = interior();  // the writers' host copy, on these steps only
  try {
    catalyst->co_process(step, time, last, data.data(), ctx_.domain.block);
  } catch (const CatalystError&) {
    if (cfg_.checkpoint_every > 0) write_checkpoint(step, time, residual);
    throw;
  }
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
  const std::int64_t done = step - start_step_;  // in this run (a restart starts later)
  p.points_per_second =
      p.elapsed_seconds > 0 ? double(global_points_) * double(done) / p.elapsed_seconds : 0;
  p.eta_seconds = done > 0 ? p.elapsed_seconds * double(total - step) / double(done) : -1;
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
  // The first exchange sets the halo exchange up (buffers, pinned memory, IPC mappings, MPI
  // connections); done before the clock starts so that wall time and points/s measure steps.
  if (exchanger_) fill_ghosts(u_->data());
  backend_->synchronize();
  start_ = last_report_ = Clock::now();
  RunResult r = cfg_.problem == ProblemType::Heat ? run_heat() : run_poisson();
  settle();
  backend_->synchronize();
  r.wall_seconds = seconds_since(start_) - halo_setup_seconds_;
  r.points_per_second =
      r.wall_seconds > 0 ? double(global_points_) * double(r.steps - start_step_) / r.wall_seconds
                         : 0;
  const double cell_volume = g_.hx * g_.hy * (g_.dims == 3 ? g_.hz : 1.0);
  r.total_heat =
      global_reduce(backend_->reduce(u_->data(), g_, ReduceOp::Sum), ReduceOp::Sum) * cell_volume;
  r.residual_history = history_;
  if (exchanger_) {
    // Fused passes fill the deep margins; single steps (if any) go the one-layer way, with the
    // same transport rules.
    r.halo_transport = deep_ ? deep_->transport() : exchanger_->transport();
    r.halo_depth = deep_ ? deep_->geometry().depth : 1;
    r.time_block_trial_ms = trial_ms_;
    r.halo_setup_seconds = halo_setup_seconds_;
  }
  r.start_step = start_step_;
  r.interrupted = interrupted_;
  r.stop_reason = stop_reason_;
  r.checkpoint = last_checkpoint_;
  return r;
}

// RMS of du/dt over all ranks between `before` and `now` (step s), appended to the history.
template <typename T>
double Simulation<T>::record_rate(const T* now, const T* before, std::int64_t s) {
  const double ss = global_reduce(backend_->reduce_diff(now, before, g_, ReduceOp::SumSquares),
                                  ReduceOp::SumSquares);
  check_finite(ss, s, "the temperature change");
  const double rate = std::sqrt(ss / double(global_points_)) / dt_;
  history_.emplace_back(s, rate);
  return rate;
}

// Sets dt_ and returns the last step. A restart with another dt (time.end changed, dt: auto):
// the remaining time is split into steps of at most the deck's dt (*rescaled). With the same
// dt, times are s * dt as in an uninterrupted run.
template <typename T>
std::int64_t Simulation<T>::resolve_heat_steps(std::int64_t s0, double t0, bool* rescaled) {
  dt_ = cfg_.dt;
  *rescaled = s0 > 0 && restored_dt_ != cfg_.dt;
  if (!*rescaled) return cfg_.steps;
  const double remaining = cfg_.end_time - t0;
  const auto n = static_cast<std::int64_t>(std::max(0.0, std::ceil(remaining / cfg_.dt - 1e-9)));
  if (n > 0) dt_ = remaining / double(n);
  return s0 + n;
}

template <typename T>
RunResult Simulation<T>::run_heat() {
  if (cfg_.scheme != TimeScheme::Explicit) return run_implicit_heat();
  RunResult r = base_result();
  double rate = 0;  // RMS of du/dt, computed where someone looks at it
  double t0 = 0;
  const std::int64_t s0 = restore_state(&t0, &rate);
  bool rescaled = false;
  const std::int64_t steps = resolve_heat_steps(s0, t0, &rescaled);
  const StencilCoeffs<T> c = heat_coeffs<T>(g_, cfg_.diffusivity, dt_);
  const T* f = f_ ? f_->data() : nullptr;
  if (s0 == 0) write_output(0, 0.0);
  if (s0 == 0) in_situ(0, 0.0, rate, steps == 0);
  // Temporal blocking (execution.time_block; `auto`: the backend's choice, 1 on the CPU):
  // blocks of `tb` steps in one backend call, landing on every output and checkpoint step;
  // the last step and steps whose rate is reported run alone (the rate needs the previous
  // state). Decomposed runs fuse through deep halos.
  const std::int64_t tb = fused_depth(f, c);
  // Under MPI every rank must take the same blocks, so the steps where the ranks agree on a
  // progress report (multiples of report_every) run alone instead of rank 0's clock deciding.
  const bool parallel = ctx_.domain.size > 1;
  const bool reports = parallel ? global_reduce(ctx_.on_progress ? 1.0 : 0.0, ReduceOp::MaxAbs) > 0
                                : bool(ctx_.on_progress);
  const std::int64_t report_every = tb > 1 ? 64 : 16;
  for (std::int64_t s = s0 + 1; s <= steps; ++s) {
    std::int64_t kb = 1;
    if (tb > 1 && (parallel || !(ctx_.on_progress && seconds_since(last_report_) >= 1.0))) {
      kb = std::min(tb, steps - s);  // s + kb - 1 < steps
      if (parallel && reports)
        kb = std::min(kb, s % report_every == 0 ? 1 : report_every - s % report_every);
      if (cfg_.output_every > 0) kb = std::min(kb, cfg_.output_every - (s - 1) % cfg_.output_every);
      if (cfg_.checkpoint_every > 0)
        kb = std::min(kb, cfg_.checkpoint_every - (s - 1) % cfg_.checkpoint_every);
      if (ctx_.catalyst) kb = std::min(kb, ctx_.catalyst->schedule().steps_to_next(s - 1));
      kb = std::max<std::int64_t>(kb, 1);
    }
    bool report_due = false;  // this step's rate is computed (and may be reported)
    if (kb > 1) {
      fused_steps(f, c, int(kb));
      s += kb - 1;  // the block's last step
    } else {
      sync_state();
      // Nothing reads u_'s ghosts after this sweep: the rules may be applied inside it.
      sweep(u_->data(), v_->data(), f, c, true);
      const bool last = s == steps;
      report_due = ctx_.on_progress && seconds_since(last_report_) >= 1.0;
      // The branch below runs a global reduction, so under MPI all ranks must take it together:
      // every report_every steps they adopt rank 0's clock (the only rank with a progress
      // callback).
      if (parallel)
        report_due = reports && s % report_every == 0 &&
                     global_reduce(report_due ? 1.0 : 0.0, ReduceOp::MaxAbs) > 0;
      if (last || report_due) rate = record_rate(v_->data(), u_->data(), s);
      std::swap(u_, v_);
    }
    const bool last = s == steps;
    const double t = last ? cfg_.end_time : rescaled ? t0 + double(s - s0) * dt_ : double(s) * dt_;
    if (last || (cfg_.output_every > 0 && s % cfg_.output_every == 0)) write_output(s, t);
    in_situ(s, t, rate, last);
    // Parallel: report only at the agreed steps (where `rate` was computed).
    if (!parallel || last || report_due) report(s, steps, t, rate, last);
    if (after_step(s, t, rate, last)) {
      r.steps = s;
      r.final_time = t;
      r.final_residual = rate;
      return r;
    }
  }
  sync_state();
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
  if (cfg_.method == SolverMethod::Multigrid || cfg_.method == SolverMethod::MultigridCG)
    return run_multigrid();
  RunResult r = base_result();
  const StencilCoeffs<T> c = jacobi_coeffs<T>(g_);
  const T* f = f_ ? f_->data() : nullptr;
  const double f_norm = f ? norm2(backend_->reduce(f, g_, ReduceOp::SumSquares)) : 0.0;
  double residual = std::numeric_limits<double>::infinity(), t0 = 0;
  std::int64_t it = restore_state(&t0, &residual);
  if (it == 0) write_output(0, 0.0);
  if (it == 0) in_situ(0, 0.0, residual, false);
  r.converged = it > 0 && !history_.empty() && history_.back().first == it &&
                residual <= cfg_.tolerance;  // restarted from the converged state
  const int check = std::max(1, cfg_.check_every);
  // Temporal blocking (kernel: temporal, one rank): the sweeps before a residual check run as
  // fused passes of the backend's k (Backend::stencil_steps: the same sweeps); the checked
  // sweep runs alone, since the check compares it with its predecessor. Blocks also end
  // before output and checkpoint iterations, so those are written as without blocking.
  const bool fused = fused_depth(f, c) > 1;
  while (!r.converged && it < cfg_.max_iterations) {
    if (fused) {
      std::int64_t kb =
          std::min<std::int64_t>(check - 1 - it % check, cfg_.max_iterations - it - 1);
      if (cfg_.output_every > 0) kb = std::min(kb, cfg_.output_every - 1 - it % cfg_.output_every);
      if (cfg_.checkpoint_every > 0)
        kb = std::min(kb, cfg_.checkpoint_every - 1 - it % cfg_.checkpoint_every);
      if (ctx_.catalyst) kb = std::min(kb, ctx_.catalyst->schedule().steps_to_next(it) - 1);
      if (kb > 1) {
        fused_steps(f, c, int(kb));
        it += kb;
      } else if (kb == 1) {
        sweep(u_->data(), v_->data(), f, c, true);
        std::swap(u_, v_);
        ++it;
      }
    }
    sync_state();
    // Nothing reads u_'s ghosts after the sweep (the residual fills v_'s): the rules may be
    // applied inside it.
    sweep(u_->data(), v_->data(), f, c, true);
    ++it;
    if (it % check == 0 || it == cfg_.max_iterations) {
      residual = poisson_residual(v_->data(), f, f_norm, u_->data());
      history_.emplace_back(it, residual);
      check_residual(residual, it);
      r.converged = residual <= cfg_.tolerance;
    }
    std::swap(u_, v_);
    if (cfg_.output_every > 0 && it % cfg_.output_every == 0 && !r.converged &&
        it < cfg_.max_iterations)
      write_output(it, double(it));
    if (!r.converged && it < cfg_.max_iterations) in_situ(it, double(it), residual, false);
    report(it, cfg_.max_iterations, double(it), residual, r.converged);
    if (after_step(it, double(it), residual, r.converged || it == cfg_.max_iterations)) break;
    if (r.converged) break;
  }
  if (it > 0 && !interrupted_) write_output(it, double(it));
  if (it > 0 && !interrupted_) in_situ(it, double(it), residual, true);
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
  const std::size_t n_field = g_.padded_size();
  // Column stride rounded to 16 bytes so the Gram kernel can use vector loads.
  const std::size_t P = (n_field + 3) / 4 * 4;
  // Columns 0..m-1: dF ring; column m: the current f. Ghost cells stay zero, so products
  // over the padded length equal products over the interior.
  anderson_depth_ = m;
  anderson_F_ = backend_->allocate((m + 1) * P);
  anderson_G_ = backend_->allocate(m * P);
  anderson_g_prev_ = backend_->allocate(n_field);
  Array<T>* const F = anderson_F_.get();
  Array<T>* const G = anderson_G_.get();
  T* const Fm = F->data() + m * P;
  std::vector<double> gram((m + 1) * (m + 1)), gamma;
  std::vector<const T*> inputs;
  std::vector<double> coeffs;

  double residual = std::numeric_limits<double>::infinity(), t0 = 0;
  std::int64_t it = restore_state(&t0, &residual);
  if (it == 0) write_output(0, 0.0);
  if (it == 0) in_situ(0, 0.0, residual, false);
  r.converged = it > 0 && !history_.empty() && history_.back().first == it &&
                residual <= cfg_.tolerance;  // restarted from the converged state
  const int check = std::max(1, cfg_.check_every);
  // Alternating Anderson-Jacobi (solver.anderson.every = p): the fixed-point map is p Jacobi
  // sweeps, so one mixing (its Gram product and combinations) serves p sweeps.
  const int every = std::max(1, cfg_.anderson_every);
  std::unique_ptr<Array<T>> scratch = every > 1 ? backend_->allocate(n_field) : nullptr;
  while (!r.converged && it < cfg_.max_iterations) {
    T* x = u_->data();
    sweep(x, v_->data(), f, c);
    for (int s = 1; s < every; ++s) {
      sweep(v_->data(), scratch->data(), f, c);
      std::swap(v_, scratch);
    }
    T* gx = v_->data();
    if (it > 0) {  // new differences into ring slot (it-1) % m, before f and g_prev move on
      T* dF = F->data() + ((it - 1) % m) * P;
      T* dG = G->data() + ((it - 1) % m) * P;
      const T* in_f[] = {gx, x, Fm};
      const double c_f[] = {1.0, -1.0, -1.0};
      backend_->combine(dF, in_f, c_f, 3, g_);
      const T* in_g[] = {gx, anderson_g_prev_->data()};
      const double c_g[] = {1.0, -1.0};
      backend_->combine(dG, in_g, c_g, 2, g_);
    }
    {
      const T* in[] = {gx, x};
      const double cf[] = {1.0, -1.0};
      backend_->combine(Fm, in, cf, 2, g_);
    }
    const int mk = int(std::min<std::int64_t>(m, it));
    inputs.assign({gx});
    coeffs.assign({beta});
    if (beta != 1.0) {  // undamped mixing reads no x
      inputs.push_back(x);
      coeffs.push_back(1.0 - beta);
    }
    if (mk > 0) {
      backend_->gram(F->data(), m + 1, F->data(), m + 1, P, n_field, gram.data());
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
    // g(x) becomes the previous g by a swap, not a copy: the next sweep writes into the old
    // one's buffer.
    std::swap(v_, anderson_g_prev_);
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
      check_residual(residual, it);
      r.converged = residual <= cfg_.tolerance;
    }
    if (cfg_.output_every > 0 && it % cfg_.output_every == 0 && !r.converged &&
        it < cfg_.max_iterations)
      write_output(it, double(it));
    if (!r.converged && it < cfg_.max_iterations) in_situ(it, double(it), residual, false);
    report(it, cfg_.max_iterations, double(it), residual, r.converged);
    if (after_step(it, double(it), residual, r.converged || it == cfg_.max_iterations)) break;
    if (r.converged) break;
  }
  if (it > 0 && !interrupted_) write_output(it, double(it));
  if (it > 0 && !interrupted_) in_situ(it, double(it), residual, true);
  r.steps = it;
  r.final_residual = residual;
  return r;
}

// ---- Multigrid: Poisson solves and implicit heat steps (solvers/multigrid/multigrid.hpp) ----------

template <typename T>
std::unique_ptr<Agglomeration<T>> Simulation<T>::make_agglomeration(const GridDesc& global_coarse) {
#ifdef HEATSOLVE_HAVE_MPI
  const MPI_Comm comm = ctx_.comm;
  if (comm == MPI_COMM_NULL)
    throw std::logic_error("decomposed multigrid run without RunContext::comm");
  const int size = ctx_.domain.size;
  // Every rank's block of the coarse grid; the caller checked that each halves evenly.
  const GridDesc& gf = ctx_.domain.global;
  const std::array<int, 3> ratio{gf.nx / global_coarse.nx, gf.ny / global_coarse.ny,
                                 gf.dims == 3 ? gf.nz / global_coarse.nz : 1};
  std::array<int, 6> mine{};
  for (int a = 0; a < 3; ++a) {
    mine[a] = ctx_.domain.block.offset[a] / ratio[a];
    mine[3 + a] = ctx_.domain.block.count[a] / ratio[a];
  }
  std::vector<int> all(6 * std::size_t(size));
  MPI_Allgather(mine.data(), 6, MPI_INT, all.data(), 6, MPI_INT, comm);
  auto agg = std::make_unique<Agglomeration<T>>();
  agg->global_coarse = global_coarse;
  agg->root = ctx_.domain.rank == 0;
  if (agg->root) {
    BackendOptions opts = ctx_.backend_options;
    opts.agree_timings = nullptr;
    agg->backend = make_backend<T>(cfg_.backend, opts);
  }
  for (int f = 0; f < 6; ++f) agg->global_zero_faces[f] = {cfg_.boundary[f].type, 0.0};
  const MPI_Datatype type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
  // Blocks travel as their padded local arrays (one ghost layer); rank 0 copies each into or
  // out of the global padded array. Coarse levels are small: simplicity over bandwidth.
  const auto local_grid = [all, global_coarse](int r) {
    GridDesc g = global_coarse;
    g.nx = all[6 * r + 3];
    g.ny = all[6 * r + 4];
    g.nz = global_coarse.dims == 3 ? all[6 * r + 5] : 1;
    return g;
  };
  const auto copy_block = [all, global_coarse, local_grid](int r, T* local, T* global,
                                                           bool to_global) {
    const GridDesc lg = local_grid(r);
    const GridDesc& gg = global_coarse;
    const bool d3 = gg.dims == 3;
    const int o[3] = {all[6 * r], all[6 * r + 1], d3 ? all[6 * r + 2] : 0};
    // Interior only into the global grid; interior plus one ghost layer out of it.
    const int lo = to_global ? 0 : -1;
    for (int k = d3 ? lo : 0; k < (d3 ? lg.nz - lo : 1); ++k)
      for (int j = lo; j < lg.ny - lo; ++j)
        for (int i = lo; i < lg.nx - lo; ++i) {
          T& l = local[lg.index(i, j, k)];
          T& g = global[gg.index(o[0] + i, o[1] + j, o[2] + k)];
          if (to_global)
            g = l;
          else
            l = g;
        }
  };
  std::vector<int> counts(size), displs(size);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = int(local_grid(r).padded_size());
    displs[r] = total;
    total += counts[r];
  }
  auto buffer = std::make_shared<std::vector<T>>(agg->root ? std::size_t(total) : 0);
  agg->gather = [=](const std::vector<T>& local, std::vector<T>& global) {
    MPI_Gatherv(local.data(), int(local.size()), type, buffer->data(), counts.data(), displs.data(),
                type, 0, comm);
    if (ctx_.domain.rank != 0) return;
    for (int r = 0; r < size; ++r) copy_block(r, buffer->data() + displs[r], global.data(), true);
  };
  agg->scatter = [=](const std::vector<T>& global, std::vector<T>& local) {
    if (ctx_.domain.rank == 0)
      for (int r = 0; r < size; ++r)
        copy_block(r, buffer->data() + displs[r], const_cast<T*>(global.data()), false);
    MPI_Scatterv(buffer->data(), counts.data(), displs.data(), type, local.data(),
                 int(local.size()), type, 0, comm);
  };
  return agg;
#else
  (void)global_coarse;
  throw std::logic_error("decomposed multigrid run in a build without MPI");
#endif
}

template <typename T>
void Simulation<T>::make_multigrid(double sigma) {
  const auto t0 = Clock::now();
  bool dirichlet = false;
  for (int f = 0; f < 2 * g_.dims; ++f)
    dirichlet = dirichlet || cfg_.boundary[f].type == BoundaryType::Dirichlet;
  const bool singular = sigma == 0.0 && !dirichlet;
  typename Multigrid<T>::Hooks hooks;
  if (exchanger_)
    hooks.exchange = [this](T* x) {
      settle();
      exchanger_->exchange(*backend_, x);
    };
  hooks.global_sum = [this](double v) { return global_reduce(v, ReduceOp::Sum); };
  std::unique_ptr<Agglomeration<T>> agg;
  if (ctx_.domain.size > 1) {
    // The first coarse level is distributed when every rank's block halves evenly along the
    // axes the global grid halves (same decision on every rank); otherwise the finest
    // residual itself is gathered (ratio 1).
    std::array<int, 3> ratio{};
    GridDesc gc = coarsen(ctx_.domain.global, &ratio);
    bool even = true;
    for (int a = 0; a < g_.dims; ++a)
      even = even && (ctx_.domain.block.offset[a] % ratio[a] == 0 &&
                      ctx_.domain.block.count[a] % ratio[a] == 0);
    if (global_reduce(even ? 0.0 : 1.0, ReduceOp::MaxAbs) > 0) gc = ctx_.domain.global;
    agg = make_agglomeration(gc);
  }
  mg_ = std::make_unique<Multigrid<T>>(*backend_, g_, ctx_.domain.faces, sigma, cfg_.multigrid,
                                       hooks, singular, std::move(agg));
  const std::size_t n = g_.padded_size();
  mg_r_ = backend_->allocate(n);
  backend_->synchronize();
  mg_setup_seconds_ = seconds_since(t0);
  if (cfg_.method == SolverMethod::MultigridCG) {
    mg_z_ = backend_->allocate(n);
    mg_p_ = backend_->allocate(n);
    mg_q_ = backend_->allocate(n);
  }
}

template <typename T>
double Simulation<T>::mg_start(T* u, const T* f) {
  const double rn = mg_->residual(u, f, mg_r_->data());
  if (cfg_.method == SolverMethod::MultigridCG) {
    mg_->precondition(mg_r_->data(), mg_z_->data());
    mg_p_->copy_from(*mg_z_);
    mg_rz_ = mg_->dot(mg_r_->data(), mg_z_->data());
  }
  return rn;
}

template <typename T>
double Simulation<T>::mg_iterate(T* u, const T* f) {
  if (cfg_.method != SolverMethod::MultigridCG) {
    mg_->cycle(u, f);
    return mg_->residual(u, f, mg_r_->data());
  }
  // Preconditioned CG: q = A p, u += alpha p, r -= alpha q, z = M r, p = z + beta p.
  T* r = mg_r_->data();
  T* z = mg_z_->data();
  T* p = mg_p_->data();
  T* q = mg_q_->data();
  mg_->apply(p, q);
  const double pq = mg_->dot(p, q);
  const double alpha = pq > 0 ? mg_rz_ / pq : 0.0;
  const auto axpby = [&](T* y, double a, const T* x, double b) {
    const T* in[] = {y, x};
    const double c[] = {a, b};
    backend_->combine(y, in, c, 2, g_);
  };
  axpby(u, 1.0, p, alpha);
  axpby(r, 1.0, q, -alpha);
  const double rn = std::sqrt(mg_->dot(r, r));
  // Flexible CG (Polak-Ribiere beta = r.(z - z_old) / r_old.z_old): the V-cycle with linear
  // prolongation and averaging restriction is not a symmetric operator, and the plain
  // beta = r.z / r_old.z_old loses conjugacy with it (19 iterations instead of 10 on a
  // 32^3 deck with Dirichlet value 1 and u0 = 0, tests/solvers/test_multigrid.cpp).
  const double r_zold = mg_->dot(r, z);
  mg_->precondition(r, z);
  const double rz = mg_->dot(r, z);
  axpby(p, mg_rz_ > 0 ? (rz - r_zold) / mg_rz_ : 0.0, z, 1.0);
  mg_rz_ = rz;
  return rn;
}

// mg-cg's running residual drifts from f - A u by rounding (in float, below the precision's
// floor): a step that claims the tolerance is confirmed on the true residual, and CG restarts
// from it when that misses. Multigrid cycles already return the true residual.
template <typename T>
double Simulation<T>::mg_confirm(T* u, const T* f, double rn, double reference) {
  if (cfg_.method != SolverMethod::MultigridCG || rn / reference > cfg_.tolerance) return rn;
  const double true_rn = mg_->residual(u, f, mg_q_->data());
  return true_rn / reference <= cfg_.tolerance ? true_rn : mg_start(u, f);
}

template <typename T>
nlohmann::json Simulation<T>::multigrid_report(std::int64_t cycles,
                                               const std::vector<double>& factors) const {
  nlohmann::json j;
  j["method"] = to_string(cfg_.method);
  j["cycle"] = to_string(cfg_.multigrid.cycle);
  j["smoother"] = to_string(cfg_.multigrid.smoother);
  j["pre_sweeps"] = cfg_.multigrid.pre_sweeps;
  j["post_sweeps"] = cfg_.multigrid.post_sweeps;
  j["prolongation"] = to_string(cfg_.multigrid.prolongation);
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
  // Building the hierarchy (allocation, kernel tuning per level), inside wall_seconds.
  j["setup_seconds"] = mg_setup_seconds_;
  return j;
}

// Multigrid cycles (or mg-cg steps) until ||f - A u|| <= tolerance * ||f|| (* ||f - A u0||
// when f = 0). Every cycle is checked: its residual gives the convergence factor. Singular
// problems (no Dirichlet face): f is shifted by the mean of the initial residual (the part no
// u can remove: the source's mean plus the boundary fluxes), and u has zero mean.
template <typename T>
RunResult Simulation<T>::run_multigrid() {
  RunResult r = base_result();
  make_multigrid(0.0);
  if (!f_) {
    f_ = backend_->allocate(g_.padded_size());
    std::vector<T> zero(g_.padded_size(), T(0));
    f_->copy_from_host(zero.data());
  }
  T* f = f_->data();
  // The singular shift and, without a source, the reference residual come from the deck's
  // initial field (in u_ until a restart replaces it), so that a restarted run shifts f and
  // measures its residual as the uninterrupted run did: it stops at the same cycle, bit for
  // bit. The checkpointed iterate is taken as saved (no second projection onto zero mean).
  if (ctx_.restart_path.empty()) write_output(0, 0.0);
  if (ctx_.restart_path.empty()) in_situ(0, 0.0, 0.0, false);
  mg_->remove_mean(u_->data());
  double rn = mg_start(u_->data(), f);
  if (mg_->singular()) {
    const double sum =
        global_reduce(backend_->reduce(mg_r_->data(), g_, ReduceOp::Sum), ReduceOp::Sum);
    std::vector<T> host(g_.padded_size());
    f_->copy_to_host(host.data());
    const double shift = sum / double(global_points_);
    for (T& v : host) v = static_cast<T>(double(v) - shift);
    backend_->describe_source(f_->data(), g_, nullptr);  // no longer the deck's separable form
    f_->copy_from_host(host.data());
    rn = mg_start(u_->data(), f);
  }
  const double f_norm = norm2(backend_->reduce(f, g_, ReduceOp::SumSquares));
  const double reference = f_norm > 0 ? f_norm : (rn > 0 ? rn : 1.0);
  double residual = std::numeric_limits<double>::infinity(), t0 = 0;
  std::int64_t it = restore_state(&t0, &residual);
  if (it > 0) rn = mg_start(u_->data(), f);
  std::vector<double> factors;
  int stagnant = 0;
  r.converged = rn / reference <= cfg_.tolerance;
  residual = rn / reference;
  while (!r.converged && it < cfg_.max_iterations) {
    const double rn_new = mg_confirm(u_->data(), f, mg_iterate(u_->data(), f), reference);
    ++it;
    factors.push_back(rn > 0 ? rn_new / rn : 0.0);
    rn = rn_new;
    residual = rn / reference;
    history_.emplace_back(it, residual);
    check_residual(residual, it);
    r.converged = residual <= cfg_.tolerance;
    // Three cycles in a row that barely reduce the residual: it sits at the rounding floor of
    // the precision (float: about eps * 6 n^2 * ||u|| / ||f||); more cycles cannot help.
    stagnant = factors.back() > kStagnationFactor ? stagnant + 1 : 0;
    if (!r.converged && stagnant >= 3) {
      stop_reason_ = fmt::format("the residual stagnated at {:.3e} (the {} rounding floor)",
                                 residual, std::is_same_v<T, float> ? "float" : "double");
      report(it, cfg_.max_iterations, double(it), residual, true);
      break;
    }
    if (cfg_.output_every > 0 && it % cfg_.output_every == 0 && !r.converged &&
        it < cfg_.max_iterations)
      write_output(it, double(it));
    if (!r.converged && it < cfg_.max_iterations) in_situ(it, double(it), residual, false);
    report(it, cfg_.max_iterations, double(it), residual, r.converged);
    if (after_step(it, double(it), residual, r.converged || it == cfg_.max_iterations)) break;
  }
  mg_->remove_mean(u_->data());
  if (it > 0 && !interrupted_) write_output(it, double(it));
  if (it > 0 && !interrupted_) in_situ(it, double(it), residual, true);
  r.steps = it;
  r.final_residual = residual;
  r.multigrid = multigrid_report(it - start_step_, factors);
  return r;
}

// (I - theta dt alpha Lap) u' = u + (1 - theta) dt alpha Lap u + dt f, divided by
// theta dt alpha: (sigma - Lap) u' = sigma u + (1-theta)/theta Lap u + f/(theta alpha) with
// sigma = 1/(theta dt alpha). Each step solves it to solver.tolerance (relative to the right
// side) from u, by multigrid cycles or mg-cg.
template <typename T>
RunResult Simulation<T>::run_implicit_heat() {
  RunResult r = base_result();
  double rate = 0, t0 = 0;
  const std::int64_t s0 = restore_state(&t0, &rate);
  bool rescaled = false;
  const std::int64_t steps = resolve_heat_steps(s0, t0, &rescaled);
  const double theta = scheme_theta(cfg_.scheme), alpha = cfg_.diffusivity;
  const double sigma = 1.0 / (theta * dt_ * alpha), c = (1.0 - theta) / theta;
  make_multigrid(sigma);
  StencilCoeffs<T> rhs;
  {
    const double ix = 1.0 / (g_.hx * g_.hx), iy = 1.0 / (g_.hy * g_.hy);
    const double iz = g_.dims == 3 ? 1.0 / (g_.hz * g_.hz) : 0.0;
    rhs.center = static_cast<T>(sigma - 2.0 * c * (ix + iy + iz));
    rhs.cx = static_cast<T>(c * ix);
    rhs.cy = static_cast<T>(c * iy);
    rhs.cz = static_cast<T>(c * iz);
    rhs.source = static_cast<T>(1.0 / (theta * alpha));
  }
  std::unique_ptr<Array<T>> b = backend_->allocate(g_.padded_size());
  const T* f = f_ ? f_->data() : nullptr;
  if (s0 == 0) write_output(0, 0.0);
  if (s0 == 0) in_situ(0, 0.0, rate, steps == 0);
  std::vector<double> factors;
  std::int64_t cycles = 0;
  const std::int64_t max_cycles = std::min<std::int64_t>(cfg_.max_iterations, 1000);
  for (std::int64_t s = s0 + 1; s <= steps; ++s) {
    fill_ghosts(u_->data());
    backend_->stencil(u_->data(), b->data(), f, g_, rhs);
    v_->copy_from(*u_);  // u^n, for the rate of change
    const double b_norm = norm2(backend_->reduce(b->data(), g_, ReduceOp::SumSquares));
    double rn = mg_start(u_->data(), b->data());
    const double reference = b_norm > 0 ? b_norm : 1.0;
    std::int64_t k = 0;
    int stagnant = 0;
    while (rn / reference > cfg_.tolerance && k < max_cycles && stagnant < 3) {
      const double rn_new =
          mg_confirm(u_->data(), b->data(), mg_iterate(u_->data(), b->data()), reference);
      factors.push_back(rn > 0 ? rn_new / rn : 0.0);
      stagnant = factors.back() > kStagnationFactor ? stagnant + 1 : 0;
      rn = rn_new;
      ++k;
      check_finite(rn, s, "the implicit step's residual");
    }
    cycles += k;
    if (rn / reference > cfg_.tolerance)
      throw BlowUpError(fmt::format(
          "the implicit step {} did not reach solver.tolerance {:g} in {} cycles (residual "
          "{:.3e}{}); loosen solver.tolerance (float: its rounding floor), or raise "
          "solver.max_iterations",
          s, cfg_.tolerance, k, rn / reference, stagnant >= 3 ? ", stagnated" : ""));
    const bool last = s == steps;
    const bool report_due = ctx_.domain.size == 1
                                ? ctx_.on_progress && seconds_since(last_report_) >= 1.0
                                : s % 16 == 0;
    if (last || report_due) rate = record_rate(u_->data(), v_->data(), s);
    const double t = last ? cfg_.end_time : rescaled ? t0 + double(s - s0) * dt_ : double(s) * dt_;
    if (last || (cfg_.output_every > 0 && s % cfg_.output_every == 0)) write_output(s, t);
    in_situ(s, t, rate, last);
    if (ctx_.domain.size == 1 || last || report_due) report(s, steps, t, rate, last);
    if (after_step(s, t, rate, last)) {
      r.steps = s;
      r.final_time = t;
      r.final_residual = rate;
      r.multigrid = multigrid_report(cycles, factors);
      return r;
    }
  }
  r.steps = steps;
  r.final_time = steps > 0 ? cfg_.end_time : 0.0;
  r.final_residual = rate;
  r.multigrid = multigrid_report(cycles, factors);
  return r;
}

// ---- Checkpoint/restart, stopping, blow-up guard (docs/batch.md) --------------------------

template <typename T>
CheckpointState Simulation<T>::save_state(std::int64_t step, double time, double residual) const {
  CheckpointState s;
  s.problem = to_string(cfg_.problem);
  s.method = cfg_.problem == ProblemType::Poisson ? to_string(cfg_.method) : "";
  s.precision = std::is_same_v<T, float> ? Precision::Float : Precision::Double;
  s.deck_hash = checkpoint_deck_hash(cfg_);
  s.deck_hashed = checkpoint_deck_json(cfg_);
  const GridDesc& gg = ctx_.domain.global;
  s.dims = gg.dims;
  s.cells = {gg.nx, gg.ny, gg.dims == 3 ? gg.nz : 1};
  s.step = step;
  s.time = time;
  s.dt = dt_;
  s.residual = residual;
  s.residual_history = history_;
  s.ranks = ctx_.domain.size;
  s.block = ctx_.domain.block;
  std::vector<T> host(g_.padded_size());
  u_->copy_to_host(host.data());
  s.fields.push_back(checkpoint_field("u", host.data(), g_));
  if (anderson_F_) {  // the ring of differences, the current f (column m), G, g_prev
    const int m = anderson_depth_;
    const std::size_t n_field = g_.padded_size();
    // Column stride rounded to 16 bytes so the Gram kernel can use vector loads.
    const std::size_t P = (n_field + 3) / 4 * 4;
    s.anderson_depth = m;
    s.ring_position = step > 0 ? (step - 1) % m : -1;
    host.resize((m + 1) * P);
    anderson_F_->copy_to_host(host.data());
    for (int j = 0; j <= m; ++j)
      s.fields.push_back(checkpoint_field(fmt::format("F{}", j), host.data() + j * P, g_));
    anderson_G_->copy_to_host(host.data());
    for (int j = 0; j < m; ++j)
      s.fields.push_back(checkpoint_field(fmt::format("G{}", j), host.data() + j * P, g_));
    anderson_g_prev_->copy_to_host(host.data());
    s.fields.push_back(checkpoint_field("g_prev", host.data(), g_));
  }
  return s;
}

template <typename T>
std::int64_t Simulation<T>::restore_state(double* time, double* residual) {
  if (ctx_.restart_path.empty()) return 0;
  const std::string& path = ctx_.restart_path;
  const CheckpointState s = read_checkpoint(path, ctx_.domain.block);
  const auto need = [&](const std::string& name) -> const CheckpointField& {
    const CheckpointField* f = s.field(name);
    if (!f)
      throw std::runtime_error(fmt::format("checkpoint '{}': field '{}' missing", path, name));
    return *f;
  };
  std::vector<T> host(g_.padded_size());
  u_->copy_to_host(host.data());  // keeps the ghost cells as the constructor set them
  insert_interior(host.data(), g_, need("u").bytes);
  u_->copy_from_host(host.data());
  if (anderson_F_) {
    const int m = anderson_depth_;
    if (s.anderson_depth != m)
      throw std::runtime_error(fmt::format("checkpoint '{}' has Anderson depth {}, the deck {}",
                                           path, s.anderson_depth, m));
    const std::size_t n_field = g_.padded_size();
    // Column stride rounded to 16 bytes so the Gram kernel can use vector loads.
    const std::size_t P = (n_field + 3) / 4 * 4;
    host.assign((m + 1) * P, T(0));  // ghost cells of the history stay zero (see run_anderson)
    for (int j = 0; j <= m; ++j)
      insert_interior(host.data() + j * P, g_, need(fmt::format("F{}", j)).bytes);
    anderson_F_->copy_from_host(host.data());
    host.assign(m * P, T(0));
    for (int j = 0; j < m; ++j)
      insert_interior(host.data() + j * P, g_, need(fmt::format("G{}", j)).bytes);
    anderson_G_->copy_from_host(host.data());
    host.assign(P, T(0));
    insert_interior(host.data(), g_, need("g_prev").bytes);
    anderson_g_prev_->copy_from_host(host.data());
  }
  history_ = s.residual_history;
  *time = s.time;
  *residual = s.residual;
  restored_dt_ = s.dt;
  start_step_ = s.step;
  last_checkpoint_step_ = s.step;  // no need to write it again
  return s.step;
}

template <typename T>
bool Simulation<T>::after_step(std::int64_t step, double time, double residual, bool last) {
  const bool stop = !last && stop_requested(step);
  const bool due = cfg_.checkpoint_every > 0 && step % cfg_.checkpoint_every == 0;
  if (due || stop) write_checkpoint(step, time, residual);
  if (stop) interrupted_ = true;
  return stop;
}

// Collective under MPI: every rank polls at the same steps and the maximum decides, so all
// ranks stop after the same step. Codes: 0 go on, 1 walltime, 1000 + signal number.
template <typename T>
bool Simulation<T>::stop_requested(std::int64_t step) {
  const bool parallel = ctx_.domain.size > 1;
  const std::int64_t done = step - start_step_;
  // Fused blocks may step over a multiple of kStopPollSteps: poll at the first step past it
  // (every rank runs the same blocks, so all poll at the same steps).
  if (parallel && done < next_poll_) return false;
  if (parallel) next_poll_ = (done / kStopPollSteps + 1) * kStopPollSteps;
  double code = 0;
  if (ctx_.stop_flag && *ctx_.stop_flag != 0) code = 1000 + *ctx_.stop_flag;
  if (code == 0 && cfg_.walltime_seconds > 0 && done > 0) {
    // Stop while there is time for the polling interval's steps, one more, and the
    // checkpoint (its longest measured duration, doubled; an estimate before the first), plus
    // the unmeasured exit (closing the series, MPI_Finalize, unloading the libraries) and
    // load spikes.
    constexpr double kExitSeconds = 1.0;
    const double per_step = seconds_since(start_) / double(done);
    const double bytes =
        double(g_.interior_size()) * sizeof(T) * double(1 + 2 * anderson_depth_ + 1);
    const double margin = checkpoint_seconds_ > 0 ? std::max(kExitSeconds, 2 * checkpoint_seconds_)
                                                  : kExitSeconds + bytes / 2e8;
    const double elapsed = std::chrono::duration<double>(Clock::now() - ctx_.start_time).count();
    const double poll = parallel ? double(kStopPollSteps + std::max(1, fused_depth_) - 1) : 1.0;
    if (elapsed + (poll + 1) * per_step + margin > cfg_.walltime_seconds) code = 1;
  }
  if (parallel) code = global_reduce(code, ReduceOp::MaxAbs);
  if (code == 0) return false;
  stop_reason_ = code >= 1000 ? stop_signal_name(int(code) - 1000)
                              : fmt::format("walltime {:g} s", cfg_.walltime_seconds);
  return true;
}

template <typename T>
void Simulation<T>::write_checkpoint(std::int64_t step, double time, double residual) {
  if (step == last_checkpoint_step_) return;
  sync_state();
  // Never checkpoint a blown-up state.
  check_finite(
      global_reduce(backend_->reduce(u_->data(), g_, ReduceOp::SumSquares), ReduceOp::SumSquares),
      step, "the solution's sum of squares");
  const auto t0 = Clock::now();
  const CheckpointState state = save_state(step, time, residual);
  const std::string path = checkpoint_path(cfg_.output_directory, step);
#ifdef HEATSOLVE_HAVE_MPI
  if (ctx_.checkpoint_comm != MPI_COMM_NULL) {
    heatsolve::write_checkpoint(path, state, ctx_.checkpoint_comm);
  } else
#endif
  {
    if (ctx_.domain.size > 1)
      throw std::logic_error("multi-rank run without RunContext::checkpoint_comm");
    heatsolve::write_checkpoint(path, state);
  }
  if (ctx_.domain.rank == 0) publish_checkpoint(cfg_.output_directory, path, step);
  checkpoint_seconds_ = std::max(checkpoint_seconds_, seconds_since(t0));
  last_checkpoint_step_ = step;
  last_checkpoint_ = path;
}

template <typename T>
void Simulation<T>::check_finite(double value, std::int64_t step, const char* what) const {
  if (std::isfinite(value)) return;
  throw BlowUpError(fmt::format(
      "the solution blew up at {} {}: {} is not finite (NaN or Inf){}; {}",
      cfg_.problem == ProblemType::Heat ? "step" : "iteration", step, what,
      cfg_.problem == ProblemType::Heat ? " (check the source, boundary values and time.dt)" : "",
      last_checkpoint_.empty() ? "no checkpoint was written"
                               : "the last good checkpoint is " + last_checkpoint_));
}

template <typename T>
void Simulation<T>::check_residual(double residual, std::int64_t step) const {
  check_finite(residual, step, "the residual");
  const double first = history_.empty() ? 0.0 : history_.front().second;
  if (first > 0 && std::isfinite(first) && residual > kResidualGrowthLimit * first)
    throw BlowUpError(fmt::format(
        "the solver diverged at iteration {}: residual {:.3e} is more than {:g} x the initial "
        "residual {:.3e}; {}",
        step, residual, kResidualGrowthLimit, first,
        last_checkpoint_.empty() ? "no checkpoint was written"
                                 : "the last good checkpoint is " + last_checkpoint_));
}

template class Simulation<float>;
template class Simulation<double>;

}  // namespace heatsolve
