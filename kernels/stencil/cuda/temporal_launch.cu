// Dispatch of the temporal-blocking kernels: one pass launcher per compiled policy row
// (kernels/stencil/temporal_policies.hpp), selected like the stencil ladder's
// (kernels/cuda/compiled_choice.cuh).
#include <algorithm>
#include <type_traits>
#include <utility>

#include "kernels/backend.hpp"
#include "kernels/cuda/compiled_choice.cuh"
#include "kernels/reduction/cuda/reduction_launch.cuh"
#include "kernels/stencil/cuda/chunking.hpp"
#include "kernels/stencil/cuda/stencil_launch.cuh"
#include "kernels/stencil/cuda/temporal_kernels.cuh"
#include "kernels/stencil/cuda/temporal_launch.cuh"
#include "kernels/stencil/cuda/temporal_partial_kernels.cuh"

namespace heatsolve::cuda {

bool temporal_supported(const GridDesc& g, const BoundaryFaces& bc) {
  for (int f = 0; f < 2 * g.dims; ++f)
    if (bc[f].type != BoundaryType::Dirichlet && bc[f].type != BoundaryType::Neumann) return false;
  return true;
}

namespace {

template <typename T>
struct TArgs {
  const T* u;
  T* out;
  SourceRef<T> f;
  GridDesc g;
  PassCoeffs<T> c;
  GhostRules<T> rules;
  int chunk;
  int p0, p1;  // stored planes of the stream axis
  bool memory_only;
  cudaStream_t stream;
  // A pass that also measures its input's residual (launch_temporal_norm): its coefficients,
  // and the workspace its partial sums and result go to; null otherwise.
  const StencilCoeffs<T>* rc = nullptr;
  ReductionWorkspace* ws = nullptr;
  int norm_lo = 0, norm_hi = 0;  // the planes it measures
  // A pass whose input is u plus a prolonged coarse correction (launch_temporal_prolonged).
  ProlongRef<T> prolong{};
};

// Row I of kTemporalPolicies as a type: the launchers are templates on precision + policy.
template <std::size_t I>
struct PolicyRow {
  static constexpr TemporalPolicy policy = kTemporalPolicies[I];
  static constexpr TemporalShape shape = policy.shape;
  static constexpr int dims = policy.dims;
};

// Rows with an instance that measures the input's residual (launch_temporal_norm): the 3D
// rings rows that are their k's default (the first row of that dims, k and precision), k <= 4:
// the passes a multigrid smoother runs.
constexpr bool has_norm_instance(std::size_t i, int bytes) {
  const TemporalPolicy& p = kTemporalPolicies[i];
  if (p.dims != 3 || p.shape.design != TemporalDesign::Rings || p.shape.k > 4 ||
      !p.compiled_for(bytes))
    return false;
  for (std::size_t j = 0; j < i; ++j)
    if (kTemporalPolicies[j].dims == 3 && kTemporalPolicies[j].shape.k == p.shape.k &&
        kTemporalPolicies[j].compiled_for(bytes))
      return false;
  return true;
}

// Rows with an instance whose input is the iterate plus a prolonged coarse correction
// (launch_temporal_prolonged): those of has_norm_instance that name their blocks per SM, the
// multigrid smoother's own pass (without the bound, ptxas takes more registers than two blocks
// of the pass leave).
constexpr bool has_prolong_instance(std::size_t i, int bytes) {
  return has_norm_instance(i, bytes) && kTemporalPolicies[i].norm_blocks > 0;
}

// Row P's instance that also measures its input's residual, with source form SRC.
template <typename T, class P, int SRC>
constexpr auto norm_instance = temporal_kernel<T, P::dims, P::shape.k, P::shape.by, P::shape.ry,
                                               P::shape.vx, SRC, true, P::policy.norm_blocks>;
// Row P's instance that adds a prolonged coarse correction to its input.
template <typename T, class P, int SRC>
constexpr auto prolong_instance =
    temporal_kernel<T, P::dims, P::shape.k, P::shape.by, P::shape.ry, P::shape.vx, SRC, false,
                    P::policy.norm_blocks, true>;

template <typename T, class P, int SRC, std::size_t I>
void launch_one(const TArgs<T>& a) {
  constexpr TemporalDesign DESIGN = P::shape.design;
  constexpr int DIM = P::dims, K = P::shape.k, BY = P::shape.by, RY = P::shape.ry, VX = P::shape.vx;
  constexpr bool partial = DESIGN != TemporalDesign::Rings;
  constexpr bool staged = DESIGN == TemporalDesign::StagedPartialSums;
  using G = std::conditional_t<partial, PartialGeom<T, DIM, K, BY, RY, VX, staged, SRC>,
                               TemporalGeom<T, DIM, K, BY, RY, VX, SRC>>;
  const StreamGeom s = stream_geom(a.g);
  // Partial sums, VX = 2: each lane's column pair is one aligned vector where the grid allows
  // it (pair_vector_shift; the source's pairs too, staged the same way). Lanes start at tile
  // column -K + 2 lane and tiles are an even number of columns wide, so for even K the tiles
  // start one column early, for odd K they need not.
  const bool vec = partial && VX == 2 && pair_vector_shift<T>(a.g, a.u, a.out) == 1 &&
                   (SRC != kSourceStaged || pair_vector_shift<T>(a.g, a.f.field, a.f.field) == 1);
  const int xshift = vec && K % 2 == 0 ? 1 : 0;
  const int tx = DIM == 3 ? cdiv(s.nx + xshift, G::UX) : cdiv(cdiv(s.nx + xshift, G::UX), BY);
  const int ty = DIM == 3 ? cdiv(s.ny_plane, G::UY) : 1;
  constexpr std::size_t smem = G::shared_bytes();
  const auto kern = [] {
    if constexpr (partial)
      return temporal_partial_kernel<T, DIM, K, BY, RY, VX, staged, SRC>;
    else
      return temporal_kernel<T, DIM, K, BY, RY, VX, SRC>;
  }();
  // Also raises the instance's shared memory limit where it needs more than 48 KB. A pass that
  // measures the residual is chunked for its own instance's blocks per SM.
  // A pass that adds a prolonged correction also holds its coarse planes (ProlongTile).
  const void* launched = reinterpret_cast<const void*>(kern);
  std::size_t launched_smem = smem;
  if constexpr (!partial && has_norm_instance(I, int(sizeof(T))))
    if (a.ws) launched = reinterpret_cast<const void*>(norm_instance<T, P, SRC>);
  if constexpr (!partial && has_prolong_instance(I, int(sizeof(T))))
    if (a.prolong.coarse) {
      launched = reinterpret_cast<const void*>(prolong_instance<T, P, SRC>);
      launched_smem = G::shared_bytes(true);
    }
  const int per_sm = resident_blocks_per_sm(launched, 32 * BY, launched_smem);
  int chunk = a.chunk;
  const int planes = a.p1 - a.p0;
  if (chunk <= 0) chunk = temporal_chunk(K, tx * ty, planes, per_sm * current_sm_count());
  chunk = std::min(chunk, planes);
  const dim3 grid(tx, ty, cdiv(planes, chunk));
  if constexpr (partial) {
    if (a.memory_only) {
      // The twin needs fewer registers; padded shared memory keeps it at the pass's blocks per
      // SM (and the same chunk), so that only the arithmetic differs.
      const auto twin = temporal_partial_kernel<T, DIM, K, BY, RY, VX, staged, SRC, true>;
      int dev = 0, smem_sm = 0;
      CUDA_CHECK(cudaGetDevice(&dev));
      CUDA_CHECK(
          cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
      const std::size_t padded = std::max(smem, std::size_t(smem_sm / per_sm - 1024 - 16));
      resident_blocks_per_sm(reinterpret_cast<const void*>(twin), 32 * BY, padded);
      twin<<<grid, dim3(32, BY), padded, a.stream>>>(a.u, a.out, a.f, s, a.c, a.rules, chunk, a.p0,
                                                     a.p1, xshift, vec);
    } else {
      kern<<<grid, dim3(32, BY), smem, a.stream>>>(a.u, a.out, a.f, s, a.c, a.rules, chunk, a.p0,
                                                   a.p1, xshift, vec);
    }
  } else if (a.prolong.coarse) {
    if constexpr (has_prolong_instance(I, int(sizeof(T)))) {
      prolong_instance<T, P, SRC><<<grid, dim3(32, BY), launched_smem, a.stream>>>(
          a.u, a.out, a.f, s, a.c, a.rules, chunk, a.p0, a.p1, PassNorm<T>{}, a.prolong);
    } else {
      throw BackendError("temporal blocking: shape " + P::shape.str() +
                         " has no instance that adds a prolonged correction");
    }
  } else if (a.ws) {
    if constexpr (has_norm_instance(I, int(sizeof(T)))) {
      // Per-warp partials, then their sum in a fixed order (the reductions' final kernel).
      const auto with_norm = norm_instance<T, P, SRC>;
      const std::size_t count = std::size_t(grid.x) * grid.y * grid.z * BY;
      a.ws->reserve(count * sizeof(double));
      PassNorm<T> norm{*a.rc, static_cast<double*>(a.ws->partials(0)), a.norm_lo, a.norm_hi};
      with_norm<<<grid, dim3(32, BY), smem, a.stream>>>(a.u, a.out, a.f, s, a.c, a.rules, chunk,
                                                        a.p0, a.p1, norm, ProlongRef<T>{});
      CUDA_CHECK_LAUNCH();
      constexpr int B = 256;
      detail::reduce_final<B, detail::SumOp, double, double>
          <<<1, B, 0, a.stream>>>(norm.partials, int(count), a.ws->d_result());
    } else {
      throw BackendError("temporal blocking: shape " + P::shape.str() +
                         " has no instance that measures the residual");
    }
  } else {
    kern<<<grid, dim3(32, BY), smem, a.stream>>>(a.u, a.out, a.f, s, a.c, a.rules, chunk, a.p0,
                                                 a.p1, PassNorm<T>{}, ProlongRef<T>{});
  }
  CUDA_CHECK_LAUNCH();
}

// A row's instances without, with a stored and with a generated source term (no per-point
// test, and no source staging where there is none). Rows of the other precision instantiate
// nothing (the dispatcher never selects them).
template <typename T, std::size_t I>
void launch_row(const TArgs<T>& a) {
  using P = PolicyRow<I>;
  if constexpr (!P::policy.compiled_for(int(sizeof(T)))) {
    (void)a;
  } else if (a.f.plane) {
    launch_one<T, P, kSourceGenerated, I>(a);
  } else if (a.f.field) {
    launch_one<T, P, kSourceStaged, I>(a);
  } else {
    launch_one<T, P, kSourceNone, I>(a);
  }
}

template <typename T>
bool usable(const TemporalPolicy& p, int dims) {
  return p.dims == dims && p.compiled_for(int(sizeof(T)));
}

}  // namespace

template <typename T>
std::vector<TemporalShape> temporal_shapes(int dims) {
  std::vector<TemporalShape> out;
  for (const TemporalPolicy& p : kTemporalPolicies)
    if (usable<T>(p, dims)) out.push_back(p.shape);
  return out;
}

template <typename T>
const std::vector<int>& temporal_steps(int dims) {
  static const auto compiled = [](int d) {
    std::vector<int> ks;
    for (const TemporalPolicy& p : kTemporalPolicies)
      if (usable<T>(p, d) && std::find(ks.begin(), ks.end(), p.shape.k) == ks.end())
        ks.push_back(p.shape.k);
    std::sort(ks.rbegin(), ks.rend());
    return ks;
  };
  static const std::vector<int> ks2 = compiled(2), ks3 = compiled(3);
  return dims == 3 ? ks3 : ks2;
}

template <typename T>
TemporalShape temporal_default_shape(int dims, int k) {
  for (const TemporalPolicy& p : kTemporalPolicies)
    if (usable<T>(p, dims) && p.shape.k == k) return p.shape;
  throw BackendError("temporal blocking: k = " + std::to_string(k) + " is not compiled for " +
                     std::to_string(dims) + "D");
}

namespace {

template <typename T, std::size_t I>
void load_multigrid_row() {
  using P = PolicyRow<I>;
  cudaFuncAttributes attr{};
  if constexpr (has_norm_instance(I, int(sizeof(T)))) {
    CUDA_CHECK(cudaFuncGetAttributes(&attr, norm_instance<T, P, kSourceNone>));
    CUDA_CHECK(cudaFuncGetAttributes(&attr, norm_instance<T, P, kSourceStaged>));
    CUDA_CHECK(cudaFuncGetAttributes(&attr, norm_instance<T, P, kSourceGenerated>));
  }
  if constexpr (has_prolong_instance(I, int(sizeof(T)))) {
    CUDA_CHECK(cudaFuncGetAttributes(&attr, prolong_instance<T, P, kSourceNone>));
    CUDA_CHECK(cudaFuncGetAttributes(&attr, prolong_instance<T, P, kSourceStaged>));
    CUDA_CHECK(cudaFuncGetAttributes(&attr, prolong_instance<T, P, kSourceGenerated>));
  }
}

template <typename T, std::size_t... I>
void load_multigrid_rows(std::index_sequence<I...>) {
  (load_multigrid_row<T, I>(), ...);
}

// Whether the row that runs `shape` passes `has`.
template <typename T>
bool row_has(const TemporalShape& shape, int dims, bool (*has)(std::size_t, int)) {
  for (std::size_t i = 0; i < kTemporalPolicyCount; ++i)
    if (kTemporalPolicies[i].runs(dims, int(sizeof(T)), shape)) return has(i, int(sizeof(T)));
  return false;
}

}  // namespace

template <typename T>
void load_temporal_multigrid_kernels() {
  load_multigrid_rows<T>(std::make_index_sequence<kTemporalPolicyCount>{});
}

template <typename T>
bool temporal_norm_compiled(const TemporalShape& shape, int dims) {
  return row_has<T>(shape, dims, has_norm_instance);
}

template <typename T>
bool temporal_prolong_compiled(const TemporalShape& shape, int dims) {
  return row_has<T>(shape, dims, has_prolong_instance);
}

namespace {

// The row of kTemporalPolicies that runs `shape`, through its compiled launcher.
template <typename T>
void launch_pass(const TemporalShape& shape, const TArgs<T>& a) {
  const bool launched = detail::with_compiled_index<kTemporalPolicyCount>(
      [&](std::size_t i) { return kTemporalPolicies[i].runs(a.g.dims, int(sizeof(T)), shape); },
      [&](auto i) { launch_row<T, decltype(i)::value>(a); });
  if (!launched) throw BackendError("temporal blocking: shape " + shape.str() + " is not compiled");
}

}  // namespace

namespace {

// The arguments of a rings pass over all planes that does more than sweep (`what`: measure the
// residual, add a correction), after checking that it can.
template <typename T>
TArgs<T> whole_rings_pass(const char* what, const TemporalShape& shape, const T* u, T* out,
                          const SourceRef<T>& f, const GridDesc& g, const PassCoeffs<T>& c,
                          const BoundaryFaces& bc, cudaStream_t stream) {
  if (!temporal_supported(g, bc))
    throw BackendError("temporal blocking needs Dirichlet or Neumann faces");
  if (shape.memory_only || shape.design != TemporalDesign::Rings)
    throw BackendError(std::string("temporal blocking: ") + what + " by rings passes only");
  return TArgs<T>{u,     out,   f, g, c, ghost_rules<T>(g, bc), shape.chunk, 0, stream_geom(g).ns,
                  false, stream};
}

}  // namespace

template <typename T>
double launch_temporal_norm(const TemporalShape& shape, const T* u, T* out, const SourceRef<T>& f,
                            const GridDesc& g, const PassCoeffs<T>& c, const BoundaryFaces& bc,
                            const StencilCoeffs<T>& rc, ReductionWorkspace& ws, cudaStream_t stream,
                            PlaneRange measured) {
  if (g.interior_size() == 0) return 0.0;
  TArgs<T> a = whole_rings_pass("the residual is measured", shape, u, out, f, g, c, bc, stream);
  a.rc = &rc;
  a.ws = &ws;
  a.norm_lo = std::max(measured.lo, 0);
  a.norm_hi = measured.hi < 0 ? a.p1 : std::min(measured.hi, a.p1);
  launch_pass<T>(shape, a);
  return detail::finish(stream, ws);
}

template <typename T>
void launch_temporal(const TemporalShape& shape, const T* u, T* out, const SourceRef<T>& f,
                     const GridDesc& g, const PassCoeffs<T>& c, const BoundaryFaces& bc,
                     cudaStream_t stream, PlaneRange planes) {
  if (g.nx <= 0 || g.ny <= 0 || (g.dims == 3 && g.nz <= 0)) return;
  const int ns = stream_geom(g).ns;
  const int p0 = std::max(planes.lo, 0), p1 = planes.hi < 0 ? ns : std::min(planes.hi, ns);
  if (p1 <= p0) return;
  if (!temporal_supported(g, bc))
    throw BackendError("temporal blocking needs Dirichlet or Neumann faces");
  if (shape.memory_only && shape.design == TemporalDesign::Rings)
    throw BackendError("temporal blocking: the memory-only twin exists for partial-sums shapes");
  const TArgs<T> a{
      u, out, f, g, c, ghost_rules<T>(g, bc), shape.chunk, p0, p1, shape.memory_only, stream};
  launch_pass<T>(shape, a);
}

template <typename T>
void launch_temporal_prolonged(const TemporalShape& shape, const T* coarse, const GridDesc& gc,
                               const T* u, T* out, const SourceRef<T>& f, const GridDesc& g,
                               const PassCoeffs<T>& c, const BoundaryFaces& bc, int offset,
                               cudaStream_t stream, PlaneRange planes) {
  if (g.interior_size() == 0) return;
  if (!prolonged_grids_fit(g, gc, offset))
    throw BackendError(
        "temporal blocking: a prolonged correction needs a 3D coarse grid of half "
        "the fine one's rows and columns whose planes' children lie in it");
  TArgs<T> a =
      whole_rings_pass("a prolonged correction is added", shape, u, out, f, g, c, bc, stream);
  a.p0 = std::max(planes.lo, 0);
  a.p1 = planes.hi < 0 ? a.p1 : std::min(planes.hi, a.p1);
  if (a.p1 <= a.p0) return;
  a.prolong = {coarse + gc.index(0, 0, 0),
               static_cast<long long>(gc.stride_y()),
               static_cast<long long>(gc.stride_z()),
               gc.nx,
               gc.ny,
               offset};
  launch_pass<T>(shape, a);
}

template <typename T>
void launch_temporal(const TemporalShape& shape, const T* u, T* out, const SourceRef<T>& f,
                     const GridDesc& g, const StencilCoeffs<T>& c, const BoundaryFaces& bc,
                     cudaStream_t stream, PlaneRange planes) {
  launch_temporal<T>(shape, u, out, f, g, PassCoeffs<T>::uniform(c), bc, stream, planes);
}

#define HS_INSTANTIATE(T)                                                                          \
  template std::vector<TemporalShape> temporal_shapes<T>(int);                                     \
  template const std::vector<int>& temporal_steps<T>(int);                                         \
  template TemporalShape temporal_default_shape<T>(int, int);                                      \
  template void launch_temporal<T>(const TemporalShape&, const T*, T*, const SourceRef<T>&,        \
                                   const GridDesc&, const StencilCoeffs<T>&, const BoundaryFaces&, \
                                   cudaStream_t, PlaneRange);                                      \
  template void launch_temporal<T>(const TemporalShape&, const T*, T*, const SourceRef<T>&,        \
                                   const GridDesc&, const PassCoeffs<T>&, const BoundaryFaces&,    \
                                   cudaStream_t, PlaneRange);                                      \
  template bool temporal_norm_compiled<T>(const TemporalShape&, int);                              \
  template bool temporal_prolong_compiled<T>(const TemporalShape&, int);                           \
  template void load_temporal_multigrid_kernels<T>();                                              \
  template void launch_temporal_prolonged<T>(                                                      \
      const TemporalShape&, const T*, const GridDesc&, const T*, T*, const SourceRef<T>&,          \
      const GridDesc&, const PassCoeffs<T>&, const BoundaryFaces&, int, cudaStream_t, PlaneRange); \
  template double launch_temporal_norm<T>(const TemporalShape&, const T*, T*, const SourceRef<T>&, \
                                          const GridDesc&, const PassCoeffs<T>&,                   \
                                          const BoundaryFaces&, const StencilCoeffs<T>&,           \
                                          ReductionWorkspace&, cudaStream_t, PlaneRange);
HS_INSTANTIATE(float)
HS_INSTANTIATE(double)
#undef HS_INSTANTIATE

}  // namespace heatsolve::cuda
