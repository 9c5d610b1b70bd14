// `heatsolve bench --multigrid`: time to solution of 3D Poisson by multigrid, against the
// best single-step sweep of the same grid and Jacobi, all measured in this run.
#include "app/bench/bench_multigrid.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "app/bench/bench_kernels.hpp"
#include "core/stopwatch.hpp"
#include "io/deck.hpp"
#include "solvers/solver.hpp"

namespace heatsolve {

Config bench_deck(int n, const std::string& precision, const std::string& backend,
                  const std::string& method, double tolerance, std::int64_t max_iterations,
                  const std::string& cycle, bool manufactured, bool fused, bool replay,
                  const std::vector<std::string>& overrides) {
  const std::string text = fmt::format(
      "name: bench_multigrid\n"
      "problem: {{type: poisson, dimensions: 3}}\n"
      "grid: {{cells: [{0}, {0}, {0}], length: [1.0, 1.0, 1.0]}}\n"
      "source: {6}\n"
      "boundary: {{all: {{type: dirichlet, value: 0.0}}}}\n"
      "solver: {{method: {1}, tolerance: {2:g}, max_iterations: {3}, check_every: {3}, "
      "multigrid: {{cycle: {7}, fused: {8}, replay: {9}}}}}\n"
      "execution: {{backend: {4}, precision: {5}}}\n"
      "output: {{formats: []}}\n",
      n, method, tolerance, max_iterations, backend, precision,
      manufactured ? "{type: sine, amplitude: 29.608813203268074}"
                   : "{type: gaussian, amplitude: 100.0, width: 0.1, center: [0.5, 0.5, 0.5]}",
      cycle, fused, replay);
  return parse_deck(text, "<bench --multigrid>", overrides);
}

namespace {

// RMS and max error of u (interior, x fastest) against prod sin(pi x_d) on the unit cube.
std::array<double, 2> manufactured_error(const std::vector<double>& u, int n) {
  std::vector<double> s(n);
  for (int i = 0; i < n; ++i) s[i] = std::sin(M_PI * (i + 0.5) / n);
  double sum = 0, worst = 0;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j) {
      const double* row = u.data() + (std::size_t(k) * n + j) * n;
      const double sjk = s[j] * s[k];
      for (int i = 0; i < n; ++i) {
        const double e = row[i] - s[i] * sjk;
        sum += e * e;
        worst = std::max(worst, std::abs(e));
      }
    }
  return {std::sqrt(sum / (double(n) * n * n)), worst};
}

// One timed solve (after a warm run: kernel loading and tuning of every level).
template <typename T>
nlohmann::json timed_solve(const Config& cfg, double sweep, std::vector<T>* field = nullptr) {
  run_serial<T>(cfg, nullptr);
  const RunResult r = run_serial<T>(cfg, field);
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
  m["multigrid_seconds"] = r.multigrid.value("seconds", nlohmann::json::object());
  m["backend"] = r.backend_description;
  return m;
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
    if (rep > 0) t.push_back(seconds_since(t0) / 10);
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
  // Rows: name -> (method, cycle, precision). Double also runs mixed precision (a float
  // hierarchy under the double solve) and full multigrid; sweeps are the double sweep's.
  // "unfused": one smoothing sweep at a time and the residual stored before its restriction
  // (solver.multigrid.fused: false), the same bits as the fused row above it; "unreplayed":
  // the small levels launched kernel by kernel (solver.multigrid.replay: false), same bits.
  struct Variant {
    const char* name;
    const char* method;
    const char* cycle;
    bool mixed;
    bool fused = true;
    bool replay = true;
  };
  std::vector<Variant> variants{{"multigrid", "multigrid", "v", false},
                                {"multigrid unfused", "multigrid", "v", false, false},
                                {"multigrid unreplayed", "multigrid", "v", false, true, false},
                                {"mg-cg", "mg-cg", "v", false}};
  if (precision == "double")
    for (const Variant& v :
         {Variant{"multigrid mixed", "multigrid", "v", true},
          Variant{"mg-cg mixed", "mg-cg", "v", true}, Variant{"fmg", "multigrid", "fmg", false},
          Variant{"fmg mixed", "multigrid", "fmg", true},
          Variant{"fmg mg-cg mixed", "mg-cg", "fmg", true}})
      variants.push_back(v);
  nlohmann::json order = nlohmann::json::array();
  for (const Variant& v : variants) {
    const Config cfg = bench_deck(n, v.mixed ? "mixed" : precision, backend, v.method, tol, 40,
                                  v.cycle, false, v.fused, v.replay);
    row[v.name] = timed_solve<T>(cfg, sweep);
    order.push_back(v.name);
  }
  row["rows"] = order;
  // Time to the discretisation error (double): one FMG pass (max_iterations: 1) on the
  // manufactured problem, its error against the exact solution next to that of a solve
  // converged to 1e-10.
  if (precision == "double") {
    std::vector<T> u;
    nlohmann::json d;
    const auto error_of = [&](nlohmann::json& m) {
      const std::vector<double> ud(u.begin(), u.end());
      const std::array<double, 2> e = manufactured_error(ud, n);
      m["error_rms"] = e[0];
      m["error_max"] = e[1];
    };
    nlohmann::json conv = timed_solve<T>(
        bench_deck(n, "double", backend, "multigrid", 1e-10, 40, "v", true), sweep, &u);
    error_of(conv);
    d["converged"] = conv;
    for (const bool mixed : {false, true}) {
      nlohmann::json one = timed_solve<T>(
          bench_deck(n, mixed ? "mixed" : "double", backend, "multigrid", 1e-10, 1, "fmg", true),
          sweep, &u);
      error_of(one);
      one["error_ratio"] = one["error_rms"].get<double>() / conv["error_rms"].get<double>();
      d[mixed ? "fmg_pass_mixed" : "fmg_pass"] = one;
    }
    row["discretisation"] = d;
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
      "float solve stops falling at its rounding floor, ~eps * 6 n^2 / (||f||/||u||)). Double "
      "also runs mixed precision (double fields, the correction equation in float) and full "
      "multigrid (fmg: one FMG pass, then V-cycles; the pass counts as an iteration); "
      "sweeps/it in sweeps of the row's field precision (mixed: double)\n",
      n);
  fmt::print("{:<7} {:<20} {:>6} {:>9} {:>7} {:>8} {:>10} {:>12} {:>10} {:>14} {:>10}\n", "prec",
             "method", "iters", "residual", "factor", "setup s", "time s", "per iter ms",
             "sweeps/it", "Jacobi est s", "speed-up");
  for (const auto& r : rows) {
    const double jt = r["jacobi"]["estimated_seconds"];
    for (const auto& name : r["rows"]) {
      const std::string m = name.get<std::string>();
      const auto& x = r[m];
      fmt::print(
          "{:<7} {:<20} {:>6} {:>9.2e} {:>7.3f} {:>8.4f} {:>10.4f} {:>12.3f} {:>10.2f} "
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
    if (!r.contains("discretisation")) continue;
    const auto& d = r["discretisation"];
    fmt::print(
        "time to the discretisation error, -lap u = 3 pi^2 prod sin(pi x_d) on {0}^3 (set-up "
        "included; RMS error against the exact solution):\n"
        "{1:<24} {2:>6} {3:>10} {4:>10} {5:>11} {6:>11} {7:>8}\n",
        n, "", "iters", "time s", "setup s", "RMS error", "max error", "x conv.");
    for (const char* k : {"converged", "fmg_pass", "fmg_pass_mixed"}) {
      const auto& x = d[k];
      const char* label = std::string(k) == "converged"  ? "V-cycles to 1e-10 (double)"
                          : std::string(k) == "fmg_pass" ? "one FMG pass (double)"
                                                         : "one FMG pass (mixed)";
      fmt::print("{:<26} {:>4} {:>10.4f} {:>10.4f} {:>11.3e} {:>11.3e} {:>8.3f}\n", label,
                 x["iterations"].get<long>(), x["seconds"].get<double>(),
                 x["setup_seconds"].get<double>(), x["error_rms"].get<double>(),
                 x["error_max"].get<double>(), x.value("error_ratio", 1.0));
    }
  }
  return 0;
}

}  // namespace heatsolve
