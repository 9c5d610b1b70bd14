// Benchmark of the CUDA stencil ladder against the copy bandwidth measured in the same run
// (plain C++ header: `heatsolve bench` includes it; implemented in stencil_bench.cu).
#pragma once

#include <string>
#include <vector>

namespace heatsolve {

struct StencilBenchOptions {
  int size = 512;                     // N: N^3 cells in 3D, N^2 in 2D
  int dims = 3;                       // 2 | 3
  std::string precision = "float";    // float | double
  int repeats = 20;                   // timed repeats (median); each repeat is `steps` sweeps
  int steps = 10;                     // sweeps per repeat (ping-pong, like the time loop)
  int warmup = 3;                     // untimed repeats first
  bool with_source = false;           // add the source term (one more array read per point)
  bool all_shapes = false;            // every compiled block shape, not only the defaults
  std::vector<std::string> variants;  // empty = all ("temporal": the fused k-step passes)
  // Planes per block (bz of the streaming rungs, the temporal chunk) to time besides the
  // launcher's automatic choice, on each timed shape: the data behind that choice.
  std::vector<int> chunks;
  // 0: burst timing (median of `repeats` after `warmup`; a row lasts about 0.1 s, so the
  // first rows run at the clocks of a GPU coming out of idle). > 0: sustained timing: every
  // measurement (copy, cudaMemcpy, each row) first runs for this many seconds untimed, so the
  // board settles into the power and clock state its load drives it to (an H200 at 512^3
  // float 2.5d-tma draws past its 700 W cap and lowers the SM clock: docs/performance.md),
  // then runs as long again timed as one stretch: the mean rate a long time loop sees.
  double sustain_s = 0;
};

struct StencilBenchRow {
  std::string variant;  // stencil variant name
  std::string shape;    // block / tile shape, e.g. "32x4x4", "32x4x0/ry4" (bz 0 = auto)
  bool is_default = true;
  double ms_per_step = 0;
  double gpoints_per_s = 0;
  double effective_gbs = 0;     // (one read + one write per interior point) / time
  double pct_of_copy = 0;       // effective_gbs / copy_gbs * 100
  double speedup_vs_naive = 0;  // naive default shape's ms / this ms
  // Temporal blocking rows (variant "temporal"): k steps per pass; ms_per_step, GPt/s and
  // GB/s count all k steps (effective). Ladder rows: 1.
  int steps_per_pass = 1;
  // GPt/s over the single-step roofline = copy_gbs / (2 sizeof(T)) points/s (one read + one
  // write per point at copy bandwidth); equals pct_of_copy / 100.
  double x_roofline = 0;
  // The same for every row of a run:
  std::string device;
  double copy_gbs = 0;    // device-to-device copy kernel, bytes read + written
  double memcpy_gbs = 0;  // cudaMemcpy device-to-device, bytes read + written
  double sustain_s = 0;   // the timing of the run (StencilBenchOptions::sustain_s)
  int size = 0, dims = 0;
  std::string precision;
};

// Throws std::runtime_error (CUDA errors) or std::invalid_argument (bad options).
std::vector<StencilBenchRow> bench_stencils(const StencilBenchOptions& opts);

}  // namespace heatsolve
