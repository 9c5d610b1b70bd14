// Dispatch of the temporal-blocking kernels: a table of compiled (k, dims, shape) instances.
#include <algorithm>
#include <sstream>
#include <type_traits>

#include "kernels/backend.hpp"
#include "kernels/stencil/cuda/chunking.hpp"
#include "kernels/stencil/cuda/stencil_launch.cuh"
#include "kernels/stencil/cuda/temporal_kernels.cuh"
#include "kernels/stencil/cuda/temporal_launch.cuh"

namespace heatsolve::cuda {

std::string TemporalShape::str() const {
  std::ostringstream s;
  s << 'k' << k << "/32x" << by << "/ry" << ry << "/vx" << vx;
  if (design == TemporalDesign::PartialSums) s << "/partial";
  if (design == TemporalDesign::StagedPartialSums) s << "/staged";
  if (memory_only) s << "/memory";
  if (chunk) s << "/c" << chunk;
  return s.str();
}

bool temporal_supported(const GridDesc& g, const BoundaryFaces& bc) {
  for (int f = 0; f < 2 * g.dims; ++f)
    if (!has_ghost_rule(bc[f].type)) return false;
  return true;
}

namespace {

template <typename T>
struct TArgs {
  const T* u;
  T* out;
  SourceRef<T> f;
  GridDesc g;
  StencilCoeffs<T> c;
  GhostRules<T> rules;
  int chunk;
  int p0, p1;  // stored planes of the stream axis
  bool memory_only;
  cudaStream_t stream;
};

template <typename T, TemporalDesign DESIGN, int DIM, int K, int BY, int RY, int VX, int SRC>
void launch_one(const TArgs<T>& a) {
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
  // Also raises the instance's shared memory limit where it needs more than 48 KB.
  const int per_sm = resident_blocks_per_sm(reinterpret_cast<const void*>(kern), 32 * BY, smem);
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
  } else {
    kern<<<grid, dim3(32, BY), smem, a.stream>>>(a.u, a.out, a.f, s, a.c, a.rules, chunk, a.p0,
                                                 a.p1);
  }
  CUDA_CHECK_LAUNCH();
}

// A shape's instances without, with a stored and with a generated source term (no per-point
// test, and no source staging where there is none).
template <typename T, TemporalDesign DESIGN, int DIM, int K, int BY, int RY, int VX>
void launch_shape(const TArgs<T>& a) {
  if (a.f.plane)
    launch_one<T, DESIGN, DIM, K, BY, RY, VX, kSourceGenerated>(a);
  else if (a.f.field)
    launch_one<T, DESIGN, DIM, K, BY, RY, VX, kSourceStaged>(a);
  else
    launch_one<T, DESIGN, DIM, K, BY, RY, VX, kSourceNone>(a);
}

struct TEntry {
  int dims;
  TemporalShape shape;
  void (*fn_float)(const TArgs<float>&);
  void (*fn_double)(const TArgs<double>&);
  int only;  // 0: both precisions; 4 / 8: only that sizeof(T)
};

// Instantiates only the precisions a table entry is for (ONLY: 0 both, 4 float, 8 double).
template <typename T, int ONLY, TemporalDesign DESIGN, int D, int K, int BY, int RY, int VX>
constexpr void (*pick())(const TArgs<T>&) {
  if constexpr (ONLY == 0 || ONLY == int(sizeof(T)))
    return &launch_shape<T, DESIGN, D, K, BY, RY, VX>;
  else
    return nullptr;
}

#define HS_T_DESIGN(DESIGN, D, K, BY, RY, VX, ONLY)                               \
  TEntry {                                                                        \
    D, {K, BY, RY, VX, 0, DESIGN}, pick<float, ONLY, DESIGN, D, K, BY, RY, VX>(), \
        pick<double, ONLY, DESIGN, D, K, BY, RY, VX>(), ONLY                      \
  }
#define HS_T(D, K, BY, RY, VX, ONLY) HS_T_DESIGN(TemporalDesign::Rings, D, K, BY, RY, VX, ONLY)
#define HS_P(D, K, BY, RY, VX, ONLY) \
  HS_T_DESIGN(TemporalDesign::PartialSums, D, K, BY, RY, VX, ONLY)
#define HS_S(D, K, BY, RY, VX, ONLY) \
  HS_T_DESIGN(TemporalDesign::StagedPartialSums, D, K, BY, RY, VX, ONLY)

// The first entry per (dims, k, precision) is the default. The stage rings cost 2 K RY VX
// values per thread (ptxas -v: 64-138 registers in float, 124-172 in double).
const std::vector<TEntry>& ttable() {
  static const std::vector<TEntry> t = {
      // 3D float k = 2: partial sums, 32x4 ry4 vx2 (96 registers, 5 blocks of 128 threads per
      // SM): faster than the rings 32x8 below and than taller partial-sums blocks. 3D double
      // k = 2: the rings 32x4 stays the default; the partial-sums shape is within the
      // run-to-run spread of it (listed for bench and tests).
      HS_P(3, 2, 4, 4, 2, 4),
      HS_T(3, 2, 4, 4, 2, 8),
      // 3D float k = 3: staged partial sums, 32x8 ry4 vx2 (128 registers, 2 blocks of 256
      // threads per SM), the fastest 3D float pass (docs/performance.md). A k = 2 pass runs at
      // its memory traffic's rate (the memory-only twin); a third step per pass moves a third
      // less per step for more halo arithmetic, which the taller tile pays for (58 x 26
      // useful cells of 64 x 32). The same tile with register input is slower (not compiled).
      HS_S(3, 3, 8, 4, 2, 4),
      HS_P(3, 2, 4, 4, 2, 8),
      // Rings, 3D. k = 2: 8 cells per thread (ry4 vx2) share the per-iteration work (loads,
      // stores, halo rows, barrier) that dominates the instruction count (ncu). Float 32x8
      // (128 registers, 2 blocks of 256 threads per SM). Double: 32x4 (168 registers: 3
      // blocks of 128 threads per SM, where 32x8 fits one): the extra warps outweigh its
      // smaller tiles (60 x 12 useful cells).
      HS_T(3, 2, 8, 4, 2, 0),
      HS_T(3, 2, 16, 2, 2, 4),
      HS_T(3, 2, 8, 4, 1, 0),
      // 3D float k = 4: staged partial sums, 32x8 ry4 vx2 (192 registers, one block of 256
      // threads per SM): faster than the rings 32x16 that follows.
      HS_S(3, 4, 8, 4, 2, 4),
      HS_T(3, 4, 16, 2, 2, 4),
      HS_T(3, 4, 16, 2, 1, 0),
      HS_T(3, 4, 8, 4, 1, 4),
      HS_T(3, 8, 16, 2, 2, 4),
      HS_T(3, 8, 16, 2, 1, 0),
      // 2D (warps are independent x tiles)
      HS_T(2, 2, 4, 1, 4, 0),
      HS_T(2, 4, 4, 1, 4, 4),
      HS_T(2, 4, 4, 1, 2, 0),
      HS_T(2, 8, 4, 1, 2, 0),
  };
  return t;
}
#undef HS_S
#undef HS_P
#undef HS_T
#undef HS_T_DESIGN

template <typename T>
bool usable(const TEntry& e, int dims) {
  return e.dims == dims && (e.only == 0 || e.only == int(sizeof(T)));
}

}  // namespace

