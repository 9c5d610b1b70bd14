// Runs a validated Config: builds the fields, drives the backend through the time loop
// (heat) or the Jacobi/Anderson iteration (Poisson), and hands output steps to the writers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "io/config.hpp"
#include "io/field_writer.hpp"
#include "solvers/domain.hpp"

namespace heatsolve {

// One progress report: step or iteration count, simulated time (heat), latest norm.
struct ProgressInfo {
  std::int64_t step = 0, total = 0;  // total: steps (heat) or max_iterations (Poisson)
  double time = 0;
  double residual = 0;
  double points_per_second = 0;
  double elapsed_seconds = 0;
  double eta_seconds = -1;  // < 0: unknown
};

struct RunResult {
  std::string backend, backend_description, kernel;
  Precision precision = Precision::Double;
  std::int64_t steps = 0;  // time steps (heat) or iterations (Poisson)
  double final_time = 0;
  double final_residual = 0;
  bool converged = false;  // Poisson: tolerance reached
  double wall_seconds = 0;
  double points_per_second = 0;  // interior point updates per second (all ranks)
  double total_heat = 0;         // sum of u * cell volume at the end
  std::vector<std::pair<std::int64_t, double>> residual_history;
  std::vector<std::string> files;
};

// Parallel context of a run; the defaults make a serial run.
struct RunContext {
  Domain domain;
  const Reducer* reducer = nullptr;             // null: serial
  HaloExchanger<float>* exchanger_f = nullptr;  // null: no peers
  HaloExchanger<double>* exchanger_d = nullptr;
  std::function<void(const ProgressInfo&)> on_progress;  // called at most every ~1 s
  BackendOptions backend_options;
};

// Runs the whole problem. Writers receive the local block of each output step.
RunResult run_simulation(const Config& cfg, RunContext& ctx, std::vector<FieldWriter*> writers);

// Convenience for tests: a serial run returning the final interior field (x fastest).
template <typename T>
RunResult run_serial(const Config& cfg, std::vector<T>* final_field,
                     std::vector<FieldWriter*> writers = {});

// Evaluates a Shape at the cell centres of `domain.local` into a padded array.
template <typename T>
void fill_shape(std::vector<T>& padded, const Shape& shape, const Config& cfg,
                const Domain& domain);

}  // namespace heatsolve
