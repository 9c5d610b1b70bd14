// `heatsolve bench` on the CPU backend (machines without a GPU, or --backend cpu): the copy
// bandwidth of this machine's cores over arrays of the grid's size, and the rate of the CPU
// stencil (ghost fill + sweep: one explicit heat step) in points per second and as a fraction
// of that copy bandwidth (one read and one write per point, as the GPU rows count).
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/bench/bench.hpp"
#include "app/bench/bench_variable.hpp"
#include "core/boundary.hpp"
#include "core/stopwatch.hpp"
#include "kernels/backend.hpp"
#include "kernels/stencil/coefficients.hpp"

namespace heatsolve {

namespace {

using Clock = std::chrono::steady_clock;

// Median seconds of one call of `fn`, from `repeats` timings of `per_repeat` calls each, after
// one untimed repeat; per_repeat is chosen so that a repeat lasts about 0.2 s.
template <typename Fn>
double median_seconds(Fn&& fn, int repeats) {
  const auto t0 = Clock::now();
  fn();
  const double first = seconds_since(t0);
  const int per_repeat = std::max(1, static_cast<int>(0.2 / std::max(first, 1e-6)));
  std::vector<double> t;
  for (int r = 0; r <= repeats; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < per_repeat; ++i) fn();
    if (r > 0)  // the first repeat warms caches, page tables and threads
      t.push_back(seconds_since(start) / per_repeat);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct CpuBenchResult {
  std::string device;
  int threads = 0;
  double copy_gbs = 0;  // bytes read + written per second
  double ms_per_step = 0, gpoints_per_s = 0, effective_gbs = 0, pct_of_copy = 0;
};

template <typename T>
CpuBenchResult bench_cpu(int size, int dims) {
  GridDesc g;
  g.dims = dims;
  g.nx = g.ny = size;
  g.nz = dims == 3 ? size : 1;
  g.hx = g.hy = g.hz = 1.0 / size;
  auto backend = make_backend<T>(BackendKind::Cpu, {});
  CpuBenchResult r;
  r.device = backend->description();
  r.threads = omp_get_max_threads();
  backend->prepare(g);
  // The run's own arrays (the backend's allocation), so both figures see the same pages.
  auto a = backend->allocate(g.padded_size());
  auto b = backend->allocate(g.padded_size());
  const std::size_t n = g.padded_size();
  T* pa = a->data();
  T* pb = b->data();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) pa[i] = T(i % 7), pb[i] = T(0);
  const double copy_s = median_seconds(
      [&] {
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < n; ++i) pb[i] = pa[i];
      },
      5);
  r.copy_gbs = 2.0 * n * sizeof(T) / copy_s * 1e-9;

  BoundaryFaces bc;
  bc.fill(FaceBC{});  // Dirichlet 0 everywhere: the ghost fill a run does every step
  const StencilCoeffs<T> c = heat_coeffs<T>(g, 1.0, 0.9 * stable_dt(g, 1.0));
  int parity = 0;
  const double step_s = median_seconds(
      [&] {
        T* u = parity ? pb : pa;
        T* out = parity ? pa : pb;
        backend->stencil_with_boundary(u, out, nullptr, g, c, bc);
        parity ^= 1;
      },
      5);
  const double points = double(g.interior_size());
  r.ms_per_step = step_s * 1e3;
  r.gpoints_per_s = points / step_s * 1e-9;
  r.effective_gbs = 2.0 * points * sizeof(T) / step_s * 1e-9;
  r.pct_of_copy = 100.0 * r.effective_gbs / r.copy_gbs;
  return r;
}

}  // namespace

int run_cpu_stencil_bench(int size, int dims, const std::string& precision, bool json,
                          const std::string& why) {
  try {
    const CpuBenchResult r =
        precision == "double" ? bench_cpu<double>(size, dims) : bench_cpu<float>(size, dims);
    const int bytes = precision == "double" ? 8 : 4;
    const double roofline = r.copy_gbs / (2.0 * bytes);
    const double points = dims == 3 ? double(size) * size * size : double(size) * size;
    const std::vector<VariableBenchRow> variable =
        bench_variable(BackendKind::Cpu, size, dims, precision, r.copy_gbs);
    if (json) {
      nlohmann::json j;
      j["backend"] = "cpu";
      j["device"] = r.device;
      j["threads"] = r.threads;
      j["size"] = size;
      j["dims"] = dims;
      j["precision"] = precision;
      j["copy_gbs"] = r.copy_gbs;
      j["roofline_gpoints_per_s"] = roofline;
      j["rows"] = nlohmann::json::array();
      j["rows"].push_back({{"variant", "cpu-openmp"},
                           {"ms_per_step", r.ms_per_step},
                           {"gpoints_per_s", r.gpoints_per_s},
                           {"effective_gbs", r.effective_gbs},
                           {"pct_of_copy", r.pct_of_copy},
                           {"x_roofline", r.pct_of_copy / 100.0}});
      j["variable_rows"] = variable_rows_json(variable);
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("stencil bench (CPU backend{}): {}, {}^{} {} ({} interior points)\n",
               why.empty() ? "" : ", " + why, r.device, size, dims, precision, points);
    fmt::print(
        "timing: median of 5 repeats of about 0.2 s (ghost fill + sweep = one explicit step); "
        "CPU figures need an otherwise idle machine\n");
    fmt::print(
        "copy bandwidth (read+write, {} OpenMP threads over the grid's arrays): {:.1f} GB/s\n",
        r.threads, r.copy_gbs);
    fmt::print("single-step roofline (copy / {} B per point): {:.3f} GPt/s\n", 2 * bytes, roofline);
    fmt::print("{:<18} {:>9} {:>9} {:>9} {:>7}\n", "variant", "ms/step", "GPt/s", "GB/s", "%copy");
    fmt::print("{:<18} {:>9.3f} {:>9.4f} {:>9.2f} {:>6.1f}%\n", "cpu-openmp", r.ms_per_step,
               r.gpoints_per_s, r.effective_gbs, r.pct_of_copy);
    print_variable_rows(variable);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "heatsolve bench: {}\n", e.what());
    return 1;
  }
}

}  // namespace heatsolve
