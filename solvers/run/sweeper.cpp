#include "solvers/run/sweeper.hpp"

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "core/stopwatch.hpp"
#include "io/initial_field.hpp"
#include "solvers/problem/materials.hpp"
#include "solvers/run/checkpoint_fields.hpp"

namespace heatsolve {

namespace {
using Clock = std::chrono::steady_clock;
// time_block: auto under MPI: the depth tried where the backend fuses nothing (k single
// sweeps per exchange), and the passes timed against as many single steps.
constexpr int kUnfusedTrialDepth = 4;
constexpr int kTrialPasses = 3;
}  // namespace

template <typename T>
Sweeper<T>::Sweeper(const Config& cfg, RunContext& ctx)
    : cfg_(cfg), ctx_(ctx), g_(ctx.domain.local) {
  if constexpr (std::is_same_v<T, float>)
    exchanger_ = ctx.exchanger_f;
  else
    exchanger_ = ctx.exchanger_d;
  const Materials& m = cfg.material;
  const bool heat = cfg.problem == ProblemType::Heat;
  terms_ = source_terms(cfg);
  for (const Shape& term : terms_) source_varies_ = source_varies_ || (heat && term.varies());
  faces_vary_ = heat && cfg.boundary_varies();
  BackendOptions options = ctx.backend_options;
  options.source = !terms_.empty();
  backend_ = make_backend<T>(cfg.backend, options);

  // Multigrid smooths distributed levels in deep-halo passes inside the fields' margins.
  margins_ = stream_margins(ctx.domain, cfg.multigrid.margin_depth());
  const std::size_t n = g_.padded_size();
  u_ = allocate();
  v_ = allocate();
  std::vector<T> host = initial_field();
  u_->copy_from_host(host.data());
  v_->copy_from_host(host.data());  // ghosts of both buffers start defined
  for (int f = 0; f < 2 * cfg.dimensions; ++f) anchored_ = anchored_ || anchors(cfg.boundary[f]);
  if (m.uniform()) {
    faces_ = lower_uniform_faces(ctx.domain.faces, g_, m.conductivity);
    // Physical units: heat's source is q / (rho cp) for dT/dt, Poisson's f / k for -Lap u.
    if (m.physical) source_factor_ = heat ? 1.0 / m.heat_capacity() : 1.0 / m.conductivity;
    separable_ = terms_.size() == 1;
    if (separable_) {
      // Stored from its separable form, which the backend may generate in its sweeps instead.
      f_ = allocate();
      form_ = deck_form(ctx.domain);
      fill_separable(host, form_, g_);
      f_->copy_from_host(host.data());
      backend_->describe_source(f_->data(), g_, &form_);
      // Poisson's multigrid smooths f_ itself on the extended grid; a heat step's solves take
      // a right side of their own (and the explicit deep halo has deep_f_), where describing
      // the view would only add a refill of it to each change of a varying source.
      if (!heat && margins_.any()) {
        const DeepHaloGeometry geo = deep_halo_geometry(ctx.domain, cfg.multigrid.margin_depth());
        const SeparableSource<T> form = deck_form(geo.extended_domain);
        backend_->describe_source(f_->data() - margins_.before, geo.extended, &form);
        extended_g_ = geo.extended;
      }
    } else if (!terms_.empty()) {
      f_ = allocate();
      fill_source(0, 0, 0);
    }
  } else {
    VariableProblem<T> vp = variable_problem<T>(cfg, ctx.domain);
    faces_ = vp.faces;
    const auto upload = [&](const std::vector<T>& h) {
      std::shared_ptr<Array<T>> a = backend_->allocate(h.size());
      a->copy_from_host(h.data());
      return a;
    };
    wx_ = upload(vp.wx);
    wy_ = upload(vp.wy);
    if (g_.dims == 3) wz_ = upload(vp.wz);
    capacity_ = std::move(vp.capacity);
    conductance_ = vp.conductance;
    exterior_ = vp.exterior;
    // The source in W/m^3 plus the heat-flux faces' flux per volume, as the variable
    // kernels read it. A flux that changes with time is f's to follow.
    source_varies_ = source_refilled_on_host(cfg);
    bool flux = source_varies_;
    for (double v : vp.flux_source) flux = flux || v != 0.0;
    if (!terms_.empty() || flux) {
      f_ = allocate();
      fill_source(0, 0, 0);
    }
  }
  // After the source is described: "auto" then times the sweeps the run will take.
  kernel_ = variable() ? "variable-coefficient" : backend_->prepare(g_);
  for (const FaceBC& face : faces_)
    overlap_ = overlap_ || (cfg.overlap && exchanger_ && face.type == BoundaryType::Exchange);
  // With overlap the physical ghosts are filled before the exchange starts, so only the
  // layers next to Exchange faces wait for it: on a z-split GPU run the core is a z slab
  // that the CUDA backend sweeps while the halos travel.
  core_ = exchange_core_range(g_, faces_);
  shell_ = shell_ranges(g_, core_);
  global_points_ = static_cast<std::int64_t>(ctx.domain.global.interior_size());
}

template <typename T>
HelmholtzOperator<T> Sweeper<T>::make_operator(double sigma, bool explicit_step, bool exchange) {
  HelmholtzOperator<T> op = make_operator_no_overlap(sigma, explicit_step, exchange);
  if (!exchange || !overlap_) return op;
  // execution.overlap: the operator's sweeps compute their core while the input's halos
  // travel (the exchange completes within the sweep; an exchange sweep() left in flight is
  // settled first).
  SplitExchange<T> split;
  split.begin = [this](T* x) {
    settle();
    exchanger_->begin(*backend_, x);
  };
  split.send = [this] { exchanger_->send(*backend_); };
  split.finish = [this](T* x) { exchanger_->finish(*backend_, x); };
  return op.with_split_exchange(std::move(split));
}

template <typename T>
HelmholtzOperator<T> Sweeper<T>::make_operator_no_overlap(double sigma, bool explicit_step,
                                                          bool exchange) {
  std::function<void(T*)> hook = exchange ? exchange_hook() : std::function<void(T*)>{};
  if (!variable())
    return HelmholtzOperator<T>(space(), ctx_.domain.faces, sigma,
                                explicit_step ? cfg_.diffusivity : 1.0, std::move(hook),
                                cfg_.material.conductivity);
  OperatorArrays<T> a;
  a.wx = wx_;
  a.wy = wy_;
  a.wz = wz_;
  a.conductance = conductance_;
  a.exterior = exterior_;
  const auto per_cell = [&](auto value) {
    std::vector<T> h(capacity_.size());
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<T>(value(double(capacity_[i])));
    std::shared_ptr<Array<T>> d = backend_->allocate(h.size());
    d->copy_from_host(h.data());
    return d;
  };
  if (sigma != 0) a.mass = per_cell([sigma](double c) { return sigma * c; });
  if (explicit_step) a.scale = per_cell([](double c) { return 1.0 / c; });
  return HelmholtzOperator<T>::variable(space(), faces_, std::move(a), anchored_, std::move(hook));
}

template <typename T>
Sweeper<T>::~Sweeper() = default;

template <typename T>
std::vector<T> Sweeper<T>::initial_field() const {
  std::vector<T> host;
  if (cfg_.initial.type == ShapeType::File) {
    const Domain& d = ctx_.domain;
    const std::vector<double> values = read_initial_field(cfg_, d.local, d.block.offset);
    host.resize(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) host[i] = static_cast<T>(values[i]);
    return host;
  }
  fill_shape(host, cfg_.initial, cfg_, ctx_.domain);
  return host;
}

namespace {
// (1 - w) a + w b, exactly a at w = 0 and b at w = 1.
double mix(double a, double b, double w) {
  if (w == 0.0) return a;
  if (w == 1.0) return b;
  return (1.0 - w) * a + w * b;
}
}  // namespace

template <typename T>
Shape Sweeper<T>::term_at(const Shape& term, double t0, double t1, double w) const {
  Shape s = term;
  s.value = mix(term.value_at(t0), term.value_at(t1), w) * source_factor_;
  s.amplitude = mix(term.amplitude_at(t0), term.amplitude_at(t1), w) * source_factor_;
  return s;
}

template <typename T>
BoundaryFaces Sweeper<T>::deck_faces_at(double t0, double t1, double w) const {
  BoundaryFaces faces = ctx_.domain.faces;
  for (int f = 0; f < 2 * g_.dims; ++f) {
    const std::optional<TimeTable>& table = cfg_.boundary_tables[std::size_t(f)];
    // Exchange faces (a neighbour rank's) keep their rule.
    if (!table || faces[f].type != cfg_.boundary[std::size_t(f)].type) continue;
    faces[f].value = mix(table->at(t0), table->at(t1), w);
  }
  return faces;
}

template <typename T>
BoundaryFaces Sweeper<T>::kernel_faces(const BoundaryFaces& deck) const {
  if (variable()) return variable_face_rules(deck, g_.dims);
  return lower_uniform_faces(deck, g_, cfg_.material.conductivity);
}

template <typename T>
BoundaryFaces Sweeper<T>::operator_faces(double t) const {
  const BoundaryFaces deck = deck_faces_at(t, t, 0.0);
  return variable() ? kernel_faces(deck) : deck;
}

template <typename T>
void Sweeper<T>::set_faces(double t) {
  if (faces_vary_ && t != faces_time_) {
    faces_ = kernel_faces(deck_faces_at(t, t, 0.0));
    faces_time_ = t;
  }
}

template <typename T>
void Sweeper<T>::set_inputs(double faces_time, double t0, double t1, double w) {
  set_faces(faces_time);
  const std::array<double, 3> at{t0, t1, w};
  if (source_varies_ && f_ && at != source_at_) {
    fill_source(t0, t1, w);
    source_at_ = at;
  }
}

template <typename T>
void Sweeper<T>::fill_source(double t0, double t1, double w) {
  if (separable_) {
    const std::array<double, 2> strength = separable_strength(term_at(terms_[0], t0, t1, w));
    // The extended view's form would go stale (described for Poisson, whose source is fixed).
    if (extended_g_) throw std::logic_error("Sweeper: a varying source with its extended view");
    form_.offset = static_cast<T>(strength[0]);
    form_.scale = static_cast<T>(strength[1]);
    if (backend_->rescale_source(f_->data(), g_, form_.offset, form_.scale)) return;
    std::vector<T> host;
    fill_separable(host, form_, g_);
    backend_->synchronize();  // sweeps queued before may still read f
    f_->copy_from_host(host.data());
    backend_->describe_source(f_->data(), g_, &form_);
    return;
  }
  const std::size_t n = g_.padded_size();
  // The constant terms once (kept while some term varies), then the varying ones, in deck order.
  std::vector<double> q, term;
  bool keep = false;  // some term is constant while others vary
  for (const Shape& s : terms_) keep = keep || (source_varies_ && !s.varies());
  keep = keep && fixed_terms_.empty();
  if (!fixed_terms_.empty()) {
    q = fixed_terms_;
  } else {
    q.assign(n, 0.0);
    for (const Shape& s : terms_) {
      if (source_varies_ && s.varies()) continue;
      fill_shape(term, term_at(s, t0, t1, w), cfg_, ctx_.domain);
      for (std::size_t i = 0; i < n; ++i) q[i] += term[i];
    }
    if (keep) fixed_terms_ = q;
  }
  if (source_varies_)
    for (const Shape& s : terms_) {
      if (!s.varies()) continue;
      fill_shape(term, term_at(s, t0, t1, w), cfg_, ctx_.domain);
      for (std::size_t i = 0; i < n; ++i) q[i] += term[i];
    }
  std::vector<T> host(n);
  if (variable()) {
    // The neumann and heat_flux faces' flux per volume (W/m^3), their values mixed as the terms'.
    std::vector<double> flux(n, 0.0);
    add_face_flux(flux, g_, deck_faces_at(t0, t1, w), conductance_->k);
    for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<T>(q[i] + flux[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<T>(q[i]);
  }
  backend_->synchronize();  // sweeps queued before may still read f
  f_->copy_from_host(host.data());
}

template <typename T>
T* Sweeper<T>::source_or_zero() {
  if (!f_) {
    f_ = allocate();
    const std::vector<T> zero(g_.padded_size(), T(0));
    f_->copy_from_host(zero.data());
  }
  return f_->data();
}

template <typename T>
void Sweeper<T>::set_source(const std::vector<T>& padded) {
  T* f = source_or_zero();
  backend_->describe_source(f, g_, nullptr);  // no longer the deck's separable form
  if (extended_g_) {
    backend_->describe_source(f - margins_.before, *extended_g_, nullptr);
    extended_g_.reset();
  }
  separable_ = false;
  source_varies_ = false;  // nor the deck's source over time
  f_->copy_from_host(padded.data());
}

template <typename T>
SeparableSource<T> Sweeper<T>::deck_form(const Domain& domain) const {
  return separable_shape<T>(term_at(terms_[0], 0, 0, 0), cfg_, domain);
}

template <typename T>
void Sweeper<T>::shift_source(double shift) {
  std::vector<T> host(g_.padded_size());
  source_or_zero();
  f_->copy_to_host(host.data());
  for (T& v : host) v = static_cast<T>(double(v) - shift);
  set_source(host);
}

template <typename T>
void Sweeper<T>::remove_mean(Array<T>& x) {
  sync_state();
  settle();
  const double sum = global_reduce(backend_->reduce(x.data(), g_, ReduceOp::Sum), ReduceOp::Sum);
  const double mean = sum / double(global_points_);
  std::vector<T> host(x.size());
  x.copy_to_host(host.data());
  for (T& v : host) v = static_cast<T>(double(v) - mean);
  x.copy_from_host(host.data());
}

template <typename T>
std::vector<T> Sweeper<T>::interior() {
  sync_state();
  std::vector<T> padded(g_.padded_size());
  u_->copy_to_host(padded.data());
  std::vector<T> out;
  out.reserve(g_.interior_size());
  const int nz = g_.dims == 3 ? g_.nz : 1;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g_.ny; ++j) {
      const T* row = padded.data() + g_.index(0, j, g_.dims == 3 ? k : 0);
      out.insert(out.end(), row, row + g_.nx);
    }
  return out;
}

template <typename T>
void Sweeper<T>::load_interior(const std::vector<unsigned char>& bytes) {
  std::vector<T> padded(g_.padded_size());
  u_->copy_to_host(padded.data());  // keeps the ghost cells as they are
  insert_interior(padded.data(), g_, bytes);
  u_->copy_from_host(padded.data());
}

template <typename T>
double Sweeper<T>::global_reduce(double local, ReduceOp op) const {
  const Reducer& r = ctx_.reducer ? *ctx_.reducer : serial_reducer_;
  return r.combine(local, op);
}

template <typename T>
void Sweeper<T>::global_sum_each(std::vector<double>& values) const {
  (ctx_.reducer ? *ctx_.reducer : serial_reducer_).sum_each(values);
}

template <typename T>
FieldSpace<T> Sweeper<T>::space() {
  if (ctx_.domain.size <= 1) return FieldSpace<T>(*backend_, g_);
  return FieldSpace<T>(
      *backend_, g_, [this](double v) { return global_reduce(v, ReduceOp::Sum); }, margins_);
}

template <typename T>
std::function<void(T*)> Sweeper<T>::exchange_hook() {
  if (!exchanger_) return {};
  return [this](T* x) {
    settle();
    exchanger_->exchange(*backend_, x);
  };
}

template <typename T>
void Sweeper<T>::fill_ghosts(T* u, bool physical) {
  if (exchanger_) {
    if (pending_ == u) {  // its halos were sent after the sweep that computed it
      exchanger_->finish(*backend_, u);
      pending_ = nullptr;
    } else {
      settle();
      exchanger_->exchange(*backend_, u);
    }
  }
  if (physical) backend_->apply_boundary(u, g_, faces_);
}

template <typename T>
void Sweeper<T>::settle() {
  if (!pending_) return;
  exchanger_->finish(*backend_, pending_);
  pending_ = nullptr;
}

// With overlap the exchange is pipelined across sweeps: a sweep computes the shell of `out`
// (the layers next to Exchange faces) first, queues the packing of out's boundary layers,
// queues the core, and only then waits for the packing and sends; the halos travel while the
// device computes the core, and the next sweep (whose u is this out) finishes the exchange.
// Physical ghosts depend on interior cells only and the stencil reads no edge or corner
// ghosts, so apply_boundary needs no halo. Same arithmetic per point as the plain path, so
// the result is bitwise the same.
template <typename T>
void Sweeper<T>::sweep(T* u, T* out, const T* f, const StencilCoeffs<T>& c, bool rules_in_sweep) {
  if (!overlap_ && rules_in_sweep) {
    fill_ghosts(u, false);
    backend_->stencil_with_boundary(u, out, f, g_, c, faces_);
    return;
  }
  fill_ghosts(u);
  if (!overlap_) {
    backend_->stencil(u, out, f, g_, c);
    return;
  }
  bool split = true;
  for (std::size_t i = 0; i < shell_.size() && split; ++i) {
    split = backend_->stencil_region(u, out, f, g_, c, shell_[i]);
    if (!split && i > 0) throw std::logic_error("backend swept a shell region but not another");
  }
  if (!split) backend_->stencil(u, out, f, g_, c);
  exchanger_->begin(*backend_, out);
  if (split && !backend_->stencil_region(u, out, f, g_, c, core_))
    throw std::logic_error("backend swept the shell regions but not the core");
  exchanger_->send(*backend_);
  pending_ = out;
}

template <typename T>
void Sweeper<T>::sweep(T* u, T* out, const T* f, const SweepForm<T>& form, bool rules_in_sweep) {
  if (!form.variable) {
    sweep(u, out, f, form.c, rules_in_sweep);
    return;
  }
  fill_ghosts(u);
  CellRange all;
  all.hi = {g_.nx, g_.ny, g_.dims == 3 ? g_.nz : 1};
  if (!overlap_) {
    backend_->stencil_variable(u, out, f, g_, form.v, all);
    return;
  }
  for (const CellRange& r : shell_) backend_->stencil_variable(u, out, f, g_, form.v, r);
  exchanger_->begin(*backend_, out);
  backend_->stencil_variable(u, out, f, g_, form.v, core_);
  exchanger_->send(*backend_);
  pending_ = out;
}

template <typename T>
int Sweeper<T>::fused_depth(const T* f, const SweepForm<T>& form) {
  if (!form.variable) return fused_depth(f, form.c);
  fused_depth_ = 1;  // variable coefficients: single sweeps
  return 1;
}

template <typename T>
int Sweeper<T>::fused_depth(const T* f, const StencilCoeffs<T>& c) {
  if (fused_depth_ > 0) return fused_depth_;
  // A fused pass takes its k steps with one set of faces and one source: inputs that change
  // with time take single steps (docs/deck.md "Time-varying inputs").
  if (inputs_vary()) {
    fused_depth_ = 1;
    return 1;
  }
  // The set-up (margin buffers, IPC mappings, auto's trial) stays out of wall_seconds, as the
  // one-layer exchange's does in the run loop: the time loop's rate measures steps.
  const auto t0 = Clock::now();
  fused_depth_ = choose_fused_depth(f, c);
  if (exchanger_) {
    backend_->synchronize();
    halo_setup_seconds_ = seconds_since(t0);
  }
  return fused_depth_;
}

template <typename T>
int Sweeper<T>::choose_fused_depth(const T* f, const StencilCoeffs<T>& c) {
  const bool automatic = cfg_.time_block <= 0;
  int want = std::max(1, automatic ? backend_->max_time_block() : cfg_.time_block);
  if (!exchanger_) return want;
  // Under MPI, `auto` also tries margins where the backend fuses nothing (the CPU): k sweeps
  // per exchange send fewer, larger messages. The timing below decides.
  if (automatic && want == 1) want = kUnfusedTrialDepth;
  // Every rank takes the same depth: the smallest request (auto's timing is per rank),
  // capped by the thinnest block along the split axes (a margin comes from the neighbour's
  // own cells). Minima as maxima of negated values.
  const double thinnest = -global_reduce(-double(deepest_margin(ctx_.domain)), ReduceOp::MaxAbs);
  const double agreed = -global_reduce(-double(want), ReduceOp::MaxAbs);
  const int depth = int(std::min(agreed, thinnest));
  deep_ = depth > 1 ? exchanger_->make_deep(depth) : nullptr;
  // All ranks or none: an exchanger that cannot make deep halos on one rank keeps every rank
  // on single steps.
  if (global_reduce(deep_ ? 0.0 : 1.0, ReduceOp::MaxAbs) > 0) deep_.reset();
  if (!deep_) return 1;
  const DeepHaloGeometry& geo = deep_->geometry();
  // All ranks or none: an overlapped pass adds an exchange that the neighbours must match.
  overlap_deep_ = cfg_.overlap && overlap_planes(geo, &deep_parts_);  // execution.overlap
  overlap_deep_ = global_reduce(overlap_deep_ ? 0.0 : 1.0, ReduceOp::MaxAbs) == 0;
  deep_ready_ = false;
  // The margin absorbs whatever its outer ghosts hold, so where the serial run's faces all
  // have rules the fused kernels may apply one there too (Dirichlet 0: any rule would do);
  // otherwise (a periodic face) the serial run takes single steps and so does this one.
  deep_faces_ = faces_;
  bool rules_everywhere = true;  // no periodic face: every deck face becomes a ghost rule
  for (int face = 0; face < 2 * g_.dims; ++face)
    rules_everywhere = rules_everywhere && cfg_.boundary[face].type != BoundaryType::Periodic;
  if (rules_everywhere)
    for (int face = 0; face < 2 * g_.dims; ++face)
      if (deep_faces_[face].type == BoundaryType::Exchange)
        deep_faces_[face] = FaceBC{BoundaryType::Dirichlet, 0.0};
  const std::size_t n = geo.extended.padded_size();
  deep_u_ = backend_->allocate(n);
  deep_v_ = backend_->allocate(n);
  deep_u_->set_zero();
  deep_v_->set_zero();
  if (f_) {  // the source's margins once, from the neighbours (periodic wraps included)
    deep_f_ = backend_->allocate(n);
    deep_f_->set_zero();
    copy_block_to_extended(*backend_, geo, f_->data(), deep_f_->data());
    deep_->exchange(*backend_, deep_f_->data());
    if (separable_) {  // fused passes run with constant inputs: the form at t = 0
      const SeparableSource<T> form = deck_form(geo.extended_domain);
      backend_->describe_source(deep_f_->data(), geo.extended, &form);
    }
  }
  if (automatic) {
    const double steps = double(kTrialPasses * depth);
    const std::array<double, 2> seconds = time_single_and_fused(f, c, kTrialPasses);
    trial_ms_ = {1e3 * seconds[0] / steps, 1e3 * seconds[1] / steps};
    if (!(seconds[1] < seconds[0])) {  // single steps win (every rank sees the same maxima)
      if (deep_f_) backend_->describe_source(deep_f_->data(), geo.extended, nullptr);
      deep_.reset();  // geo with it
      deep_u_.reset();
      deep_v_.reset();
      deep_f_.reset();
      return 1;
    }
  }
  return depth;
}

// `passes` deep-halo passes against as many single steps with the one-layer exchange, both
// from the current state on scratch copies (the run's fields are left as they are), after one
// untimed pass each (buffers, tuning of the extended grid). The slowest rank's times.
template <typename T>
std::array<double, 2> Sweeper<T>::time_single_and_fused(const T* f, const StencilCoeffs<T>& c,
                                                        int passes) {
  const DeepHaloGeometry& geo = deep_->geometry();
  const int steps = passes * geo.depth;
  settle();
  std::unique_ptr<Array<T>> a = backend_->allocate(u_->size()), b = backend_->allocate(u_->size());
  a->copy_from(*u_);
  b->copy_from(*u_);
  std::array<double, 2> seconds{};
  for (int timed = 0; timed < 2; ++timed) {
    backend_->synchronize();
    const auto t0 = Clock::now();
    for (int s = 0; s < (timed ? steps : geo.depth); ++s) {
      sweep(a->data(), b->data(), f, c, true);
      std::swap(a, b);
    }
    settle();
    backend_->synchronize();
    seconds[0] = seconds_since(t0);
  }
  const T* fe = f ? deep_f_->data() : nullptr;
  copy_block_to_extended(*backend_, geo, u_->data(), deep_u_->data());
  deep_ready_ = false;
  for (int timed = 0; timed < 2; ++timed) {
    backend_->synchronize();
    const auto t0 = Clock::now();
    // The run's passes, overlapped as there (the first one's exchange is timed too).
    for (int p = 0; p < (timed ? passes : 1); ++p) deep_pass(fe, c, geo.depth);
    backend_->synchronize();
    seconds[1] = seconds_since(t0);
  }
  return {global_reduce(seconds[0], ReduceOp::MaxAbs), global_reduce(seconds[1], ReduceOp::MaxAbs)};
}

template <typename T>
void Sweeper<T>::fused_steps(const T* f, const StencilCoeffs<T>& c, int steps) {
  if (!deep_) {
    // Blocks of the run's k: the backend's stencil_steps would take its largest compiled k
    // for a long run of steps (a Jacobi stretch between residual checks), not the chosen one.
    const int k = std::max(1, fused_depth_);
    for (int left = steps; left > 0;) {
      const int n = std::min(left, k);
      T* res = backend_->stencil_steps(u_->data(), v_->data(), f, g_, c, faces_, n);
      if (res != u_->data()) std::swap(u_, v_);
      left -= n;
    }
    return;
  }
  const DeepHaloGeometry& geo = deep_->geometry();
  if (!deep_newer_) {
    settle();
    copy_block_to_extended(*backend_, geo, u_->data(), deep_u_->data());
    deep_newer_ = true;
    deep_ready_ = false;
  }
  const T* fe = f ? deep_f_->data() : nullptr;
  for (int left = steps; left > 0;) {
    const int k = std::min(left, geo.depth);
    deep_pass(fe, c, k);
    left -= k;
  }
}

template <typename T>
void Sweeper<T>::deep_pass(const T* fe, const StencilCoeffs<T>& c, int k) {
  const DeepHaloGeometry& geo = deep_->geometry();
  if (!deep_ready_) deep_->exchange(*backend_, deep_u_->data());
  deep_ready_ = false;
  const T* u = deep_u_->data();
  T* out = deep_v_->data();
  const auto planes = [&](const std::array<int, 2>& p) {
    return backend_->stencil_steps_planes(u, out, fe, geo.extended, c, deep_faces_, k, p[0], p[1]);
  };
  // An empty range asks whether the backend stores plane ranges for this pass.
  if (!overlap_deep_ || !planes({0, 0})) {
    T* res = backend_->stencil_steps(deep_u_->data(), deep_v_->data(), fe, geo.extended, c,
                                     deep_faces_, k);
    if (res != deep_u_->data()) std::swap(deep_u_, deep_v_);
    return;
  }
  planes(deep_parts_.send_lo);
  planes(deep_parts_.send_hi);
  backend_->fork_side();  // the side lane starts after the send planes
  planes(deep_parts_.rest);
  std::swap(deep_u_, deep_v_);
  // Every rank overlaps the same passes (the parts' support depends on k and the global face
  // rules only), so the exchanges pair up; after the last pass before a sync_state() this one
  // goes unused.
  deep_->exchange(*backend_, deep_u_->data(), Lane::Side);
  backend_->join_side();
  deep_ready_ = true;
}

template <typename T>
void Sweeper<T>::sync_state() {
  if (!deep_newer_) return;
  copy_extended_to_block(*backend_, deep_->geometry(), deep_u_->data(), u_->data());
  deep_newer_ = false;
}

template <typename T>
void Sweeper<T>::describe(RunResult& r) const {
  r.backend = backend_->name();
  r.backend_description = backend_->description();
  r.kernel = kernel_;
  r.precision = std::is_same_v<T, float> ? Precision::Float : Precision::Double;
  if (!exchanger_) return;
  // Fused passes fill the deep margins; single steps (if any) go the one-layer way, with the
  // same transport rules.
  r.halo_transport = deep_ ? deep_->transport() : exchanger_->transport();
  r.halo_depth = deep_ ? deep_->geometry().depth : 1;
  r.time_block_trial_ms = trial_ms_;
  r.halo_setup_seconds = halo_setup_seconds_;
}

template class Sweeper<float>;
template class Sweeper<double>;

}  // namespace heatsolve
