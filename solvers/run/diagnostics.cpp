#include "solvers/run/diagnostics.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace heatsolve {

namespace {
const char* const kFaces[6] = {"x-", "x+", "y-", "y+", "z-", "z+"};

double spacing(const GridDesc& g, int a) {
  return a == 0 ? g.hx : a == 1 ? g.hy : g.hz;
}

// The interior of a padded host array, x fastest.
template <typename A>
std::vector<double> interior_of(const std::vector<A>& padded, const GridDesc& g) {
  std::vector<double> out;
  out.reserve(g.interior_size());
  for (int k = 0; k < (g.dims == 3 ? g.nz : 1); ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) out.push_back(double(padded[g.index(i, j, k)]));
  return out;
}
}  // namespace

template <typename T>
Diagnostics<T>::Diagnostics(const Config& cfg, Sweeper<T>& sweeper, DiagnosticsWriter* writer)
    : cfg_(cfg),
      sw_(sweeper),
      writer_(writer),
      transient_(cfg.problem == ProblemType::Heat),
      op_(sweeper.make_operator(0.0, false, false)) {
  const GridDesc& g = sw_.grid();
  volume_ = g.hx * g.hy * (g.dims == 3 ? g.hz : 1.0);
  // Each source term's power is value(t) A + amplitude(t) B: the sums of its shape with
  // (value 1, amplitude 0) and (0, 1) over the cells, once.
  std::vector<Shape> terms = cfg.sources;
  if (terms.empty() && cfg.source.type != ShapeType::None) terms.push_back(cfg.source);
  std::vector<double> host;
  for (const Shape& s : terms) {
    std::array<double, 2> ab{};
    for (int part = 0; part < 2; ++part) {
      Shape unit = s;
      unit.value = part == 0 ? 1.0 : 0.0;
      unit.amplitude = part == 0 ? 0.0 : 1.0;
      unit.value_table.reset();
      unit.amplitude_table.reset();
      fill_shape(host, unit, cfg, sw_.domain());
      double sum = 0;
      for (double v : interior_of(host, g)) sum += v;
      ab[part] = sw_.global_reduce(sum, ReduceOp::Sum) * volume_;
    }
    sources_.push_back(ab);
  }
  if (op_.is_variable()) scratch_ = sw_.allocate();
}

template <typename T>
double Diagnostics<T>::source_power(double t) const {
  std::vector<Shape> terms = cfg_.sources;
  if (terms.empty() && cfg_.source.type != ShapeType::None) terms.push_back(cfg_.source);
  double p = 0;
  for (std::size_t i = 0; i < terms.size(); ++i)
    p += terms[i].value_at(t) * sources_[i][0] + terms[i].amplitude_at(t) * sources_[i][1];
  return p;
}

