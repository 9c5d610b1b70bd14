// The per-precision engine behind run_simulation(): owns the backend and the device fields.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <vector>

#include "io/checkpoint.hpp"
#include "solvers/parallel/deep_halo.hpp"
#include "solvers/multigrid/multigrid.hpp"
#include "solvers/solver.hpp"

namespace heatsolve {

template <typename T>
class Simulation {
 public:
  Simulation(const Config& cfg, RunContext& ctx, std::vector<FieldWriter*> writers);
  RunResult run();
  // The current solution's interior, x fastest (local block).
  std::vector<T> interior() const;

 private:
  RunResult run_heat();
  RunResult run_poisson();
  RunResult run_anderson();
  RunResult run_multigrid();      // Poisson: multigrid cycles or mg-cg
  RunResult run_implicit_heat();  // implicit Euler / Crank-Nicolson steps
  // dt_ and the last step of a heat run started (or restarted) at step s0, time t0.
  std::int64_t resolve_heat_steps(std::int64_t s0, double t0, bool* rescaled);
  // The heat run's rate of change (RMS du/dt) at step s, recorded in the history.
  double record_rate(const T* now, const T* before, std::int64_t s);
  // Multigrid for A = sigma - Lap on this rank's block (agglomerated under MPI).
  void make_multigrid(double sigma);
  std::unique_ptr<Agglomeration<T>> make_agglomeration(const GridDesc& global_coarse);
  // Starts an iteration on A u = f: the residual into mg_r_ (and mg-cg's search direction);
  // returns ||f - A u||.
  double mg_start(T* u, const T* f);
  // One multigrid cycle or preconditioned CG step; returns ||f - A u|| after it.
  double mg_iterate(T* u, const T* f);
  // mg-cg: rn if above the tolerance, else the true ||f - A u|| (restarting CG when it misses).
  double mg_confirm(T* u, const T* f, double rn, double reference);
  nlohmann::json multigrid_report(std::int64_t cycles, const std::vector<double>& factors) const;
  double poisson_residual(T* u, const T* f, double f_norm, const T* previous);
  // Halo exchange (finishing the one in flight for u, if any), then physical boundaries
  // (unless `physical` is false).
  void fill_ghosts(T* u, bool physical = true);
  // Completes a halo exchange left in flight by sweep() (before the run ends, or before
  // another buffer's exchange).
  void settle();
  // out = stencil(u) with u's ghosts filled first; with execution.overlap and peers, out's
  // halos are sent while its core is computed and left in flight (pending_ = out). With
  // rules_in_sweep (callers that never read u's ghosts afterwards) the backend may apply the
  // physical face rules inside the sweep instead of writing u's ghosts.
  void sweep(T* u, T* out, const T* f, const StencilCoeffs<T>& c, bool rules_in_sweep = false);
  // Temporal blocking: the steps per fused pass this run takes (1: single steps). Under MPI
  // the ranks agree on it and it sets up the deep halo (solvers/parallel/deep_halo.hpp); with
  // time_block: auto the ranks first time both ways, the exchanges included.
  int fused_depth(const T* f, const StencilCoeffs<T>& c);
  int choose_fused_depth(const T* f, const StencilCoeffs<T>& c);
  std::array<double, 2> time_single_and_fused(const T* f, const StencilCoeffs<T>& c, int passes);
  // Advances u_ by `steps` (> 1) steps in fused passes: the backend's stencil_steps on the
  // block, or under MPI on the deep halo's extended grid, which then holds the newest state.
  void fused_steps(const T* f, const StencilCoeffs<T>& c, int steps);
  // One pass of k steps on the extended grid (the newest state stays in deep_u_). Its margins
  // come from the exchange the previous pass overlapped, else from one first. Where the
  // stream axis alone is split and the backend stores plane ranges, the planes the
  // neighbours need are stored first and the next pass's exchange runs on the side lane
  // while the other planes are computed (solvers/parallel/deep_halo.hpp, OverlapPlanes).
  void deep_pass(const T* fe, const StencilCoeffs<T>& c, int k);
  // Brings u_ up to date when the deep halo's extended grid holds the newest state.
  void sync_state();
  double global_reduce(double local, ReduceOp op) const;
  double norm2(double local_sum_squares) const;
  void write_output(std::int64_t step, double time);
  // In-situ output (ctx_.catalyst) at its scripts' steps and at the last one.
  void in_situ(std::int64_t step, double time, double residual, bool last);
  void report(std::int64_t step, std::int64_t total, double time, double residual, bool force);
  RunResult base_result() const;

