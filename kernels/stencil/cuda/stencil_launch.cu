// Dispatch of the stencil ladder: one host launcher template per rung, on precision + policy,
// and the launch of the row of kStencilPolicies (core/stencil_policies.hpp) a shape names, through
// the dispatch shared with the temporal passes and the tuned reductions (compiled_choice.cuh).
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "kernels/cuda/compiled_choice.cuh"
#include "kernels/device.hpp"
#include "kernels/stencil/cuda/chunking.hpp"
#include "kernels/stencil/cuda/stencil_kernels.cuh"
#include "kernels/stencil/cuda/stencil_launch.cuh"

namespace heatsolve::cuda {

namespace {
// An attribute of the current device, read once per (device, attribute): launchers ask for the
// SM count before every launch.
int current_device_attribute(cudaDeviceAttr attr) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, int> cache;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(dev, int(attr));
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  int value = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, dev));
  return cache[key] = value;
}
}  // namespace

int current_sm_count() {
  return current_device_attribute(cudaDevAttrMultiProcessorCount);
}

int resident_blocks_per_sm(const void* kernel, int threads, std::size_t smem) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, int> cache;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  const auto it = cache.find({kernel, dev});
  if (it != cache.end()) return it->second;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int blocks = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, smem));
  if (blocks < 1)
    throw BackendError("a kernel shape (" + std::to_string(threads) + " threads, " +
                       std::to_string(smem) +
                       " bytes of shared memory per block) does not fit on this device");
  cache.emplace(std::make_pair(kernel, dev), blocks);
  return blocks;
}

