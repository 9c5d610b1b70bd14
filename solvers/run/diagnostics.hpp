// diagnostics.csv's rows (output.diagnostics; the file: io/diagnostics_writer.hpp; the
// columns: docs/user-guide.md): min, max and mean of the field, its heat content
// sum(rho cp T dV), the heat flowing in through each face (W), the source power, the energy
// balance, and probes. Every value is a reduction over all ranks (collective); rank 0 writes.
//
// The balance is heat - heat(0) - integral of (inflow + source power) dt, the integral taken
// every step with the scheme's own rule (explicit: the state before the step; implicit Euler:
// after it; Crank-Nicolson: their mean), so an explicit run's balance is at rounding level and
// an implicit one's at the solver's tolerance. The inflow of all faces together is one
// reduction of the operator with the deck's faces (interior faces cancel), each step; the
// per-face columns come from the field at the row's step. A steady solve has one row, at its
// final iterate, whose balance is the net inflow plus source power (zero when converged).
#pragma once

#include <cstdint>
#include <vector>

#include "io/checkpoint.hpp"
#include "io/diagnostics_writer.hpp"
#include "solvers/run/sweeper.hpp"

namespace heatsolve {

template <typename T>
class Diagnostics {
 public:
  // `writer`: rank 0's (null on the other ranks).
  Diagnostics(const Config& cfg, Sweeper<T>& sweeper, DiagnosticsWriter* writer);

  // The heat content at the start: the deck's initial field's, whatever a checkpoint holds;
  // the integral so far from the checkpoint (one without it: the balance starts there).
  void start(const CheckpointState* restored);
  // Around each time step from t to t_next (transient runs).
  void before_step(double t);
  void after_step(double t, double t_next);
  // The row of `step` (collective).
  void row(std::int64_t step, double time);
  void save(CheckpointState& s) const { s.heat_integral = integral_; }

 private:
  // Inflow through every face plus source power, W, of the state now (collective).
  double inflow_and_source(double t);
  double source_power(double t) const;
  double heat_content(const std::vector<T>& interior) const;
  std::vector<double> face_inflows(const std::vector<T>& interior, double t) const;

  const Config& cfg_;
  Sweeper<T>& sw_;
  DiagnosticsWriter* writer_;
  bool transient_;
  double volume_;  // of a cell
  std::vector<std::array<double, 2>>
      sources_;              // per term: sum over cells with value 1, amp 0 / value 0, amp 1
  HelmholtzOperator<T> op_;  // the deck's operator without mass: inflow + source
  std::unique_ptr<Array<T>> scratch_;  // variable coefficients: its residual
  double heat0_ = 0, integral_ = 0, before_ = 0;
};

}  // namespace heatsolve
