#include "solvers/operator/helmholtz.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "solvers/problem/materials.hpp"

namespace heatsolve {

namespace {

BoundaryFaces zero_values(BoundaryFaces faces) {
  for (FaceBC& f : faces) f.value = 0;
  return faces;
}

double spacing(const GridDesc& g, int a) {
  return a == 0 ? g.hx : a == 1 ? g.hy : g.hz;
}
int extent(const GridDesc& g, int a) {
  return a == 0 ? g.nx : a == 1 ? g.ny : (g.dims == 3 ? g.nz : 1);
}

template <typename T>
std::vector<T> to_host(const Array<T>& a) {
  std::vector<T> h(a.size());
  a.copy_to_host(h.data());
  return h;
}

template <typename T>
std::shared_ptr<Array<T>> to_device(Backend<T>& b, const std::vector<T>& h) {
  std::shared_ptr<Array<T>> a = b.allocate(h.size());
  a->copy_from_host(h.data());
  return a;
}

// The coarse cells' mean of their children.
template <typename T>
std::vector<T> coarsen_cells(const std::vector<T>& fine, const GridDesc& gf, const GridDesc& gc,
                             const std::array<int, 3>& r) {
  std::vector<T> out(gc.padded_size(), T(0));
  const bool d3 = gf.dims == 3;
  const int children = r[0] * r[1] * (d3 ? r[2] : 1);
#pragma omp parallel for collapse(2) schedule(static)
  for (int K = 0; K < extent(gc, 2); ++K)
    for (int J = 0; J < gc.ny; ++J)
      for (int I = 0; I < gc.nx; ++I) {
        double sum = 0;
        for (int dk = 0; dk < (d3 ? r[2] : 1); ++dk)
          for (int dj = 0; dj < r[1]; ++dj)
            for (int di = 0; di < r[0]; ++di)
              sum += double(fine[gf.index(I * r[0] + di, J * r[1] + dj, d3 ? K * r[2] + dk : 0)]);
        out[gc.index(I, J, d3 ? K : 0)] = static_cast<T>(sum / children);
      }
  return out;
}

// Sweep s of `sweeps` takes weights[s] (weights[sweeps - 1 - s] when `reverse`), the last
// weight past the list's end, the one weight of a constant smoother.
double sweep_weight(const std::vector<double>& weights, int sweeps, int s, bool reverse) {
  const int n = int(weights.size());
  return weights[std::size_t(n == 1 ? 0 : std::min(reverse ? sweeps - 1 - s : s, n - 1))];
}

}  // namespace

template <typename T>
HelmholtzOperator<T>::HelmholtzOperator(FieldSpace<T> space, const BoundaryFaces& faces,
                                        double sigma, double alpha,
                                        std::function<void(T*)> exchange, double k)
    : space_(std::move(space)),
      deck_faces_(faces),
      sigma_(sigma),
      alpha_(alpha),
      k_(k),
      exchange_(std::move(exchange)) {
  set_faces(lower_uniform_faces(faces, grid(), k));
  for (int f = 0; f < 2 * grid().dims; ++f) anchored_ = anchored_ || anchors((*faces_)[f]);
  const GridDesc& g = grid();
  diag_ = sigma_ + alpha_ * 2.0 / (g.hx * g.hx) + alpha_ * 2.0 / (g.hy * g.hy) +
          (g.dims == 3 ? alpha_ * 2.0 / (g.hz * g.hz) : 0.0);
}

template <typename T>
HelmholtzOperator<T> HelmholtzOperator<T>::variable(FieldSpace<T> space, const BoundaryFaces& faces,
                                                    OperatorArrays<T> arrays, bool anchored,
                                                    std::function<void(T*)> exchange) {
  HelmholtzOperator op;
  op.space_ = std::move(space);
  op.deck_faces_ = faces;
  op.set_faces(faces);
  op.anchored_ = anchored;
  op.exchange_ = std::move(exchange);
  op.arrays_ = std::move(arrays);
  op.sigma_ = op.arrays_.mass ? 1.0 : 0.0;  // only "zero or not" matters for singular()
  return op;
}

template <typename T>
void HelmholtzOperator<T>::set_faces(const BoundaryFaces& kernel_faces) {
  faces_ = std::make_shared<BoundaryFaces>(kernel_faces);
  zero_faces_ = zero_values(kernel_faces);
  interpolation_faces_ = zero_faces_;
}

template <typename T>
void HelmholtzOperator<T>::set_face_values(const BoundaryFaces& faces) {
  const BoundaryFaces kernel = is_variable() ? faces : lower_uniform_faces(faces, grid(), k_);
  for (int f = 0; f < 2 * grid().dims; ++f)
    if (kernel[f].type != (*faces_)[f].type)
      throw std::logic_error("HelmholtzOperator::set_face_values: a face changed its type");
  *faces_ = kernel;
}

template <typename T>
void HelmholtzOperator<T>::fill_for_interpolation(T* x, bool exchanged) const {
  if (exchange_ && !exchanged) exchange_(x);
  backend().apply_boundary(x, grid(), interpolation_faces_);
}

template <typename T>
bool HelmholtzOperator<T>::singular() const {
  if (sigma_ != 0.0) return false;
  // A decomposed grid asks every rank: a block without an anchoring face may belong to a
  // problem that has one (collective then).
  return space_.sum_over_ranks(anchored_ ? 1.0 : 0.0) == 0;
}

template <typename T>
SweepForm<T> HelmholtzOperator<T>::explicit_step(double dt) const {
  SweepForm<T> s;
  if (!is_variable()) {
    s.c = heat_coeffs<T>(grid(), alpha_, dt);
    return s;
  }
  s = variable_form(VariableForm::Step);
  s.v.dt = static_cast<T>(dt);
  return s;
}

template <typename T>
SweepForm<T> HelmholtzOperator<T>::variable_form(VariableForm form) const {
  SweepForm<T> s;
  s.variable = true;
  s.v.wx = arrays_.wx->data();
  s.v.wy = arrays_.wy->data();
  s.v.wz = arrays_.wz ? arrays_.wz->data() : nullptr;
  if (form == VariableForm::Step)
    s.v.scale = arrays_.scale->data();
  else
    s.v.mass = arrays_.mass ? arrays_.mass->data() : nullptr;
  s.v.form = form;
  return s;
}

template <typename T>
SweepForm<T> HelmholtzOperator<T>::jacobi() const {
  if (!is_variable()) {
    SweepForm<T> s;
    s.c = jacobi_coeffs<T>(grid());
    return s;
  }
  return weighted_jacobi(1.0);
}

template <typename T>
SweepForm<T> HelmholtzOperator<T>::weighted_jacobi(double omega) const {
  if (is_variable()) {
    SweepForm<T> s = variable_form(VariableForm::Jacobi);
    s.v.omega = static_cast<T>(omega);
    return s;
  }
  SweepForm<T> s;
  // x' = x + omega D^-1 (f - A x) = (1 - omega) x + omega/D (alpha sum_d (x_d- + x_d+)/h_d^2 + f).
  const GridDesc& g = grid();
  const double w = omega / diag_;
  StencilCoeffs<T>& c = s.c;
  c.center = static_cast<T>(1.0 - omega);
  c.cx = static_cast<T>(w * alpha_ / (g.hx * g.hx));
  c.cy = static_cast<T>(w * alpha_ / (g.hy * g.hy));
  c.cz = static_cast<T>(g.dims == 3 ? w * alpha_ / (g.hz * g.hz) : 0.0);
  c.source = static_cast<T>(w);
  return s;
}

template <typename T>
SweepForm<T> HelmholtzOperator<T>::residual_form() const {
  if (is_variable()) return variable_form(VariableForm::Residual);
  SweepForm<T> s;
  // r = f - A x = f - D x + alpha sum_d (x_d- + x_d+)/h_d^2.
  const GridDesc& g = grid();
  StencilCoeffs<T>& c = s.c;
  c.center = static_cast<T>(-diag_);
  c.cx = static_cast<T>(alpha_ / (g.hx * g.hx));
  c.cy = static_cast<T>(alpha_ / (g.hy * g.hy));
  c.cz = static_cast<T>(g.dims == 3 ? alpha_ / (g.hz * g.hz) : 0.0);
  c.source = T(1);
  return s;
}

template <typename T>
SweepForm<T> HelmholtzOperator<T>::apply_form() const {
  SweepForm<T> s = residual_form();
  if (s.variable) {
    s.v.form = VariableForm::Apply;
    return s;
  }
  StencilCoeffs<T>& c = s.c;
  c.center = -c.center;
  c.cx = -c.cx;
  c.cy = -c.cy;
  c.cz = -c.cz;
  c.source = T(0);
  return s;
}

template <typename T>
SweepForm<T> HelmholtzOperator<T>::combine(double a, double b) const {
  if (!is_variable()) throw std::logic_error("HelmholtzOperator::combine: variable operators only");
  SweepForm<T> s = residual_form();
  s.v.form = VariableForm::Combine;
  s.v.a = static_cast<T>(a);
  s.v.b = static_cast<T>(b);
  return s;
}

template <typename T>
void HelmholtzOperator<T>::fill(T* x, BoundaryMode mode) const {
  if (exchange_) exchange_(x);
  backend().apply_boundary(x, grid(), faces(mode));
}

template <typename T>
HelmholtzOperator<T> HelmholtzOperator<T>::with_split_exchange(SplitExchange<T> split) const {
  HelmholtzOperator op = *this;
  op.split_ = std::move(split);
  op.core_ = exchange_core_range(grid(), *faces_);
  op.shell_ = shell_ranges(grid(), op.core_);
  return op;
}

template <typename T>
bool HelmholtzOperator<T>::sweep_cells(const T* x, T* out, const T* f, const SweepForm<T>& form,
                                       const CellRange* r) const {
  CellRange all;
  all.hi = {grid().nx, grid().ny, grid().dims == 3 ? grid().nz : 1};
  if (form.variable) {
    backend().stencil_variable(x, out, f, grid(), form.v, r ? *r : all);
    return true;
  }
  if (!r) {
    backend().stencil(x, out, f, grid(), form.c);
    return true;
  }
  return backend().stencil_region(x, out, f, grid(), form.c, *r);
}

template <typename T>
void HelmholtzOperator<T>::sweep(T* x, T* out, const T* f, const SweepForm<T>& form,
                                 BoundaryMode mode) const {
  sweep_exchanged(x, out, f, form, mode, false);
}

template <typename T>
void HelmholtzOperator<T>::sweep_exchanged(T* x, T* out, const T* f, const SweepForm<T>& form,
                                           BoundaryMode mode, bool rules_in_sweep) const {
  const BoundaryFaces& bc = faces(mode);
  const bool in_sweep = rules_in_sweep && !form.variable;
  const auto whole = [&] {
    if (in_sweep)
      backend().stencil_with_boundary(x, out, f, grid(), form.c, bc);
    else
      sweep_cells(x, out, f, form, nullptr);
  };
  if (!split_) {
    if (in_sweep) {
      if (exchange_) exchange_(x);
    } else {
      fill(x, mode);
    }
    whole();
    return;
  }
  // The physical ghosts depend on interior cells only; the Exchange ghosts travel while the
  // core is swept.
  const bool region_rules = in_sweep && backend().region_rules_in_sweep();
  const auto part = [&](const CellRange& r) {
    return region_rules ? backend().stencil_region_with_boundary(x, out, f, grid(), form.c, bc, r)
                        : sweep_cells(x, out, f, form, &r);
  };
  if (!region_rules) backend().apply_boundary(x, grid(), bc);
  split_.begin(x);
  const bool core = part(core_);
  split_.send();
  split_.finish(x);
  bool shell = core;
  for (const CellRange& r : shell_) shell = shell && part(r);
  if (!shell) whole();  // the same bits, all at once
}

template <typename T>
void HelmholtzOperator<T>::residual(T* x, const T* f, T* r, BoundaryMode mode) const {
  sweep(x, r, f, residual_form(), mode);
}

template <typename T>
void HelmholtzOperator<T>::apply(T* x, T* y, BoundaryMode mode) const {
  sweep(x, y, nullptr, apply_form(), mode);
}

template <typename T>
std::vector<StencilCoeffs<T>> HelmholtzOperator<T>::sweep_coeffs(const std::vector<double>& weights,
                                                                 int sweeps, bool reverse) const {
  std::vector<StencilCoeffs<T>> c(std::size_t(std::max(sweeps, 0)));
  for (int s = 0; s < sweeps; ++s)
    c[std::size_t(s)] = weighted_jacobi(sweep_weight(weights, sweeps, s, reverse)).c;
  return c;
}

template <typename T>
bool HelmholtzOperator<T>::smooths_deep(const T* cur, const T* other, const T* f,
                                        int sweeps) const {
  const auto has = [this](const T* x) { return margins_of(x).covers(deep_.margins); };
  return deep_ && !is_variable() && sweeps >= 1 && sweeps <= deep_.depth && has(cur) &&
         has(other) && (!f || has(f));
}

// The extended grid's outer faces past the margins take any rule: what they feed in travels a
// cell a sweep and stops short of the block (deep_halo.hpp).
template <typename T>
BoundaryFaces HelmholtzOperator<T>::extended_faces(BoundaryMode mode) const {
  BoundaryFaces bc = faces(mode);
  for (int face = 0; face < 2 * grid().dims; ++face)
    if (bc[face].type == BoundaryType::Exchange) bc[face] = FaceBC{BoundaryType::Dirichlet, 0.0};
  return bc;
}

template <typename T>
template <typename Pass>
bool HelmholtzOperator<T>::on_extended(T** cur, T** other, const T* f, Pass&& pass) const {
  const std::ptrdiff_t o = std::ptrdiff_t(deep_.margins.before);
  T* a = *cur - o;
  T* b = *other - o;
  if (!pass(&a, &b, f ? f - o : nullptr)) return false;
  *cur = a + o;
  *other = b + o;
  return true;
}

template <typename T>
bool HelmholtzOperator<T>::fill_margins(const T* x) const {
  if (!deep_ || is_variable() || !margins_of(x).covers(deep_.margins)) return false;
  // The memory around the field, not its values.
  deep_.fill(const_cast<T*>(x));
  return true;
}

template <typename T>
bool HelmholtzOperator<T>::fill_margins_for_interpolation(T* x, bool filled) const {
  if (filled ? !deep_ || is_variable() || !margins_of(x).covers(deep_.margins) : !fill_margins(x))
    return false;
  backend().apply_boundary(x - std::ptrdiff_t(deep_.margins.before), deep_.extended,
                           interpolation_faces_);
  return true;
}

template <typename T>
void HelmholtzOperator<T>::smooth(T** cur, T** other, const T* f,
                                  const std::vector<double>& weights, int sweeps, bool reverse,
                                  BoundaryMode mode, bool fused) const {
  if (fused && smooths_deep(*cur, *other, f, sweeps)) {
    deep_.fill(*cur);
    const std::vector<StencilCoeffs<T>> c = sweep_coeffs(weights, sweeps, reverse);
    on_extended(cur, other, f, [&](T** a, T** b, const T* fe) {
      backend().stencil_sweeps(a, b, fe, deep_.extended, c.data(), sweeps, extended_faces(mode));
      return true;
    });
    return;
  }
  if (!exchange_ && !is_variable()) {
    // One rank's grid: the sweeps in one call, which the backend may fuse.
    const std::vector<StencilCoeffs<T>> c = sweep_coeffs(weights, sweeps, reverse);
    if (fused) {
      backend().stencil_sweeps(cur, other, f, grid(), c.data(), sweeps, faces(mode));
    } else {
      for (const StencilCoeffs<T>& cs : c) {
        backend().stencil_with_boundary(*cur, *other, f, grid(), cs, faces(mode));
        std::swap(*cur, *other);
      }
    }
    return;
  }
  for (int s = 0; s < sweeps; ++s) {
    sweep_exchanged(*cur, *other, f, weighted_jacobi(sweep_weight(weights, sweeps, s, reverse)),
                    mode, true);
    std::swap(*cur, *other);
  }
}

template <typename T>
bool HelmholtzOperator<T>::smooth_measuring_residual(T** cur, T** other, const T* f,
                                                     const std::vector<double>& weights, int sweeps,
                                                     BoundaryMode mode,
                                                     double* residual_norm) const {
  if (smooths_deep(*cur, *other, f, sweeps)) {
    // The pass on the extended grid, measuring the block's planes. Whether the backend has
    // that pass may differ between ranks (their extended grids differ): a rank without it
    // sends -inf, and then every rank answers false with its fields as they were (the pass
    // wrote the other buffer only).
    deep_.fill(*cur);
    const std::vector<StencilCoeffs<T>> c = sweep_coeffs(weights, sweeps, false);
    const GridDesc& g = grid();
    const int lo = margin_planes(deep_.margins.before, g), n = g.dims == 3 ? g.nz : g.ny;
    return on_extended(cur, other, f, [&](T** a, T** b, const T* fe) {
      double sum = 0;
      const bool measured = backend().stencil_sweeps_with_norm(a, b, fe, deep_.extended, c.data(),
                                                               sweeps, extended_faces(mode),
                                                               residual_form().c, &sum, lo, lo + n);
      const double total = space_.sum_over_ranks(measured ? sum : -INFINITY);
      if (!(total >= 0)) return false;
      *residual_norm = std::sqrt(total);
      return true;
    });
  }
  if (exchange_ || is_variable() || split_ || sweeps < 1) return false;
  const std::vector<StencilCoeffs<T>> c = sweep_coeffs(weights, sweeps, false);
  double sum = 0;
  if (!backend().stencil_sweeps_with_norm(cur, other, f, grid(), c.data(), sweeps, faces(mode),
                                          residual_form().c, &sum, 0, -1))
    return false;
  *residual_norm = std::sqrt(space_.sum_over_ranks(sum));
  return true;
}

template <typename T>
bool HelmholtzOperator<T>::prolong_add_and_smooth(const T* coarse, const GridDesc& gc,
                                                  const std::array<int, 3>& ratio, Prolongation p,
                                                  T** cur, T** other, const T* f,
                                                  const std::vector<double>& weights, int sweeps,
                                                  bool reverse, BoundaryMode mode,
                                                  const std::function<void(T*)>& sent) const {
  if (is_variable() || split_ || sweeps < 1) return false;
  const std::vector<StencilCoeffs<T>> c = sweep_coeffs(weights, sweeps, reverse);
  if (smooths_deep(*cur, *other, f, sweeps)) {
    const GridDesc& g = grid();
    if (g.dims != 3 || deep_.extended.nx != g.nx || deep_.extended.ny != g.ny) return false;
    deep_.fill(*cur);  // the uncorrected iterate's margins: the pass corrects them
    const int offset = margin_planes(deep_.margins.before, g);
    const GridDesc& e = deep_.extended;
    const std::ptrdiff_t o = std::ptrdiff_t(deep_.margins.before);
    const auto part = [&](int p0, int p1) {
      return backend().prolong_add_sweeps_planes(coarse, gc, ratio, p, *cur - o, *other - o,
                                                 f ? f - o : nullptr, e, c.data(), sweeps,
                                                 extended_faces(mode), offset, p0, p1);
    };
    // Every rank asks (an empty range) and agrees before storing parts.
    if (sent && space_.sum_over_ranks(part(0, 0) ? 0.0 : 1.0) == 0.0) {
      // The planes the neighbours need (their margins, `depth` deep past each face), as
      // overlap_planes cuts a deep-halo pass; the margin planes are the exchange's.
      const int before = offset, after = margin_planes(deep_.margins.after, g);
      const int lo = before, hi = e.nz - after, depth = deep_.depth;
      const int rest_lo = before ? std::min(lo + depth, hi) : lo;
      const int send_hi = after ? std::max(rest_lo, hi - depth) : hi;
      if (before) part(lo, rest_lo);
      if (after) part(send_hi, hi);
      sent(*other);
      part(rest_lo, send_hi);
      std::swap(*cur, *other);
      return true;
    }
    return on_extended(cur, other, f, [&](T** a, T** b, const T* fe) {
      const bool done =
          backend().prolong_add_sweeps(coarse, gc, ratio, p, a, b, fe, deep_.extended, c.data(),
                                       sweeps, extended_faces(mode), offset);
      // Whether a backend has the pass may differ between ranks (their extended grids differ),
      // and the fallback's smoothing exchanges: where one rank has none, no rank takes its
      // pass (the input is as it was: the pass wrote the other buffer only).
      return space_.sum_over_ranks(done ? 0.0 : 1.0) == 0.0 && done;
    });
  }
  if (exchange_) return false;
  return backend().prolong_add_sweeps(coarse, gc, ratio, p, cur, other, f, grid(), c.data(), sweeps,
                                      faces(mode), 0);
}

template <typename T>
double HelmholtzOperator<T>::residual_norm(T* x, const T* f, T* scratch, BoundaryMode mode,
                                           bool fused) const {
  if (!fused || is_variable() || split_) {
    residual(x, f, scratch, mode);
    return std::sqrt(space_.dot(scratch, scratch));
  }
  fill(x, mode);
  return std::sqrt(space_.sum_over_ranks(
      backend().stencil_square_sum(x, f, grid(), residual_form().c, scratch)));
}

template <typename T>
void HelmholtzOperator<T>::residual_restrict(T* x, const T* f, T* coarse, const GridDesc& gc,
                                             const std::array<int, 3>& ratio, T* scratch,
                                             BoundaryMode mode, bool fused, bool exchanged) const {
  if (!fused || is_variable() || (split_ && !exchanged)) {
    residual(x, f, scratch, mode);
    backend().restrict_average(scratch, grid(), coarse, gc, ratio);
    return;
  }
  // The faces' ghosts are the backend's to fill or apply; Exchange ones are filled here.
  if (!exchanged && exchange_) exchange_(x);
  backend().stencil_restrict(x, f, grid(), residual_form().c, faces(mode), coarse, gc, ratio,
                             scratch);
}

template <typename T>
bool HelmholtzOperator<T>::residual_restrict_in_parts(T* x, const T* f, T* coarse,
                                                      const GridDesc& gc,
                                                      const std::array<int, 3>& ratio,
                                                      BoundaryMode mode, int lo, int hi,
                                                      const std::function<void()>& sent) const {
  if (is_variable() || split_ || gc.dims != 3) return false;
  const auto part = [&](int p0, int p1) {
    return backend().stencil_restrict_planes(x, f, grid(), residual_form().c, faces(mode), coarse,
                                             gc, ratio, p0, p1);
  };
  if (!part(0, 0)) return false;
  lo = std::clamp(lo, 0, gc.nz);
  hi = std::clamp(hi, lo, gc.nz);
  part(0, lo);
  part(hi, gc.nz);
  sent();
  part(lo, hi);
  return true;
}

template <typename T>
HelmholtzOperator<T> HelmholtzOperator<T>::coarsened(FieldSpace<T> space) const {
  return coarsened(std::move(space), {}, {});
}

template <typename T>
HelmholtzOperator<T> HelmholtzOperator<T>::coarsened(
    FieldSpace<T> space, std::function<void(T*)> exchange,
    const std::function<void(std::vector<double>&)>& exchange_double) const {
  // The deck's face values stay in the Deck mode (full multigrid's coarse problems); coarse
  // corrections take the Homogeneous one.
  if (!is_variable())
    return HelmholtzOperator(std::move(space), deck_faces_, sigma_, alpha_, std::move(exchange),
                             k_);
  const GridDesc& gf = grid();
  const GridDesc& gc = space.grid();
  std::array<int, 3> r{1, 1, 1};
  for (int a = 0; a < gf.dims; ++a) r[a] = spacing(gc, a) != spacing(gf, a) ? 2 : 1;
  auto level = std::make_shared<ConductanceLevel>(coarsen(*arrays_.conductance, gc));
  // The faces shared with neighbour ranks couple through the neighbours' resistances.
  if (exchange_double)
    for (std::vector<double>& half : level->half)
      if (!half.empty()) exchange_double(half);
  wrap_periodic(*level, *faces_);
  const std::vector<T> mass =
      arrays_.mass ? coarsen_cells(host_mass(), gf, gc, r) : std::vector<T>{};
  HelmholtzOperator op =
      with_level(std::move(space), std::move(level), arrays_.exterior, mass, *faces_);
  op.exchange_ = std::move(exchange);
  return op;
}

template <typename T>
std::vector<T> HelmholtzOperator<T>::host_mass() const {
  return arrays_.mass ? to_host(*arrays_.mass) : std::vector<T>{};
}

template <typename T>
HelmholtzOperator<T> HelmholtzOperator<T>::with_level(FieldSpace<T> space,
                                                      std::shared_ptr<const ConductanceLevel> level,
                                                      const Exterior& exterior,
                                                      const std::vector<T>& mass,
                                                      const BoundaryFaces& faces) const {
  Backend<T>& b = space.backend();
  const auto device = [&](const std::vector<double>& w) {
    std::vector<T> h(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) h[i] = static_cast<T>(w[i]);
    return to_device(b, h);
  };
  OperatorArrays<T> a;
  a.wx = device(face_couplings(*level, exterior, 0));
  a.wy = device(face_couplings(*level, exterior, 1));
  if (space.grid().dims == 3) a.wz = device(face_couplings(*level, exterior, 2));
  if (!mass.empty()) a.mass = to_device(b, mass);
  // A correction's face value with exterior value 0 is u_i R_ext / (R_in + R_ext): the mirror
  // ghost through it is u_i (R_ext - R_in) / (R_ext + R_in), R_in the face's mean half (over
  // the whole face: the blocks of a decomposed level that touch it add theirs; every rank
  // takes part in each sum).
  BoundaryFaces interpolation = zero_values(faces);
  const GridDesc& g = level->g;
  for (int f = 0; f < 2 * g.dims; ++f) {
    const bool coupled = !std::isnan(exterior[f]) && !std::isinf(exterior[f]);
    const int ax = f / 2;
    int hi[3] = {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
    hi[ax] = 1;
    double sum = 0, cells = 0;
    for (int k = 0; coupled && k < hi[2]; ++k)
      for (int j = 0; j < hi[1]; ++j)
        for (int i = 0; i < hi[0]; ++i) {
          int c[3] = {i, j, k};
          if (f % 2 == 1) c[ax] = (ax == 0 ? g.nx : ax == 1 ? g.ny : g.nz) - 1;
          const std::int64_t idx = g.index(c[0], c[1], g.dims == 3 ? c[2] : 0);
          sum += f % 2 == 0 ? level->lower(ax, idx) : level->upper(ax, idx);
          cells += 1;
        }
    if (space.decomposed()) {
      sum = space.sum_over_ranks(sum);
      cells = space.sum_over_ranks(cells);
    }
    if (std::isnan(exterior[f])) continue;
    if (std::isinf(exterior[f])) {
      interpolation[f] = FaceBC{BoundaryType::Neumann, 0.0};
      continue;
    }
    const double r_in = sum / cells;
    interpolation[f] =
        FaceBC{BoundaryType::Robin, 0.0, (exterior[f] - r_in) / (exterior[f] + r_in)};
  }
  a.conductance = std::move(level);
  a.exterior = exterior;
  HelmholtzOperator op = variable(std::move(space), faces, std::move(a), anchored_);
  op.interpolation_faces_ = interpolation;
  return op;
}

template <typename T>
template <typename U>
HelmholtzOperator<U> HelmholtzOperator<T>::in_precision(FieldSpace<U> space,
                                                        std::function<void(U*)> exchange) const {
  if (!is_variable())
    return HelmholtzOperator<U>(std::move(space), deck_faces_, sigma_, alpha_, std::move(exchange),
                                k_);
  Backend<U>& b = space.backend();
  const auto convert = [&](const std::shared_ptr<Array<T>>& a) -> std::shared_ptr<Array<U>> {
    if (!a) return nullptr;
    std::shared_ptr<Array<U>> out = b.allocate(a->size());
    if constexpr (std::is_same_v<U, float>) {
      backend().to_float(a->data(), out->data(), a->size());
    } else {
      std::vector<T> h = to_host(*a);
      std::vector<U> c(h.begin(), h.end());
      out->copy_from_host(c.data());
    }
    return out;
  };
  OperatorArrays<U> a;
  a.wx = convert(arrays_.wx);
  a.wy = convert(arrays_.wy);
  a.wz = convert(arrays_.wz);
  a.mass = convert(arrays_.mass);
  a.scale = convert(arrays_.scale);
  a.conductance = arrays_.conductance;
  a.exterior = arrays_.exterior;
  HelmholtzOperator<U> op = HelmholtzOperator<U>::variable(std::move(space), *faces_, std::move(a),
                                                           anchored_, std::move(exchange));
  op.deck_faces_ = deck_faces_;
  op.interpolation_faces_ = interpolation_faces_;
  backend().synchronize();  // the conversions, before this operator's arrays may go away
  return op;
}

template class HelmholtzOperator<float>;
template class HelmholtzOperator<double>;
template HelmholtzOperator<float> HelmholtzOperator<double>::in_precision<float>(
    FieldSpace<float>, std::function<void(float*)>) const;

}  // namespace heatsolve