namespace {

template <typename T>
struct Args {
  const T* u;
  T* out;
  SourceRef<T> f;
  GridDesc g;
  StencilCoeffs<T> c;
  int chunk;  // planes per block for the streaming rungs (0 = auto)
  cudaStream_t stream;
  GhostRules<T> rules;  // active != 0: the kernel applies them (stencil_applies_rules)
};

// Row I of kStencilPolicies (core/stencil_policies.hpp) as a type: the launchers below are
// templates on precision + policy and read the shape's named fields.
template <std::size_t I>
struct PolicyRow {
  static constexpr StencilPolicy policy = kStencilPolicies[I];
  static constexpr StencilShape shape = policy.shape;
  static constexpr int dims = policy.dims;
};

// ---- one launcher per rung ----------------------------------------------------------------
template <typename T, class P>
void launch_naive(const Args<T>& a) {
  constexpr int DIM = P::dims, BX = P::shape.bx, BY = P::shape.by, BZ = P::shape.bz;
  const dim3 grid(cdiv(a.g.nx, BX), cdiv(a.g.ny, BY), DIM == 3 ? cdiv(a.g.nz, BZ) : 1);
  const auto kernel = a.rules.active ? stencil_naive_kernel<T, DIM, BX, BY, BZ, true>
                                     : stencil_naive_kernel<T, DIM, BX, BY, BZ, false>;
  kernel<<<grid, dim3(BX, BY, BZ), 0, a.stream>>>(a.u, a.out, a.f, a.g, a.c, a.rules);
  CUDA_CHECK_LAUNCH();
}

// shared (WARPS = false) and nondivergent (WARPS = true: the halo loaded by whole warps).
template <typename T, class P, bool WARPS>
void launch_tiled(const Args<T>& a) {
  constexpr int DIM = P::dims, BX = P::shape.bx, BY = P::shape.by, BZ = P::shape.bz;
  const dim3 grid(cdiv(a.g.nx, BX), cdiv(a.g.ny, BY), DIM == 3 ? cdiv(a.g.nz, BZ) : 1);
  stencil_tiled_kernel<T, DIM, BX, BY, BZ, WARPS>
      <<<grid, dim3(BX, BY, BZ), 0, a.stream>>>(a.u, a.out, a.f, a.g, a.c);
  CUDA_CHECK_LAUNCH();
}

// Grid of a streaming rung: tiles of the plane times chunks of the stream axis. chunk <= 0:
// planes(tiles), the rung's rule of kernels/stencil/cuda/chunking.hpp (default: auto_chunk).
template <class Planes>
dim3 stream_grid(const StreamGeom& s, int tile_x, int tile_y, int& chunk, Planes&& planes) {
  const int tx = cdiv(s.nx, tile_x), ty = cdiv(s.ny_plane, tile_y);
  if (chunk <= 0) chunk = planes(tx * ty);
  chunk = std::min(chunk, s.ns);
  return dim3(tx, ty, cdiv(s.ns, chunk));
}
inline dim3 stream_grid(const StreamGeom& s, int tile_x, int tile_y, int& chunk) {
  return stream_grid(s, tile_x, tile_y, chunk,
                     [&](int tiles) { return auto_chunk(tiles, s.ns, 16 * current_sm_count()); });
}

// 2.5d (SINGLE = false: two shared slices) and 2.5d-single-slice (SINGLE = true).
template <typename T, class P, bool SINGLE>
void launch_streaming(const Args<T>& a) {
  constexpr int DIM = P::dims, BX = P::shape.bx, BY = P::shape.by;
  const StreamGeom s = stream_geom(a.g);
  int chunk = a.chunk;
  const dim3 grid = stream_grid(s, BX, BY, chunk);
  stencil_streaming_kernel<T, DIM, BX, BY, SINGLE>
      <<<grid, dim3(BX, BY), 0, a.stream>>>(a.u, a.out, a.f, s, a.c, chunk);
  CUDA_CHECK_LAUNCH();
}

template <typename T, class P>
void launch_register(const Args<T>& a) {
  constexpr int DIM = P::dims, BX = P::shape.bx, BY = P::shape.by, RY = P::shape.ry,
                PD = P::shape.pd, VX = P::shape.vx, MINB = P::policy.launch_min_blocks();
  const StreamGeom s = stream_geom(a.g);
  // VX = 2: aligned vector accesses where the grid and buffers allow them; the block columns
  // then start at -1.
  const int xshift = VX == 2 ? pair_vector_shift<T>(a.g, a.u, a.out) : 0;
  int chunk = a.chunk;
  const dim3 grid = stream_grid(s, BX * VX, BY * RY, chunk, [&](int tiles) {
    return register_chunk(DIM, tiles, s.ns, current_sm_count());
  });
  const dim3 g2(VX == 2 ? cdiv(s.nx + xshift, BX * VX) : grid.x, grid.y, grid.z);
  stencil_register_kernel<T, DIM, BX, BY, RY, PD, VX, MINB>
      <<<g2, dim3(BX, BY), 0, a.stream>>>(a.u, a.out, a.f, s, a.c, chunk, xshift);
  CUDA_CHECK_LAUNCH();
}

template <typename T, class P>
void launch_async(const Args<T>& a) {
  constexpr int DIM = P::dims, TX = P::shape.bx, BY = P::shape.by, RY = P::shape.ry,
                S = P::shape.st, CB = P::shape.cb, MINB = P::policy.launch_min_blocks();
  constexpr int TY = DIM == 3 ? BY * RY : 1;
  constexpr std::size_t smem = AsyncTile<T, DIM, TX, TY, S, CB>::SMEM_BYTES;
  const auto kernel = stencil_async_kernel<T, DIM, TX, BY, RY, S, CB, MINB>;
  const int per_sm = resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), TX * BY, smem);
  const StreamGeom s = stream_geom(a.g);
  int chunk = a.chunk;
  const dim3 grid = stream_grid(s, TX, TY, chunk, [&](int tiles) {
    return one_round_chunk(tiles, s.ns, per_sm * current_sm_count(), current_sm_count());
  });
  kernel<<<grid, dim3(TX, BY), smem, a.stream>>>(a.u, a.out, a.f, s, a.c, chunk);
  CUDA_CHECK_LAUNCH();
}

// 2.5d-tma: one instance per kind of source term (no per-point test); a generated source keeps
// the tile's plane factors in shared memory after the stages.
template <typename T, class P>
void launch_tma(const Args<T>& a) {
  constexpr int DIM = P::dims, TX = P::shape.bx, BY = P::shape.by, RY = P::shape.ry,
                S = P::shape.st, MINB = P::policy.launch_min_blocks();
  constexpr int TY = DIM == 3 ? BY * RY : 1;
  const std::size_t smem =
      TmaTile<T, DIM, TX, TY, S>::SMEM_BYTES + (a.f.plane ? std::size_t(TY) * TX * sizeof(T) : 0);
  const StencilVariantRow& row = stencil_variant_row(StencilVariant::Tma25D);
  if (!stencil_variant_supported(row.variant))
    throw BackendError(std::string("stencil variant '") + row.name +
                       "' needs a device of compute capability " +
                       std::to_string(row.min_compute_capability / 10) + "." +
                       std::to_string(row.min_compute_capability % 10) + "+");
  const StreamGeom s = stream_geom(a.g);
  if (s.sy > (std::int64_t(1) << 30) / RY)
    throw BackendError(std::string(row.name) + ": rows too long for 32-bit row offsets");
  const auto kernel = a.f.plane ? stencil_tma_kernel<T, DIM, TX, BY, RY, S, MINB, kSourceGenerated>
                      : a.f.field ? stencil_tma_kernel<T, DIM, TX, BY, RY, S, MINB, kSourceStaged>
                                  : stencil_tma_kernel<T, DIM, TX, BY, RY, S, MINB, kSourceNone>;
  const int per_sm = resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), TX * BY, smem);
  int chunk = a.chunk;
  const dim3 grid = stream_grid(s, TX, TY, chunk, [&](int tiles) {
    return tma_chunk(DIM, int(sizeof(T)), tiles, s.ns, per_sm * current_sm_count(),
                     current_sm_count());
  });
  kernel<<<grid, dim3(TX, BY), smem, a.stream>>>(a.u, a.out, a.f, s, a.c, chunk, a.rules);
  CUDA_CHECK_LAUNCH();
}

