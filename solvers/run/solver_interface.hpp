// What the run loop (solvers/run/run_loop.hpp) knows of a method: one class per deck scheme
// or method implements Solver<T> (solvers/time/, solvers/steady/) and is listed once in
// solvers/registry.cpp. A solver advances the fields of its Sweeper when asked and says where
// it stands; the loop alone decides about outputs, in-situ calls, checkpoints, progress,
// stop requests and blow-up checks. Solvers never call the loop; the loop never names a method.
#pragma once

#include <cstdint>
#include <string>

#include "io/checkpoint.hpp"
#include "solvers/run/checkpoint_fields.hpp"
#include "solvers/solver.hpp"

namespace heatsolve {

// Where a solver stands after a start or an advance.
struct StepReport {
  std::int64_t step = 0;  // time steps or iterations done
  double time = 0;        // simulated time (steady solves: the iteration count)
  double residual = 0;    // the newest monitored value: heat rate (RMS du/dt) or residual
  bool fresh = false;     // `residual` was computed at `step` (checked by the loop)
  bool record = false;    // and goes into the residual history (residuals.csv)
  bool done = false;      // last step, converged, or stopped (stagnation)

  // A steady solve after `iterations` (its time is the iteration count); a fresh residual goes
  // into the history.
  static StepReport iteration(std::int64_t iterations, double residual, bool fresh, bool done) {
    return {iterations, double(iterations), residual, fresh, fresh, done};
  }
  // A transient solve at `step`, simulated `time`, its heat `rate` (fresh where computed at
  // this step, recorded where it goes into the history).
  static StepReport time_step(std::int64_t step, double time, double rate, bool fresh, bool record,
                              bool done) {
    return {step, time, rate, fresh, record, done};
  }
};

// What the loop asks of an advance's last step. Solvers whose residual comes with every step
// (or at their own checks) ignore it; heat computes its rate (which needs the state before the
// last step) only when asked. Check: a health check (finite values) at a step chosen by the
// wall clock, not recorded; Record: a step whose rate goes into the history (output and
// checkpoint steps, chosen by the deck alone).
enum class Monitor { None, Check, Record };

template <typename T>
class Solver {
 public:
  virtual ~Solver() = default;
  // Transient (steps, simulated time) or steady (iterations).
  virtual bool transient() const = 0;
  // The planned number of steps, or the iteration limit (progress, ETA).
  virtual std::int64_t total() const = 0;
  // Starts at step 0 from the deck's initial field in the Sweeper's u, or, given a checkpoint,
  // where it left off: the loop has loaded u and the history; the solver restores the rest of
  // its own state (restore()) and its parameters (dt, the singular shift...).
  virtual StepReport start(const CheckpointState* restored) = 0;
  // The most steps one advance() may take from the current state (its natural block: a fused
  // pass, the distance to the next residual check); the loop may ask for fewer.
  virtual std::int64_t max_advance() const { return 1; }
  // Advances `count` (>= 1) steps, or fewer when done sooner; `monitor` applies to the last.
  virtual StepReport advance(std::int64_t count, Monitor monitor) = 0;
  // Whether its residual is computed only when monitored (heat).
  virtual bool monitored() const { return false; }
  // What its residual measures, for blow-up messages.
  virtual std::string residual_name() const { return "the residual"; }
  // After the last advance of a finished run, before the final outputs.
  virtual void finish() {}
  // Checkpoints: the loop saves u, the step, time and history; a solver adds its own fields
  // and parameters (and restores them in start()).
  virtual void save(CheckpointState& state) const { (void)state; }
  // Fields of the block's size a checkpoint of this solver holds (u included).
  virtual int checkpoint_fields() const { return 1; }
  // Its part of the result: convergence, the multigrid block, a reason it stopped early.
  virtual void result(RunResult& r) const { (void)r; }
};

// "the solution blew up at <step|iteration> N: <what> is not finite (NaN or Inf)".
std::string blow_up_message(bool transient, std::int64_t step, const std::string& what);
// Throws BlowUpError with blow_up_message() unless `value` is finite (the loop adds where the
// last good checkpoint is).
void require_finite(double value, bool transient, std::int64_t step, const std::string& what);

}  // namespace heatsolve
