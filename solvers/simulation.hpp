// The per-precision engine behind run_simulation(): owns the backend and the device fields.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

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
  double poisson_residual(T* u, const T* f, double f_norm, const T* previous);
  void fill_ghosts(T* u);  // halo exchange, then physical boundaries
  double global_reduce(double local, ReduceOp op) const;
  double norm2(double local_sum_squares) const;
  void write_output(std::int64_t step, double time);
  void report(std::int64_t step, std::int64_t total, double time, double residual, bool force);
  RunResult base_result() const;

  const Config& cfg_;
  RunContext& ctx_;
  std::vector<FieldWriter*> writers_;
  GridDesc g_;
  std::unique_ptr<Backend<T>> backend_;
  std::unique_ptr<Array<T>> u_, v_, f_;
  std::string kernel_;
  HaloExchanger<T>* exchanger_ = nullptr;
  Reducer serial_reducer_;
  std::chrono::steady_clock::time_point start_, last_report_;
  std::int64_t global_points_ = 0;
  std::vector<std::pair<std::int64_t, double>> history_;
};

}  // namespace heatsolve