// The rung launcher of a policy row: the one place a variant meets its kernel. Rows of the
// other precision instantiate nothing (the dispatcher never selects them).
template <typename T, class P>
void launch_row(const Args<T>& a) {
  using V = StencilVariant;
  constexpr V v = P::policy.variant;
  if constexpr (!P::policy.compiled_for(int(sizeof(T)))) {
    (void)a;
  } else if constexpr (v == V::Naive) {
    launch_naive<T, P>(a);
  } else if constexpr (v == V::Shared || v == V::NonDivergent) {
    launch_tiled<T, P, v == V::NonDivergent>(a);
  } else if constexpr (v == V::Streaming25D || v == V::SingleSlice25D) {
    launch_streaming<T, P, v == V::SingleSlice25D>(a);
  } else if constexpr (v == V::Register25D) {
    launch_register<T, P>(a);
  } else if constexpr (v == V::Async25D) {
    launch_async<T, P>(a);
  } else {
    static_assert(v == V::Tma25D, "a stencil variant without a launcher");
    launch_tma<T, P>(a);
  }
}

}  // namespace

template <typename T>
StencilShape resolve_shape(StencilVariant v, int dims, const std::array<int, 3>& block) {
  const std::optional<StencilShape> s = resolve_stencil_block(v, dims, int(sizeof(T)), block);
  if (!s) throw BackendError(stencil_block_error(v, dims, int(sizeof(T)), block));
  return *s;
}

bool stencil_applies_rules(StencilVariant v, const BoundaryFaces& bc) {
  if (!stencil_variant_row(v).rules_in_sweep) return false;
  // The in-sweep rules are Dirichlet and Neumann (GhostRules); Robin and Fixed faces take the
  // ghost-fill pass.
  for (const FaceBC& face : bc)
    if (face.type == BoundaryType::Periodic || face.type == BoundaryType::Robin ||
        face.type == BoundaryType::Fixed)
      return false;
  return true;
}

template <typename T>
void launch_stencil(StencilVariant v, const StencilShape& shape, const T* u, T* out,
                    const SourceRef<T>& f, const GridDesc& g, const StencilCoeffs<T>& c,
                    cudaStream_t stream, const BoundaryFaces* rules) {
  if (rules && !stencil_applies_rules(v, *rules))
    throw BackendError(std::string("stencil variant '") + stencil_variant_name(v) +
                       "' cannot apply these boundary rules itself");
  if (g.nx <= 0 || g.ny <= 0 || (g.dims == 3 && g.nz <= 0)) return;
  const bool streaming = stencil_variant_row(v).streaming;
  const Args<T> a{u,      out,
                  f,      g,
                  c,      streaming ? shape.bz : 0,
                  stream, rules ? ghost_rules<T>(g, *rules) : GhostRules<T>{}};
  // The row of kStencilPolicies this launch runs, through its compiled launcher.
  const bool launched = detail::with_compiled_index<kStencilPolicyCount>(
      [&](std::size_t i) { return kStencilPolicies[i].runs(v, g.dims, int(sizeof(T)), shape); },
      [&](auto i) { launch_row<T, PolicyRow<decltype(i)::value>>(a); });
  if (!launched)
    throw BackendError(std::string("stencil variant '") + stencil_variant_name(v) +
                       "' is not compiled with shape " + shape.str());
}