  // Checkpoint/restart and stopping (docs/batch.md).
  CheckpointState save_state(std::int64_t step, double time, double residual) const;
  // Loads ctx_.restart_path into the fields; returns the step it holds (0: fresh start).
  std::int64_t restore_state(double* time, double* residual);
  // After a complete step: periodic checkpoint, stop request. True: stop now (checkpointed).
  bool after_step(std::int64_t step, double time, double residual, bool last);
  bool stop_requested(std::int64_t step);
  void write_checkpoint(std::int64_t step, double time, double residual);
  void check_finite(double value, std::int64_t step, const char* what) const;
  void check_residual(double residual, std::int64_t step) const;

  const Config& cfg_;
  RunContext& ctx_;
  std::vector<FieldWriter*> writers_;
  GridDesc g_;
  std::unique_ptr<Backend<T>> backend_;
  std::unique_ptr<Array<T>> u_, v_, f_;
  std::string kernel_;
  HaloExchanger<T>* exchanger_ = nullptr;
  bool overlap_ = false;  // execution.overlap and at least one Exchange face
  T* pending_ = nullptr;  // buffer whose halo exchange sweep() left in flight
  // Deep halo (temporal blocking under MPI): the extended grid's fields, its face rules, and
  // whether deep_u_ is newer than u_.
  std::unique_ptr<DeepHaloExchanger<T>> deep_;
  std::unique_ptr<Array<T>> deep_u_, deep_v_, deep_f_;
  BoundaryFaces deep_faces_{};
  bool deep_newer_ = false;
  bool deep_ready_ = false;    // deep_u_'s margins hold the neighbours' cells (an overlapped pass)
  bool overlap_deep_ = false;  // overlap_planes() applies to the geometry
  OverlapPlanes deep_parts_;
  int fused_depth_ = 0;                     // 0: not decided yet
  std::array<double, 2> trial_ms_{-1, -1};  // auto under MPI: ms a step, single and fused
  double halo_setup_seconds_ = 0;           // fused_depth's set-up under MPI
  CellRange core_;
  std::vector<CellRange> shell_;
  Reducer serial_reducer_;
  std::chrono::steady_clock::time_point start_, last_report_;
  std::int64_t global_points_ = 0;
  std::vector<std::pair<std::int64_t, double>> history_;
  // Anderson history (run_anderson), members so that checkpoints can reach them.
  std::unique_ptr<Array<T>> anderson_F_, anderson_G_, anderson_g_prev_;
  int anderson_depth_ = 0;
  // Multigrid (run_multigrid, run_implicit_heat): the hierarchy and mg-cg's vectors.
  std::unique_ptr<Multigrid<T>> mg_;
  std::unique_ptr<Array<T>> mg_r_, mg_z_, mg_p_, mg_q_;
  double mg_rz_ = 0;
  double mg_setup_seconds_ = 0;
  double dt_ = 0;                // heat time step in use
  double restored_dt_ = 0;       // dt of the checkpoint restarted from
  std::int64_t start_step_ = 0;  // step restored from (0: fresh)
  std::int64_t last_checkpoint_step_ = -1;
  std::string last_checkpoint_, stop_reason_;
  bool interrupted_ = false;
  std::int64_t next_poll_ = 0;     // MPI: steps done (this run) at which to poll for a stop
  double checkpoint_seconds_ = 0;  // longest checkpoint write so far (walltime margin)
};

}  // namespace heatsolve