template <typename T>
double Diagnostics<T>::inflow_and_source(double t) {
  // The faces as the scheme takes them at t (each step sets its own again); regions read the
  // source field too (it carries the heat-flux faces), a uniform material its terms' power.
  if (sw_.inputs_vary()) {
    if (op_.is_variable())
      sw_.set_inputs(t);
    else
      sw_.set_faces(t);
  }
  sw_.sync_state();
  T* u = sw_.u().data();
  sw_.fill_ghosts(u);
  const GridDesc& g = sw_.grid();
  Backend<T>& b = sw_.backend();
  if (!op_.is_variable()) {
    // Interior faces cancel: the faces' inflow is k V sum(lap_h u) with the deck's ghosts.
    const double lap =
        sw_.global_reduce(b.reduce_residual(u, nullptr, g, ReduceOp::Sum), ReduceOp::Sum);
    return cfg_.material.conductivity * volume_ * lap + source_power(t);
  }
  // sum(f - A u) V with f the source plus the heat-flux faces' flux: inflow + source power.
  CellRange all;
  all.hi = {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
  b.stencil_variable(u, scratch_->data(), sw_.source(), g, op_.residual_form().v, all);
  return sw_.global_reduce(b.reduce(scratch_->data(), g, ReduceOp::Sum), ReduceOp::Sum) * volume_;
}

template <typename T>
double Diagnostics<T>::heat_content(const std::vector<T>& interior) const {
  const GridDesc& g = sw_.grid();
  double h = 0;
  if (!sw_.variable()) {
    for (T v : interior) h += double(v);
    return h * cfg_.material.heat_capacity() * volume_;
  }
  const std::vector<T>& c = sw_.capacity();
  std::size_t n = 0;
  for (int k = 0; k < (g.dims == 3 ? g.nz : 1); ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) h += double(c[g.index(i, j, k)]) * double(interior[n++]);
  return h * volume_;
}

template <typename T>
std::vector<double> Diagnostics<T>::face_inflows(const std::vector<T>& interior, double t) const {
  const GridDesc& g = sw_.grid();
  const int ext[3] = {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
  std::vector<double> flow(6, 0.0);
  const BoundaryFaces deck = sw_.deck_faces(t);
  const Exterior exterior = exterior_resistances(deck);
  for (int f = 0; f < 2 * g.dims; ++f) {
    if (deck[f].type == BoundaryType::Exchange || deck[f].type == BoundaryType::Periodic) continue;
    const int a = f / 2;
    const double h = spacing(g, a), area = volume_ / h;
    int hi[3] = {ext[0], ext[1], ext[2]};
    hi[a] = 1;
    double sum = 0;
    for (int kk = 0; kk < hi[2]; ++kk)
      for (int jj = 0; jj < hi[1]; ++jj)
        for (int ii = 0; ii < hi[0]; ++ii) {
          int c[3] = {ii, jj, kk};
          if (f % 2 == 1) c[a] = ext[a] - 1;
          const double u = double(interior[(std::size_t(c[2]) * g.ny + c[1]) * g.nx + c[0]]);
          const std::int64_t idx = g.index(c[0], c[1], g.dims == 3 ? c[2] : 0);
          if (!sw_.variable()) {
            // The ghost the kernels fill, in double; the face's flux k (ghost - u) / h.
            const FaceBC& r = sw_.faces()[f];
            double ghost = u;
            switch (r.type) {
              case BoundaryType::Dirichlet:
                ghost = 2 * r.value - u;
                break;
              case BoundaryType::Neumann:
                ghost = u + r.value * h;
                break;
              case BoundaryType::Robin:
                ghost = r.coeff * u + r.value;
                break;
              case BoundaryType::Fixed:
                ghost = r.value;
                break;
              default:
                break;
            }
            sum += cfg_.material.conductivity * (ghost - u) / h * area;
            continue;
          }
          const ConductanceLevel& level = sw_.conductance();
          switch (deck[f].type) {
            case BoundaryType::Dirichlet:
            case BoundaryType::Convective: {
              if (std::isinf(exterior[f])) break;
              const double half = f % 2 == 0 ? level.lower(a, idx) : level.upper(a, idx);
              sum += (deck[f].value - u) / ((half + exterior[f]) * h) * volume_;
              break;
            }
            case BoundaryType::Neumann:
              sum += level.k[idx] * deck[f].value * area;
              break;
            case BoundaryType::HeatFlux:
              sum += deck[f].value * area;
              break;
            default:
              break;
          }
        }
    flow[f] = sum;
  }
  return flow;
}

template <typename T>
void Diagnostics<T>::start(const CheckpointState* restored) {
  if (!transient_) return;
  const GridDesc& g = sw_.grid();
  if (restored && std::isnan(restored->heat_integral)) {
    // A checkpoint of a run that kept no balance: it starts here.
    heat0_ = sw_.global_reduce(heat_content(sw_.interior()), ReduceOp::Sum);
    integral_ = 0;
    return;
  }
  std::vector<T> initial = sw_.initial_field();
  std::vector<T> interior;
  interior.reserve(g.interior_size());
  for (int k = 0; k < (g.dims == 3 ? g.nz : 1); ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) interior.push_back(initial[g.index(i, j, k)]);
  heat0_ = sw_.global_reduce(heat_content(interior), ReduceOp::Sum);
  integral_ = restored ? restored->heat_integral : 0.0;
}

template <typename T>
void Diagnostics<T>::before_step(double t) {
  if (cfg_.scheme != TimeScheme::ImplicitEuler) before_ = inflow_and_source(t);
}

template <typename T>
void Diagnostics<T>::after_step(double t, double t_next) {
  const double dt = t_next - t;
  switch (cfg_.scheme) {
    case TimeScheme::Explicit:
      integral_ += dt * before_;
      break;
    case TimeScheme::ImplicitEuler:
      integral_ += dt * inflow_and_source(t_next);
      break;
    case TimeScheme::CrankNicolson:
      integral_ += 0.5 * dt * (before_ + inflow_and_source(t_next));
      break;
  }
}

template <typename T>
void Diagnostics<T>::row(std::int64_t step, double time) {
  const std::vector<T> u = sw_.interior();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  for (T v : u) {
    lo = std::min(lo, double(v));
    hi = std::max(hi, double(v));
    sum += double(v);
  }
  lo = -sw_.global_reduce(-lo, ReduceOp::MaxAbs);
  hi = sw_.global_reduce(hi, ReduceOp::MaxAbs);
  const double mean = sw_.global_reduce(sum, ReduceOp::Sum) / double(sw_.global_points());
  const double heat = transient_ ? sw_.global_reduce(heat_content(u), ReduceOp::Sum) : 0.0;
  if (sw_.inputs_vary()) sw_.set_faces(time);  // sw_.faces() at the row's time
  std::vector<double> flows = face_inflows(u, time);
  double net = 0;
  for (double& f : flows) {
    f = sw_.global_reduce(f, ReduceOp::Sum);
    net += f;
  }
  const double power = source_power(time);
  const double balance = transient_ ? heat - heat0_ - integral_ : net + power;
  // Probes: the rank holding the cell gives its value.
  const Domain& d = sw_.domain();
  std::vector<double> probes;
  for (const Probe& p : cfg_.probes) {
    double v = 0;
    bool mine = true;
    int local[3];
    for (int a = 0; a < 3; ++a) {
      local[a] = p.cell[a] - d.block.offset[a];
      mine = mine && local[a] >= 0 && local[a] < d.block.count[a];
    }
    if (mine)
      v = double(u[(std::size_t(local[2]) * d.local.ny + local[1]) * d.local.nx + local[0]]);
    probes.push_back(sw_.global_reduce(v, ReduceOp::Sum));
  }
  if (!writer_) return;
  std::vector<double> values;
  const std::vector<std::string>& columns = writer_->columns();
  std::size_t probe = 0;
  for (std::size_t c = 1; c < columns.size(); ++c) {
    const std::string& name = columns[c];
    if (name == "time")
      values.push_back(time);
    else if (name == "min")
      values.push_back(lo);
    else if (name == "max")
      values.push_back(hi);
    else if (name == "mean")
      values.push_back(mean);
    else if (name == "heat")
      values.push_back(heat);
    else if (name == "source_power")
      values.push_back(power);
    else if (name == "balance")
      values.push_back(balance);
    else if (name.rfind("probe_", 0) == 0)
      values.push_back(probes.at(probe++));
    else if (name.rfind("flow_", 0) == 0) {
      int f = 0;
      while (f < 6 && name != std::string("flow_") + kFaces[f]) ++f;
      if (f == 6) throw std::logic_error("diagnostics: unknown column " + name);
      values.push_back(flows[f]);
    } else {
      throw std::logic_error("diagnostics: unknown column " + name);
    }
  }
  writer_->write(step, values);
}

template class Diagnostics<float>;
template class Diagnostics<double>;

}  // namespace heatsolve
