// `heatsolve bench --multigrid`: time to solution of 3D Poisson by multigrid, against the
// best single-step sweep of the same grid and Jacobi, all measured in this run.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "app/bench/bench_kernels.hpp"
#include "io/deck.hpp"
#include "solvers/solver.hpp"

namespace heatsolve {

namespace {

Config bench_deck(int n, const std::string& precision, const std::string& backend,
                  const std::string& method, double tolerance, std::int64_t max_iterations) {
  const std::string text = fmt::format(
      "name: bench_multigrid\n"
      "problem: {{type: poisson, dimensions: 3}}\n"
      "grid: {{cells: [{0}, {0}, {0}], length: [1.0, 1.0, 1.0]}}\n"
      "source: {{type: gaussian, amplitude: 100.0, width: 0.1, center: [0.5, 0.5, 0.5]}}\n"
      "boundary: {{all: {{type: dirichlet, value: 0.0}}}}\n"
      "solver: {{method: {1}, tolerance: {2:g}, max_iterations: {3}, check_every: {3}}}\n"
      "execution: {{backend: {4}, precision: {5}}}\n"
      "output: {{formats: []}}\n",
      n, method, tolerance, max_iterations, backend, precision);
  return parse_deck(text, "<bench --multigrid>");
}

// Seconds of one Jacobi sweep (ghost fill + sweep, the backend's best variant for the grid),
// the median of 5 timings of 10 sweeps.
template <typename T>
double sweep_seconds(const Config& cfg, bool with_source = false) {
  auto backend = make_backend<T>(cfg.backend, backend_options_for(cfg));
  const GridDesc g = cfg.grid();
  backend->prepare(g);
  auto a = backend->allocate(g.padded_size());
  auto b = backend->allocate(g.padded_size());
  auto src = backend->allocate(with_source ? g.padded_size() : 1);
  const T* f = with_source ? src->data() : nullptr;
  const StencilCoeffs<T> c = jacobi_coeffs<T>(g);
  std::vector<double> t;
  for (int rep = 0; rep < 6; ++rep) {
    backend->synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < 10; ++s)
      backend->stencil_with_boundary(s % 2 ? b->data() : a->data(), s % 2 ? a->data() : b->data(),
                                     f, g, c, cfg.boundary);
    backend->synchronize();
    if (rep > 0)
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                  10);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <typename T>
nlohmann::json bench_one(int n, const std::string& precision, const std::string& backend) {
  const double tol = precision == "float" ? 1e-6 : 1e-10;
  nlohmann::json row;
  row["precision"] = precision;
  row["cells"] = n;
  row["tolerance"] = tol;
  const double sweep = sweep_seconds<T>(bench_deck(n, precision, backend, "jacobi", tol, 10));
  row["sweep_seconds"] = sweep;
  {
    // What a source term (Jacobi on Poisson, the multigrid smoother) costs each variant.
    Config cfg = bench_deck(n, precision, backend, "jacobi", tol, 10);
    nlohmann::json v = nlohmann::json::object();
    if (cfg.backend != BackendKind::Cpu && cuda_device_available())
      for (const StencilVariantRow& variant : kStencilVariants) {
        const std::string name = variant.name;
        cfg.kernel = name;
        try {
          v[name] = {sweep_seconds<T>(cfg, false), sweep_seconds<T>(cfg, true)};
        } catch (const std::exception&) {
        }
      }
    row["sweep_seconds_by_variant"] = v;
  }
  for (const char* method : {"multigrid", "mg-cg"}) {
    const Config cfg = bench_deck(n, precision, backend, method, tol, 40);
    run_serial<T>(cfg, nullptr);  // warm: kernel loading and tuning of every level
    const RunResult r = run_serial<T>(cfg, nullptr);
    nlohmann::json m;
    m["converged"] = r.converged;
    m["final_residual"] = r.final_residual;
    m["iterations"] = r.steps;
    m["seconds"] = r.wall_seconds;
    m["convergence_factor"] = r.multigrid.value("mean_convergence_factor", 0.0);
    m["setup_seconds"] = r.multigrid.value("setup_seconds", 0.0);
    m["seconds_per_iteration"] = (r.wall_seconds - m["setup_seconds"].get<double>()) /
                                 double(std::max<std::int64_t>(1, r.steps));
    m["sweeps_per_iteration"] = m["seconds_per_iteration"].get<double>() / sweep;
    m["backend"] = r.backend_description;
    row[method] = m;
  }
  // Jacobi: a timed prefix of sweeps; the sweeps to the tolerance from the spectral radius of
  // the Jacobi iteration on this grid, 1 - lambda_min / D (extrapolated, stated as such).
  const std::int64_t prefix = n >= 256 ? 200 : 1000;
  const RunResult j =
      run_serial<T>(bench_deck(n, precision, backend, "jacobi", 1e-30, prefix), nullptr);
  const double h = 1.0 / n;
  const double lambda_min = 3 * 4 / (h * h) * std::pow(std::sin(M_PI * h / 2), 2);
  const double rho = 1 - lambda_min / (3 * 2 / (h * h));
  const double sweeps = std::log(tol) / std::log(rho);
  const double per_sweep = j.wall_seconds / double(prefix);
  row["jacobi"] = {{"prefix_sweeps", prefix},
                   {"seconds_per_sweep", per_sweep},
                   {"estimated_sweeps", sweeps},
                   {"estimated_seconds", sweeps * per_sweep}};
  row["speedup_over_jacobi"] = sweeps * per_sweep / row["multigrid"]["seconds"].get<double>();
  return row;
}

}  // namespace

int run_multigrid_bench(int n, const std::string& precision, const std::string& backend,
                        bool json) {
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string p : {std::string("float"), std::string("double")}) {
    if (precision != "both" && precision != p) continue;
    rows.push_back(p == "float" ? bench_one<float>(n, p, backend)
                                : bench_one<double>(n, p, backend));
  }
  if (json) {
    fmt::print("{}\n", rows.dump(2));
    return 0;
  }
  fmt::print(
      "3D Poisson {}^3, Dirichlet walls, Gaussian source; times (set-up included) to a relative "
      "residual of "
      "1e-6 (float) / 1e-10 (double), hierarchy set-up included; at most 40 iterations (a "
      "float solve stops falling at its rounding floor, ~eps * 6 n^2 / (||f||/||u||))\n",
      n);
  fmt::print("{:<7} {:<10} {:>6} {:>9} {:>7} {:>8} {:>10} {:>12} {:>10} {:>14} {:>10}\n", "prec",
             "method", "iters", "residual", "factor", "setup s", "time s", "per iter ms",
             "sweeps/it", "Jacobi est s", "speed-up");
  for (const auto& r : rows) {
    const double jt = r["jacobi"]["estimated_seconds"];
    for (const char* m : {"multigrid", "mg-cg"}) {
      const auto& x = r[m];
      fmt::print(
          "{:<7} {:<10} {:>6} {:>9.2e} {:>7.3f} {:>8.4f} {:>10.4f} {:>12.3f} {:>10.2f} "
          "{:>14.1f} {:>9.0f}x\n",
          r["precision"].get<std::string>(), m, x["iterations"].get<long>(),
          x["final_residual"].get<double>(), x["convergence_factor"].get<double>(),
          x["setup_seconds"].get<double>(), x["seconds"].get<double>(),
          1e3 * x["seconds_per_iteration"].get<double>(), x["sweeps_per_iteration"].get<double>(),
          jt, jt / x["seconds"].get<double>());
    }
    for (const auto& [name, t] : r["sweep_seconds_by_variant"].items())
      fmt::print("{:<7} sweep {:<18} {:.3f} ms, with a source {:.3f} ms\n",
                 r["precision"].get<std::string>(), name, 1e3 * t[0].get<double>(),
                 1e3 * t[1].get<double>());
    fmt::print(
        "{:<7} one sweep {:.3f} ms; Jacobi: {:.0f} sweeps to the tolerance (from the "
        "spectral radius), {:.3f} ms each over a timed prefix of {}\n",
        r["precision"].get<std::string>(), 1e3 * r["sweep_seconds"].get<double>(),
        r["jacobi"]["estimated_sweeps"].get<double>(),
        1e3 * r["jacobi"]["seconds_per_sweep"].get<double>(),
        r["jacobi"]["prefix_sweeps"].get<long>());
  }
  return 0;
}

}  // namespace heatsolve
