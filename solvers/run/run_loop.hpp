// The one run loop: restores a checkpoint, hands the initial state to the observers, and then
// asks the solver to advance as far as the next event allows (output, checkpoint, in-situ
// call, the solver's own block), hands each result to the observers (field writers,
// Catalyst, progress, residual history) and checks it (finite values, divergence), until the
// solver is done or a stop signal or the wall time ends the run with a checkpoint.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "solvers/run/diagnostics.hpp"
#include "solvers/run/event_schedule.hpp"
#include "solvers/run/solver_interface.hpp"
#include "solvers/run/sweeper.hpp"

namespace heatsolve {

template <typename T>
class RunLoop {
 public:
  RunLoop(const Config& cfg, RunContext& ctx, Sweeper<T>& sweeper, Solver<T>& solver,
          std::vector<FieldWriter*> writers);
  RunResult run();

 private:
  using Clock = std::chrono::steady_clock;
  // The steps and monitoring of the next advance from `s`.
  std::int64_t next_block(std::int64_t s, Monitor* monitor);
  StepReport advance(std::int64_t count, Monitor monitor);
  void inspect(const StepReport& r);
  // Throws BlowUpError unless the solution at `step` is finite (once per step: outputs,
  // in-situ calls and checkpoints of one step share it). Collective under MPI.
  void check_state(std::int64_t step);
  void write_output(std::int64_t step, double time);
  void final_outputs(const StepReport& r);  // the field and the last in-situ call
  void in_situ(std::int64_t step, double time, double residual, bool last);
  void progress(const StepReport& r, bool force);
  // Checkpoint/restart and stopping (docs/batch.md).
  std::unique_ptr<CheckpointState> restore();
  // After a step: periodic checkpoint, stop request. True: stop now (checkpointed).
  bool after_step(const StepReport& r);
  bool stop_requested(std::int64_t step);
  void write_checkpoint(std::int64_t step, double time, double residual);
  // "; the last good checkpoint is ..." for blow-up messages.
  std::string checkpoint_note() const;
  [[noreturn]] void blow_up(const std::string& what) const;

  const Config& cfg_;
  RunContext& ctx_;
  Sweeper<T>& sweeper_;
  Solver<T>& solver_;
  std::vector<FieldWriter*> writers_;
  EventSchedule schedule_;
  std::unique_ptr<Diagnostics<T>> diagnostics_;  // output.diagnostics
  std::vector<std::pair<std::int64_t, double>> history_;
  Clock::time_point start_, last_report_, last_check_;
  std::int64_t start_step_ = 0;  // step restored from (0: fresh)
  std::int64_t last_checkpoint_step_ = -1;
  std::string last_checkpoint_, stop_reason_;
  bool interrupted_ = false;
  std::int64_t checked_step_ = -1;  // the last step check_state() passed
  std::int64_t next_poll_ = 0;      // MPI: steps done (this run) at which to poll for a stop
  double checkpoint_seconds_ = 0;   // longest checkpoint write so far (walltime margin)
};

}  // namespace heatsolve
