#include "solvers/run/run_loop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "core/stopwatch.hpp"
#include "io/catalyst_adaptor.hpp"

namespace heatsolve {

namespace {
using Clock = std::chrono::steady_clock;
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
// A steady residual this many times its first value means divergence.
constexpr double kResidualGrowthLimit = 1e6;
// Solvers whose residual costs work of its own (heat) are checked about this often (wall
// clock); under MPI the ranks agree on it at multiples of kAgreeEvery steps.
constexpr double kCheckSeconds = 1.0;
constexpr std::int64_t kAgreeEvery = 64;
}  // namespace

std::string blow_up_message(bool transient, std::int64_t step, const std::string& what) {
  return fmt::format("the solution blew up at {} {}: {} is not finite (NaN or Inf){}",
                     transient ? "step" : "iteration", step, what,
                     transient ? " (check the source, boundary values and time.dt)" : "");
}

void require_finite(double value, bool transient, std::int64_t step, const std::string& what) {
  if (!std::isfinite(value)) throw BlowUpError(blow_up_message(transient, step, what));
}

template <typename T>
RunLoop<T>::RunLoop(const Config& cfg, RunContext& ctx, Sweeper<T>& sweeper, Solver<T>& solver,
                    std::vector<FieldWriter*> writers)
    : cfg_(cfg),
      ctx_(ctx),
      sweeper_(sweeper),
      solver_(solver),
      writers_(std::move(writers)),
      schedule_(cfg, ctx.catalyst),
      next_poll_(kStopPollSteps) {
  if (cfg.diagnostics.enabled())
    diagnostics_ = std::make_unique<Diagnostics<T>>(cfg, sweeper, ctx.diagnostics);
}

template <typename T>
RunResult RunLoop<T>::run() {
  // The first exchange sets the halo exchange up (buffers, pinned memory, IPC mappings, MPI
  // connections); done before the clock starts so that wall time and points/s measure steps.
  sweeper_.warm_up();
  sweeper_.backend().synchronize();
  start_ = last_report_ = last_check_ = Clock::now();
  std::unique_ptr<CheckpointState> restored = restore();
  // The initial state before the solver's start may change it (a singular problem's mean).
  if (!restored) {
    write_output(0, 0.0);
    in_situ(0, 0.0, 0.0, solver_.transient() && solver_.total() == 0);
  }
  StepReport r = solver_.start(restored.get());
  const bool steady = !solver_.transient();
  if (diagnostics_) {
    diagnostics_->start(restored.get());
    if (!restored && !steady) diagnostics_->row(0, 0.0);
  }
  if (r.done) {  // nothing to advance: the deck's end, or a restart from a finished run
    solver_.finish();
    // A steady solve's final output is not in its last checkpoint's series (below).
    if (restored && steady) final_outputs(r);
  }
  restored.reset();
  while (!r.done) {
    Monitor monitor = Monitor::None;
    const std::int64_t count = next_block(r.step, &monitor);
    const double t0 = r.time;
    if (diagnostics_ && !steady) diagnostics_->before_step(t0);
    r = advance(count, monitor);
    if (diagnostics_ && !steady) diagnostics_->after_step(t0, r.time);
    if (monitor != Monitor::None) last_check_ = Clock::now();
    inspect(r);
    // A row before the step's checkpoint (which records how far diagnostics.csv came).
    if (diagnostics_ && !steady && (r.done || schedule_.diagnostics_due(r.step)))
      diagnostics_->row(r.step, r.time);
    // A transient run's last step is an output step like any other, written before its
    // checkpoint (which then lists it). A steady solve's final output is of the state
    // finish() leaves (a singular problem's projection), after the checkpoint, which holds
    // the iterate a longer solve would continue from.
    if (!r.done || !steady) {
      if (r.done || schedule_.output_due(r.step)) write_output(r.step, r.time);
      in_situ(r.step, r.time, r.residual, r.done);
    }
    progress(r, r.done);
    if (after_step(r)) break;
    if (r.done) {
      solver_.finish();
      if (steady) final_outputs(r);
    }
  }
  sweeper_.settle();
  sweeper_.sync_state();
  sweeper_.backend().synchronize();
  RunResult res;
  sweeper_.describe(res);
  res.wall_seconds = seconds_since(start_) - sweeper_.setup_seconds();
  res.steps = r.step;
  res.final_time = solver_.transient() ? r.time : 0.0;
  res.final_residual = r.residual;
  res.points_per_second =
      res.wall_seconds > 0
          ? double(sweeper_.global_points()) * double(res.steps - start_step_) / res.wall_seconds
          : 0;
  const GridDesc& g = sweeper_.grid();
  const double cell_volume = g.hx * g.hy * (g.dims == 3 ? g.hz : 1.0);
  res.total_heat =
      sweeper_.global_reduce(sweeper_.backend().reduce(sweeper_.u().data(), g, ReduceOp::Sum),
                             ReduceOp::Sum) *
      cell_volume;
  res.residual_history = history_;
  res.start_step = start_step_;
  res.interrupted = interrupted_;
  res.stop_reason = stop_reason_;
  res.checkpoint = last_checkpoint_;
  solver_.result(res);
  return res;
}

// The solver's block, cut at the next event. A monitored solver's last step is recorded at
// output and checkpoint steps (the deck decides) and checked about once a second (the wall
// clock decides, which under MPI every rank must follow: the ranks agree at multiples of
// kAgreeEvery steps).
template <typename T>
std::int64_t RunLoop<T>::next_block(std::int64_t s, Monitor* monitor) {
  std::int64_t k =
      std::max<std::int64_t>(1, std::min(solver_.max_advance(), schedule_.steps_to_next(s)));
  // The energy balance integrates every step's inflow: single steps.
  if (diagnostics_ && solver_.transient()) k = 1;
  *monitor = Monitor::None;
  if (!solver_.monitored()) return k;
  bool check = false;
  if (ctx_.domain.size > 1) {
    k = std::min(k, kAgreeEvery - s % kAgreeEvery);
    if ((s + k) % kAgreeEvery == 0)
      check = sweeper_.global_reduce(seconds_since(last_check_) >= kCheckSeconds ? 1.0 : 0.0,
                                     ReduceOp::MaxAbs) > 0;
  } else {
    check = seconds_since(last_check_) >= kCheckSeconds;
  }
  if (schedule_.output_due(s + k) || schedule_.checkpoint_due(s + k))
    *monitor = Monitor::Record;
  else if (check)
    *monitor = Monitor::Check;
  return k;
}

template <typename T>
StepReport RunLoop<T>::advance(std::int64_t count, Monitor monitor) {
  try {
    return solver_.advance(count, monitor);
  } catch (const BlowUpError& e) {
    throw BlowUpError(e.what() + checkpoint_note());
  }
}

// A fresh residual must be finite, and a steady one must not grow past kResidualGrowthLimit
// times the first one recorded.
template <typename T>
void RunLoop<T>::inspect(const StepReport& r) {
  if (r.fresh) {
    if (!std::isfinite(r.residual))
      blow_up(blow_up_message(solver_.transient(), r.step, solver_.residual_name()));
    const double first = history_.empty() ? 0.0 : history_.front().second;
    if (!solver_.transient() && first > 0 && std::isfinite(first) &&
        r.residual > kResidualGrowthLimit * first)
      blow_up(fmt::format(
          "the solver diverged at iteration {}: residual {:.3e} is more than {:g} x the initial "
          "residual {:.3e}",
          r.step, r.residual, kResidualGrowthLimit, first));
  }
  if (r.record) history_.emplace_back(r.step, r.residual);
}

template <typename T>
void RunLoop<T>::check_state(std::int64_t step) {
  if (step == checked_step_) return;
  sweeper_.sync_state();
  // sum(u - u) is 0 for finite values and NaN as soon as one is not (inf - inf), where a sum
  // of squares would overflow for large finite ones and a maximum may skip NaNs.
  const T* u = sweeper_.u().data();
  const double zero = sweeper_.global_reduce(
      sweeper_.backend().reduce_diff(u, u, sweeper_.grid(), ReduceOp::Sum), ReduceOp::Sum);
  if (zero != 0.0) blow_up(blow_up_message(solver_.transient(), step, "the solution"));
  checked_step_ = step;
}

template <typename T>
void RunLoop<T>::final_outputs(const StepReport& r) {
  write_output(r.step, r.time);
  in_situ(r.step, r.time, r.residual, true);
  if (diagnostics_) diagnostics_->row(r.step, r.time);  // a steady solve's one row
}

template <typename T>
void RunLoop<T>::write_output(std::int64_t step, double time) {
  if (writers_.empty()) return;
  check_state(step);  // never write a blown-up field: the last good steps stay the newest
  const std::vector<T> data = sweeper_.interior();
  for (FieldWriter* w : writers_) w->write(step, time, data.data(), ctx_.domain.block);
}

// A failing script stops the run as a blow-up does, the state being good: it is checkpointed
// first when checkpoints are on.
template <typename T>
void RunLoop<T>::in_situ(std::int64_t step, double time, double residual, bool last) {
  CatalystAdaptor* catalyst = ctx_.catalyst;
  if (!catalyst || !catalyst->schedule().any_due(step, last)) return;
  check_state(step);
  const std::vector<T> data = sweeper_.interior();  // the writers' host copy, on these steps only
  try {
    catalyst->co_process(step, time, last, data.data(), ctx_.domain.block);
  } catch (const CatalystError&) {
    if (cfg_.checkpoint_every > 0) write_checkpoint(step, time, residual);
    throw;
  }
}

template <typename T>
void RunLoop<T>::progress(const StepReport& r, bool force) {
  if (!ctx_.on_progress) return;
  if (!force && seconds_since(last_report_) < kCheckSeconds) return;
  // A monitored solver's rate is shown where it was computed (the checks, about as often).
  if (!force && solver_.monitored() && !r.fresh) return;
  last_report_ = Clock::now();
  ProgressInfo p;
  p.step = r.step;
  p.total = solver_.total();
  p.time = r.time;
  p.residual = r.residual;
  p.elapsed_seconds = seconds_since(start_);
  const std::int64_t done = r.step - start_step_;  // in this run (a restart starts later)
  p.points_per_second = p.elapsed_seconds > 0
                            ? double(sweeper_.global_points()) * double(done) / p.elapsed_seconds
                            : 0;
  p.eta_seconds = done > 0 ? p.elapsed_seconds * double(p.total - r.step) / double(done) : -1;
  // A steady solve ends at its tolerance, not at max_iterations: its remaining iterations
  // follow from the convergence rate so far (the history's mean factor per iteration).
  if (!solver_.transient()) {
    p.eta_seconds = -1;
    if (done > 0 && history_.size() >= 2) {
      const auto& [s0, r0] = history_.front();
      const auto& [s1, r1] = history_.back();
      const double factor =
          s1 > s0 && r0 > 0 && r1 > 0 ? std::pow(r1 / r0, 1.0 / double(s1 - s0)) : 1.0;
      if (factor < 1.0 && r1 > cfg_.tolerance) {
        const double left = std::log(cfg_.tolerance / r1) / std::log(factor);
        p.eta_seconds = p.elapsed_seconds / double(done) * std::min(left, double(p.total - r.step));
      } else if (r1 <= cfg_.tolerance) {
        p.eta_seconds = 0;
      }
    }
  }
  ctx_.on_progress(p);
}

// ---- Checkpoint/restart, stopping, blow-up guard (docs/batch.md) --------------------------

template <typename T>
std::unique_ptr<CheckpointState> RunLoop<T>::restore() {
  if (ctx_.restart_path.empty()) return nullptr;
  const std::string& path = ctx_.restart_path;
  auto s = std::make_unique<CheckpointState>(read_checkpoint(path, ctx_.domain.block));
  sweeper_.load_interior(checkpoint_field(*s, "u", path).bytes);
  history_ = s->residual_history;
  start_step_ = s->step;
  last_checkpoint_step_ = s->step;  // no need to write it again
  return s;
}

template <typename T>
bool RunLoop<T>::after_step(const StepReport& r) {
  const bool stop = !r.done && stop_requested(r.step);
  if (schedule_.checkpoint_due(r.step) || stop) write_checkpoint(r.step, r.time, r.residual);
  if (stop) interrupted_ = true;
  return stop;
}

// Collective under MPI: every rank polls at the same steps and the maximum decides, so all
// ranks stop after the same step. Codes: 0 go on, 1 walltime, 1000 + signal number.
template <typename T>
bool RunLoop<T>::stop_requested(std::int64_t step) {
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
    const double bytes = double(sweeper_.grid().interior_size()) * sizeof(T) *
                         double(solver_.checkpoint_fields() + 1);
    const double margin = checkpoint_seconds_ > 0 ? std::max(kExitSeconds, 2 * checkpoint_seconds_)
                                                  : kExitSeconds + bytes / 2e8;
    const double elapsed = seconds_since(ctx_.start_time);
    const double poll = parallel ? double(kStopPollSteps + sweeper_.fused_depth_taken() - 1) : 1.0;
    if (elapsed + (poll + 1) * per_step + margin > cfg_.walltime_seconds) code = 1;
  }
  if (parallel) code = sweeper_.global_reduce(code, ReduceOp::MaxAbs);
  if (code == 0) return false;
  stop_reason_ = code >= 1000 ? stop_signal_name(int(code) - 1000)
                              : fmt::format("walltime {:g} s", cfg_.walltime_seconds);
  return true;
}