template <typename T>
std::vector<TemporalShape> temporal_shapes(int dims) {
  std::vector<TemporalShape> out;
  for (const TEntry& e : ttable())
    if (usable<T>(e, dims)) out.push_back(e.shape);
  return out;
}

template <typename T>
const std::vector<int>& temporal_steps(int dims) {
  static const auto compiled = [](int d) {
    std::vector<int> ks;
    for (const TEntry& e : ttable())
      if (usable<T>(e, d) && std::find(ks.begin(), ks.end(), e.shape.k) == ks.end())
        ks.push_back(e.shape.k);
    std::sort(ks.rbegin(), ks.rend());
    return ks;
  };
  static const std::vector<int> ks2 = compiled(2), ks3 = compiled(3);
  return dims == 3 ? ks3 : ks2;
}

template <typename T>
TemporalShape temporal_default_shape(int dims, int k) {
  for (const TEntry& e : ttable())
    if (usable<T>(e, dims) && e.shape.k == k) return e.shape;
  throw BackendError("temporal blocking: k = " + std::to_string(k) + " is not compiled for " +
                     std::to_string(dims) + "D");
}

template <typename T>
void launch_temporal(const TemporalShape& shape, const T* u, T* out, const SourceRef<T>& f,
                     const GridDesc& g, const StencilCoeffs<T>& c, const BoundaryFaces& bc,
                     cudaStream_t stream, PlaneRange planes) {
  if (g.nx <= 0 || g.ny <= 0 || (g.dims == 3 && g.nz <= 0)) return;
  const int ns = stream_geom(g).ns;
  const int p0 = std::max(planes.lo, 0), p1 = planes.hi < 0 ? ns : std::min(planes.hi, ns);
  if (p1 <= p0) return;
  if (!temporal_supported(g, bc))
    throw BackendError("temporal blocking needs Dirichlet or Neumann faces");
  if (shape.memory_only && shape.design == TemporalDesign::Rings)
    throw BackendError("temporal blocking: the memory-only twin exists for partial-sums shapes");
  for (const TEntry& e : ttable()) {
    if (!usable<T>(e, g.dims) || e.shape.k != shape.k || e.shape.by != shape.by ||
        e.shape.ry != shape.ry || e.shape.vx != shape.vx || e.shape.design != shape.design)
      continue;
    const TArgs<T> a{
        u, out, f, g, c, ghost_rules<T>(g, bc), shape.chunk, p0, p1, shape.memory_only, stream};
    if constexpr (sizeof(T) == sizeof(float))
      e.fn_float(a);
    else
      e.fn_double(a);
    return;
  }
  throw BackendError("temporal blocking: shape " + shape.str() + " is not compiled");
}

#define HS_INSTANTIATE(T)                                                                          \
  template std::vector<TemporalShape> temporal_shapes<T>(int);                                     \
  template const std::vector<int>& temporal_steps<T>(int);                                         \
  template TemporalShape temporal_default_shape<T>(int, int);                                      \
  template void launch_temporal<T>(const TemporalShape&, const T*, T*, const SourceRef<T>&,        \
                                   const GridDesc&, const StencilCoeffs<T>&, const BoundaryFaces&, \
                                   cudaStream_t, PlaneRange);
HS_INSTANTIATE(float)
HS_INSTANTIATE(double)
#undef HS_INSTANTIATE

}  // namespace heatsolve::cuda
