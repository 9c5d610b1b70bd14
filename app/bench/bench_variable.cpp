#include "app/bench/bench_variable.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>

#include "core/stopwatch.hpp"
#include "kernels/backend.hpp"

namespace heatsolve {

namespace {

using Clock = std::chrono::steady_clock;

template <typename T>
std::vector<VariableBenchRow> run(BackendKind kind, int size, int dims, double copy_gbs) {
  GridDesc g;
  g.dims = dims;
  g.nx = g.ny = size;
  g.nz = dims == 3 ? size : 1;
  g.hx = g.hy = g.hz = 1.0 / size;
  const std::unique_ptr<Backend<T>> b = make_backend<T>(kind, BackendOptions{});
  const std::size_t n = g.padded_size();
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> d(0.5, 2.0);
  std::vector<T> host(n);
  const auto field = [&](double scale) {
    for (T& x : host) x = static_cast<T>(scale * d(rng));
    std::unique_ptr<Array<T>> a = b->allocate(n);
    a->copy_from_host(host.data());
    return a;
  };
  const double w = double(size) * size;  // K/h^2 of a unit conductivity
  auto u = field(1.0), out = field(1.0), f = field(1.0), wx = field(w), wy = field(w),
       wz = dims == 3 ? field(w) : nullptr, scale = field(1.0);
  BoundaryFaces faces{};
  for (FaceBC& face : faces) face = FaceBC{BoundaryType::Fixed, 0.0};
  CellRange all;
  all.hi = {g.nx, g.ny, g.nz};
  const auto coeffs = [&](VariableForm form) {
    VariableCoeffs<T> c;
    c.wx = wx->data();
    c.wy = wy->data();
    c.wz = wz ? wz->data() : nullptr;
    c.form = form;
    c.dt = static_cast<T>(0.1 / (6 * w));
    c.omega = T(0.8);
    if (form == VariableForm::Step) c.scale = scale->data();
    return c;
  };
  struct Case {
    const char* name;
    VariableForm form;
    bool source;
  };
  const Case cases[] = {{"explicit step", VariableForm::Step, false},
                        {"jacobi sweep", VariableForm::Jacobi, true}};
  std::vector<VariableBenchRow> rows;
  for (const Case& c : cases) {
    const VariableCoeffs<T> vc = coeffs(c.form);
    const T* src = c.source ? f->data() : nullptr;
    int parity = 0;
    const auto step = [&] {
      T* x = parity ? out->data() : u->data();
      T* y = parity ? u->data() : out->data();
      b->apply_boundary(x, g, faces);
      b->stencil_variable(x, y, src, g, vc, all);
      parity ^= 1;
    };
    // Steps per repeat for about 0.2 s, then the median of 5 repeats.
    step();
    b->synchronize();
    const auto t0 = Clock::now();
    step();
    b->synchronize();
    const double first = seconds_since(t0);
    const int per = std::max(1, int(0.2 / std::max(first, 1e-6)));
    std::vector<double> t;
    for (int r = 0; r < 5; ++r) {
      const auto s = Clock::now();
      for (int i = 0; i < per; ++i) step();
      b->synchronize();
      t.push_back(seconds_since(s) / per);
    }
    std::sort(t.begin(), t.end());
    const double sec = t[t.size() / 2];
    VariableBenchRow row;
    row.form = c.name;
    // u, the face arrays, 1/(rho cp) or the source, read; the result written.
    row.values_per_point = 1 + dims + 1 + 1;
    const double points = double(g.interior_size());
    row.ms_per_step = sec * 1e3;
    row.gpoints_per_s = points / sec * 1e-9;
    row.effective_gbs = row.gpoints_per_s * row.values_per_point * sizeof(T);
    row.roofline_gpoints_per_s = copy_gbs / (row.values_per_point * double(sizeof(T)));
    row.x_roofline = row.gpoints_per_s / row.roofline_gpoints_per_s;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

std::vector<VariableBenchRow> bench_variable(BackendKind backend, int size, int dims,
                                             const std::string& precision, double copy_gbs) {
  return precision == "double" ? run<double>(backend, size, dims, copy_gbs)
                               : run<float>(backend, size, dims, copy_gbs);
}

void print_variable_rows(const std::vector<VariableBenchRow>& rows) {
  fmt::print(
      "variable coefficients (materials by region; ghost fill + sweep; roofline: copy / bytes "
      "per point, every array once):\n");
  fmt::print("{:<18} {:>7} {:>9} {:>9} {:>9} {:>11} {:>7}\n", "form", "values", "ms/step", "GPt/s",
             "GB/s", "roof GPt/s", "xroof");
  for (const VariableBenchRow& r : rows)
    fmt::print("{:<18} {:>7} {:>9.4f} {:>9.2f} {:>9.0f} {:>11.2f} {:>6.2f}x\n", r.form,
               r.values_per_point, r.ms_per_step, r.gpoints_per_s, r.effective_gbs,
               r.roofline_gpoints_per_s, r.x_roofline);
}

nlohmann::json variable_rows_json(const std::vector<VariableBenchRow>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const VariableBenchRow& r : rows)
    j.push_back({{"form", r.form},
                 {"values_per_point", r.values_per_point},
                 {"ms_per_step", r.ms_per_step},
                 {"gpoints_per_s", r.gpoints_per_s},
                 {"effective_gbs", r.effective_gbs},
                 {"roofline_gpoints_per_s", r.roofline_gpoints_per_s},
                 {"x_roofline", r.x_roofline}});
  return j;
}

}  // namespace heatsolve