template <typename T>
void RunLoop<T>::write_checkpoint(std::int64_t step, double time, double residual) {
  if (step == last_checkpoint_step_) return;
  check_state(step);  // never checkpoint a blown-up state
  const auto t0 = Clock::now();
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
  s.residual = residual;
  s.residual_history = history_;
  s.ranks = ctx_.domain.size;
  s.block = ctx_.domain.block;
  s.fields.push_back(checkpoint_field_of<T>("u", sweeper_.interior()));
  solver_.save(s);
  if (diagnostics_ && solver_.transient()) diagnostics_->save(s);
  const std::string path = checkpoint_path(cfg_.output_directory, step);
#ifdef HEATSOLVE_HAVE_MPI
  if (ctx_.checkpoint_comm != MPI_COMM_NULL) {
    heatsolve::write_checkpoint(path, s, ctx_.checkpoint_comm);
  } else
#endif
  {
    if (ctx_.domain.size > 1)
      throw std::logic_error("multi-rank run without RunContext::checkpoint_comm");
    heatsolve::write_checkpoint(path, s);
  }
  if (ctx_.domain.rank == 0) publish_checkpoint(cfg_.output_directory, path, step);
  checkpoint_seconds_ = std::max(checkpoint_seconds_, seconds_since(t0));
  last_checkpoint_step_ = step;
  last_checkpoint_ = path;
}

template <typename T>
std::string RunLoop<T>::checkpoint_note() const {
  return last_checkpoint_.empty() ? "; no checkpoint was written"
                                  : "; the last good checkpoint is " + last_checkpoint_;
}

template <typename T>
void RunLoop<T>::blow_up(const std::string& what) const {
  throw BlowUpError(what + checkpoint_note());
}

template class RunLoop<float>;
template class RunLoop<double>;

}  // namespace heatsolve