// ---- ghost fill: one kernel for all faces -------------------------------------------------
// One grid z-slice per face (blockIdx.z = face), a 2D thread grid over the face's two
// tangential coordinates (a fastest), no integer division per ghost cell. x faces cover
// (j, k), y faces (i, k), z faces (i, j); faces cover only interior tangential ranges, so no
// two threads write the same ghost. The x faces touch one DRAM sector per row whatever the
// indexing (59 us at 512^3 on an H200): the heat loop avoids this pass where the sweep
// applies the rules itself (Backend::stencil_with_boundary).
template <typename T>
__global__ void apply_boundary_kernel(T* __restrict__ u, GridDesc g, AffineGhostRules<T> rules) {
  const int face = blockIdx.z;
  const bool periodic = (rules.periodic >> face) & 1u;
  if (!periodic && !((rules.active >> face) & 1u)) return;  // Exchange: left untouched
  const int axis = face >> 1;
  const bool hi = face & 1;
  const int na = axis == 0 ? g.ny : g.nx;
  const int nb = g.dims == 3 ? (axis == 2 ? g.ny : g.nz) : 1;
  const int a = blockIdx.x * blockDim.x + threadIdx.x;
  const int b = blockIdx.y * blockDim.y + threadIdx.y;
  if (a >= na || b >= nb) return;
  const int n = axis == 0 ? g.nx : axis == 1 ? g.ny : g.nz;  // extent across the face
  // The cell the rule reads: the inner neighbour, or for periodic faces the opposite side
  // (only that one is read: each read of an x-face cell costs a DRAM sector of its own).
  const int ghost_at = hi ? n : -1, source_at = (hi != periodic) ? n - 1 : 0;
  const std::int64_t base = axis == 0   ? g.index(0, a, b)
                            : axis == 1 ? g.index(a, 0, b)
                                        : g.index(a, b, 0);
  const std::int64_t step = axis == 0 ? 1 : axis == 1 ? g.stride_y() : g.stride_z();
  const T source = u[base + source_at * step];
  u[base + ghost_at * step] = periodic ? source : ghost_rule(rules, face, source);
}

template <typename T>
void launch_apply_boundary(T* u, const GridDesc& g, const BoundaryFaces& bc, cudaStream_t stream) {
  if (g.interior_size() == 0) return;
  const bool d3 = g.dims == 3;
  const dim3 block(d3 ? 32 : 256, d3 ? 8 : 1);
  const int max_a = std::max(g.nx, g.ny), max_b = d3 ? std::max(g.ny, g.nz) : 1;
  const dim3 grid((max_a + block.x - 1) / block.x, (max_b + block.y - 1) / block.y, d3 ? 6 : 4);
  apply_boundary_kernel<T><<<grid, block, 0, stream>>>(u, g, affine_ghost_rules<T>(g, bc));
  CUDA_CHECK_LAUNCH();
}

bool sweeps_fit_block(const GridDesc& g, const BoundaryFaces& bc, long long max_cells) {
  if (static_cast<long long>(g.interior_size()) > max_cells) return false;
  for (int face = 0; face < 2 * g.dims; ++face)
    if (bc[face].type != BoundaryType::Dirichlet && bc[face].type != BoundaryType::Neumann)
      return false;  // ghosts that another rank or the opposite face would have to refresh
  return true;
}

template <typename T>
void launch_sweeps_in_block(T** cur, T** other, const SourceRef<T>& f, const GridDesc& g,
                            const StencilCoeffs<T>* c, int n, const BoundaryFaces& bc,
                            cudaStream_t stream) {
  const GhostRules<T> rules = ghost_rules<T>(g, bc);
  const long long cells = g.interior_size();
  const int threads = int(std::min<long long>(kSweepBlockThreads, (cells + 31) / 32 * 32));
  for (int s = 0; s < n; s += PassCoeffs<T>::kMaxSteps) {
    const int m = std::min(n - s, PassCoeffs<T>::kMaxSteps);
    PassCoeffs<T> pass;
    for (int i = 0; i < m; ++i) pass.step[i] = c[s + i];
    const auto kernel =
        g.dims == 3 ? stencil_sweeps_block_kernel<T, 3> : stencil_sweeps_block_kernel<T, 2>;
    kernel<<<1, threads, 0, stream>>>(*cur, *other, f, g, pass, m, rules);
    CUDA_CHECK_LAUNCH();
    if (m % 2) std::swap(*cur, *other);
  }
}

#define HS_INSTANTIATE(T)                                                                          \
  template StencilShape resolve_shape<T>(StencilVariant, int, const std::array<int, 3>&);          \
  template void launch_stencil<T>(StencilVariant, const StencilShape&, const T*, T*,               \
                                  const SourceRef<T>&, const GridDesc&, const StencilCoeffs<T>&,   \
                                  cudaStream_t, const BoundaryFaces*);                             \
  template void launch_apply_boundary<T>(T*, const GridDesc&, const BoundaryFaces&, cudaStream_t); \
  template void launch_sweeps_in_block<T>(T**, T**, const SourceRef<T>&, const GridDesc&,          \
                                          const StencilCoeffs<T>*, int, const BoundaryFaces&,      \
                                          cudaStream_t);
HS_INSTANTIATE(float)
HS_INSTANTIATE(double)
#undef HS_INSTANTIATE

}  // namespace heatsolve::cuda
