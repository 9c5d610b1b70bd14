// Dispatch of the stencil ladder: one host launcher template per rung, a table of the
// compiled (variant, dimension, shape) instances, and the variant names.
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

#include "kernels/stencil/cuda/chunking.hpp"
#include "kernels/stencil/cuda/stencil_kernels.cuh"
#include "kernels/stencil/cuda/stencil_launch.cuh"

namespace heatsolve {

namespace cuda {
namespace {
// An attribute of the current device, read once per (device, attribute).
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
}  // namespace cuda

bool stencil_variant_supported(StencilVariant v) {
  const int need = stencil_variant_row(v).min_compute_capability;
  if (need == 0) return true;
  return 10 * cuda::current_device_attribute(cudaDevAttrComputeCapabilityMajor) +
             cuda::current_device_attribute(cudaDevAttrComputeCapabilityMinor) >=
         need;
}

namespace cuda {

std::string StencilShape::str() const {
  std::ostringstream s;
  s << bx << 'x' << by << 'x' << bz;
  if (ry != 1) s << "/ry" << ry;
  if (pd != 0) s << "/pd" << pd;
  if (vx != 1) s << "/vx" << vx;
  if (mb != 0) s << "/mb" << mb;
  if (st != 0) s << "/st" << st;
  if (cb != 0) s << "/cb" << cb;
  return s.str();
}

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
  GhostRules<T> rules;  // active != 0: 2.5d-tma applies them (stencil_applies_rules)
};

// ---- one launcher per rung ----------------------------------------------------------------
template <typename T, int DIM, int BX, int BY, int BZ>
void launch_naive(const Args<T>& a) {
  const dim3 grid(cdiv(a.g.nx, BX), cdiv(a.g.ny, BY), DIM == 3 ? cdiv(a.g.nz, BZ) : 1);
  stencil_naive_kernel<T, DIM, BX, BY, BZ>
      <<<grid, dim3(BX, BY, BZ), 0, a.stream>>>(a.u, a.out, a.f, a.g, a.c);
  CUDA_CHECK_LAUNCH();
}

template <typename T, int DIM, int BX, int BY, int BZ, bool WARPS>
void launch_tiled(const Args<T>& a) {
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

template <typename T, int DIM, int BX, int BY, bool SINGLE>
void launch_streaming(const Args<T>& a) {
  const StreamGeom s = stream_geom(a.g);
  int chunk = a.chunk;
  const dim3 grid = stream_grid(s, BX, BY, chunk);
  stencil_streaming_kernel<T, DIM, BX, BY, SINGLE>
      <<<grid, dim3(BX, BY), 0, a.stream>>>(a.u, a.out, a.f, s, a.c, chunk);
  CUDA_CHECK_LAUNCH();
}

template <typename T, int DIM, int BX, int BY, int RY, int PD, int VX = 1, int MINB = 1>
void launch_register(const Args<T>& a) {
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

template <typename T, int DIM, int TX, int BY, int RY, int S, int CB, int MINB>
void launch_async(const Args<T>& a) {
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
template <typename T, int DIM, int TX, int BY, int RY, int S, int MINB>
void launch_tma(const Args<T>& a) {
  constexpr int TY = DIM == 3 ? BY * RY : 1;
  const std::size_t smem =
      TmaTile<T, DIM, TX, TY, S>::SMEM_BYTES + (a.f.plane ? std::size_t(TY) * TX * sizeof(T) : 0);
  if (!stencil_variant_supported(StencilVariant::Tma25D))
    throw BackendError(std::string("stencil variant '") +
                       stencil_variant_name(StencilVariant::Tma25D) +
                       "' needs a device of compute capability 9.0+");
  const StreamGeom s = stream_geom(a.g);
  if (s.sy > (std::int64_t(1) << 30) / RY)
    throw BackendError("2.5d-tma: rows too long for 32-bit row offsets");
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

// ---- the table of compiled instances ------------------------------------------------------
struct Entry {
  StencilVariant v;
  int dims;
  StencilShape shape;
  void (*fn_float)(const Args<float>&);
  void (*fn_double)(const Args<double>&);
  int only;  // 0: both precisions; 4 / 8: only that sizeof(T) (in the shape list)
};

using SV = StencilVariant;
#define HS_ENTRY(V, D, X, Y, Z, RY, ONLY, LAUNCH, ...) \
  HS_ENTRY_PD(V, D, X, Y, Z, RY, 0, ONLY, LAUNCH, __VA_ARGS__)
#define HS_ENTRY_PD(V, D, X, Y, Z, RY, PD, ONLY, LAUNCH, ...)                                      \
  Entry {                                                                                          \
    V, D, {X, Y, Z, RY, PD}, &LAUNCH<float, D, __VA_ARGS__>, &LAUNCH<double, D, __VA_ARGS__>, ONLY \
  }
// 2.5d-register with VX columns per thread and a register cap (MB resident blocks).
#define HS_ENTRY_VX(D, X, Y, RY, PD, VX, MB, ONLY)                             \
  Entry {                                                                      \
    SV::Register25D, D, {X, Y, 0, RY, PD, VX, MB},                             \
        &launch_register<float, D, X, Y, RY, PD, VX, (MB > 0 ? MB : 1)>,       \
        &launch_register<double, D, X, Y, RY, PD, VX, (MB > 0 ? MB : 1)>, ONLY \
  }

// 2.5d-async: TX x BY threads, RY rows per thread (tile TX x BY*RY), S ring stages, CB bytes
// per cp.async where aligned, MB minimum resident blocks (register cap; 0 = none).
// Only the precisions an entry lists are instantiated (the other pointer is null: usable()
// never selects it).
template <typename T, int ONLY, int D, int X, int BY, int RY, int S, int CB, int MB>
constexpr void (*async_launcher())(const Args<T>&) {
  if constexpr (ONLY == 0 || ONLY == int(sizeof(T)))
    return &launch_async<T, D, X, BY, RY, S, CB, (MB > 0 ? MB : 1)>;
  else
    return nullptr;
}
#define HS_ENTRY_ASYNC(D, X, BY, RY, S, CB, MB, ONLY)                 \
  Entry {                                                             \
    SV::Async25D, D, {X, BY, 0, RY, 0, 1, MB, S, CB},                 \
        async_launcher<float, ONLY, D, X, BY, RY, S, CB, MB>(),       \
        async_launcher<double, ONLY, D, X, BY, RY, S, CB, MB>(), ONLY \
  }

// 2.5d-tma: bx x by threads, ry rows per thread (tile bx x by*ry), st ring stages, mb minimum
// resident blocks.
template <typename T, int ONLY, int D, int X, int BY, int RY, int S, int MB>
constexpr void (*tma_launcher())(const Args<T>&) {
  if constexpr (ONLY == 0 || ONLY == int(sizeof(T)))
    return &launch_tma<T, D, X, BY, RY, S, (MB > 0 ? MB : 1)>;
  else
    return nullptr;
}
#define HS_ENTRY_TMA(D, X, BY, RY, S, MB, ONLY)                 \
  Entry {                                                       \
    SV::Tma25D, D, {X, BY, 0, RY, 0, 1, MB, S, 0},              \
        tma_launcher<float, ONLY, D, X, BY, RY, S, MB>(),       \
        tma_launcher<double, ONLY, D, X, BY, RY, S, MB>(), ONLY \
  }

// The first entry per (variant, dims, precision) is the default shape.
const std::vector<Entry>& table() {
  static const std::vector<Entry> t = {
      // naive
      HS_ENTRY(SV::Naive, 3, 32, 4, 4, 1, 0, launch_naive, 32, 4, 4),
      HS_ENTRY(SV::Naive, 3, 32, 8, 4, 1, 0, launch_naive, 32, 8, 4),
      HS_ENTRY(SV::Naive, 3, 64, 4, 2, 1, 0, launch_naive, 64, 4, 2),
      HS_ENTRY(SV::Naive, 3, 8, 8, 8, 1, 0, launch_naive, 8, 8, 8),
      HS_ENTRY(SV::Naive, 2, 32, 8, 1, 1, 0, launch_naive, 32, 8, 1),
      HS_ENTRY(SV::Naive, 2, 64, 4, 1, 1, 0, launch_naive, 64, 4, 1),
      HS_ENTRY(SV::Naive, 2, 32, 16, 1, 1, 0, launch_naive, 32, 16, 1),
      // shared
      HS_ENTRY(SV::Shared, 3, 32, 4, 4, 1, 0, launch_tiled, 32, 4, 4, false),
      HS_ENTRY(SV::Shared, 3, 32, 8, 4, 1, 0, launch_tiled, 32, 8, 4, false),
      HS_ENTRY(SV::Shared, 3, 8, 8, 8, 1, 0, launch_tiled, 8, 8, 8, false),
      HS_ENTRY(SV::Shared, 2, 32, 8, 1, 1, 0, launch_tiled, 32, 8, 1, false),
      HS_ENTRY(SV::Shared, 2, 32, 16, 1, 1, 0, launch_tiled, 32, 16, 1, false),
      HS_ENTRY(SV::Shared, 2, 64, 8, 1, 1, 0, launch_tiled, 64, 8, 1, false),
      // nondivergent
      HS_ENTRY(SV::NonDivergent, 3, 32, 4, 4, 1, 0, launch_tiled, 32, 4, 4, true),
      HS_ENTRY(SV::NonDivergent, 3, 32, 8, 4, 1, 0, launch_tiled, 32, 8, 4, true),
      HS_ENTRY(SV::NonDivergent, 3, 8, 8, 8, 1, 0, launch_tiled, 8, 8, 8, true),
      HS_ENTRY(SV::NonDivergent, 2, 32, 8, 1, 1, 0, launch_tiled, 32, 8, 1, true),
      HS_ENTRY(SV::NonDivergent, 2, 32, 16, 1, 1, 0, launch_tiled, 32, 16, 1, true),
      HS_ENTRY(SV::NonDivergent, 2, 64, 8, 1, 1, 0, launch_tiled, 64, 8, 1, true),
      // 2.5d (two slices)
      HS_ENTRY(SV::Streaming25D, 3, 32, 16, 0, 1, 0, launch_streaming, 32, 16, false),
      HS_ENTRY(SV::Streaming25D, 3, 32, 8, 0, 1, 0, launch_streaming, 32, 8, false),
      HS_ENTRY(SV::Streaming25D, 3, 64, 8, 0, 1, 0, launch_streaming, 64, 8, false),
      HS_ENTRY(SV::Streaming25D, 2, 128, 1, 0, 1, 0, launch_streaming, 128, 1, false),
      HS_ENTRY(SV::Streaming25D, 2, 256, 1, 0, 1, 0, launch_streaming, 256, 1, false),
      HS_ENTRY(SV::Streaming25D, 2, 512, 1, 0, 1, 0, launch_streaming, 512, 1, false),
      // 2.5d-single-slice
      HS_ENTRY(SV::SingleSlice25D, 3, 32, 8, 0, 1, 0, launch_streaming, 32, 8, true),
      HS_ENTRY(SV::SingleSlice25D, 3, 32, 16, 0, 1, 0, launch_streaming, 32, 16, true),
      HS_ENTRY(SV::SingleSlice25D, 3, 64, 8, 0, 1, 0, launch_streaming, 64, 8, true),
      HS_ENTRY(SV::SingleSlice25D, 2, 128, 1, 0, 1, 0, launch_streaming, 128, 1, true),
      HS_ENTRY(SV::SingleSlice25D, 2, 256, 1, 0, 1, 0, launch_streaming, 256, 1, true),
      HS_ENTRY(SV::SingleSlice25D, 2, 512, 1, 0, 1, 0, launch_streaming, 512, 1, true),
      // 2.5d-register (ours): bx x by threads, ry rows per thread, pd planes prefetched,
      // vx columns per thread (vector accesses), mb minimum resident blocks
      // (defaults: float 64x4 ry4 pd2 capped at 3 blocks/SM = 80 registers; double 128x2 ry4
      // pd3 capped at 2 blocks/SM; the measured best on the H200, docs/performance.md)
      HS_ENTRY_VX(3, 64, 4, 4, 2, 1, 3, 4),
      HS_ENTRY_VX(3, 128, 2, 4, 3, 1, 2, 0),
      HS_ENTRY_VX(3, 64, 4, 4, 2, 2, 0, 0),
      HS_ENTRY_VX(3, 32, 8, 4, 2, 2, 0, 0),
      HS_ENTRY_VX(3, 64, 4, 2, 4, 2, 0, 4),
      HS_ENTRY_VX(3, 64, 4, 4, 2, 1, 4, 4),
      HS_ENTRY_PD(SV::Register25D, 3, 64, 4, 0, 4, 2, 0, launch_register, 64, 4, 4, 2),
      HS_ENTRY_PD(SV::Register25D, 3, 32, 4, 0, 4, 2, 0, launch_register, 32, 4, 4, 2),
      HS_ENTRY_PD(SV::Register25D, 3, 32, 8, 0, 2, 2, 0, launch_register, 32, 8, 2, 2),
      HS_ENTRY_PD(SV::Register25D, 3, 128, 2, 0, 4, 2, 0, launch_register, 128, 2, 4, 2),
      HS_ENTRY_PD(SV::Register25D, 3, 64, 4, 0, 2, 3, 0, launch_register, 64, 4, 2, 3),
      HS_ENTRY_PD(SV::Register25D, 3, 64, 2, 0, 8, 1, 0, launch_register, 64, 2, 8, 1),
      HS_ENTRY_VX(2, 256, 1, 1, 6, 2, 0, 4),
      HS_ENTRY_VX(2, 512, 1, 1, 4, 2, 0, 4),
      HS_ENTRY_PD(SV::Register25D, 2, 512, 1, 0, 1, 6, 0, launch_register, 512, 1, 1, 6),
      HS_ENTRY_PD(SV::Register25D, 2, 1024, 1, 0, 1, 4, 0, launch_register, 1024, 1, 1, 4),
      HS_ENTRY_PD(SV::Register25D, 2, 512, 1, 0, 1, 8, 0, launch_register, 512, 1, 1, 8),
      HS_ENTRY_PD(SV::Register25D, 2, 256, 1, 0, 1, 4, 0, launch_register, 256, 1, 1, 4),
      // 2.5d-async (ours): bx x by threads, ry rows per thread, st ring stages, cb bytes per
      // cp.async, mb minimum resident blocks
      // (first = default, ordered by the H200 bench of docs/performance.md: 3D float 256x2 ry2
      // = 256x4 tiles, 8 stages of 16-byte copies at 4 blocks/SM of 512 threads; 3D double
      // 64x4 ry2, 6 stages of 8-byte copies; 2D 512-wide segments)
      HS_ENTRY_ASYNC(3, 256, 2, 2, 8, 16, 4, 4),
      HS_ENTRY_ASYNC(3, 128, 2, 2, 8, 16, 8, 4),
      HS_ENTRY_ASYNC(3, 64, 4, 2, 8, 16, 8, 4),
      HS_ENTRY_ASYNC(3, 64, 4, 2, 6, 8, 5, 8),
      HS_ENTRY_ASYNC(3, 64, 4, 2, 6, 16, 6, 8),
      HS_ENTRY_ASYNC(3, 32, 8, 2, 8, 16, 8, 4),
      HS_ENTRY_ASYNC(3, 32, 8, 1, 12, 16, 8, 4),
      HS_ENTRY_ASYNC(3, 64, 8, 1, 16, 16, 4, 4),
      HS_ENTRY_ASYNC(3, 64, 4, 2, 4, 16, 8, 4),
      HS_ENTRY_ASYNC(3, 64, 4, 2, 8, 8, 8, 4),
      HS_ENTRY_ASYNC(3, 64, 4, 2, 8, 4, 6, 4),
      HS_ENTRY_ASYNC(3, 64, 4, 2, 6, 16, 0, 4),
      HS_ENTRY_ASYNC(3, 32, 8, 1, 8, 16, 8, 8),
      // 512 threads: 128x8 tiles (less halo per output than 128x4, but slower)
      HS_ENTRY_ASYNC(3, 128, 4, 2, 8, 16, 4, 4),
      // 2D: one x row segment per stage, so more stages for the same bytes in flight
      HS_ENTRY_ASYNC(2, 512, 1, 1, 16, 16, 4, 4),
      HS_ENTRY_ASYNC(2, 256, 1, 1, 16, 16, 8, 4),
      HS_ENTRY_ASYNC(2, 512, 1, 1, 8, 16, 4, 8),
      HS_ENTRY_ASYNC(2, 256, 1, 1, 10, 16, 8, 8),
      HS_ENTRY_ASYNC(2, 256, 1, 1, 24, 16, 8, 4),
      HS_ENTRY_ASYNC(2, 256, 1, 1, 8, 16, 8, 0),
      HS_ENTRY_ASYNC(2, 256, 1, 1, 16, 4, 8, 4),
      // 2.5d-tma (ours): bx x by threads, ry rows per thread, st ring stages (st - 3 planes
      // in flight), mb minimum resident blocks. First = default, ordered by the H200 bench of
      // docs/performance.md: 3D float 256 x 32 tiles, 4 stages, 1 block/SM (sustained: the
      // fewest L2 re-reads keep the board under its power cap; 256 x 8 st6 mb3 is as fast
      // only until the board reaches the cap); 3D double 256 x 16, 4 stages, 1 block/SM
      // (faster than 256 x 8 st5 with the boundary rules in the sweep); 2D 512-wide rows.
      HS_ENTRY_TMA(3, 256, 1, 32, 4, 1, 4),
      HS_ENTRY_TMA(3, 256, 1, 8, 6, 3, 4),
      HS_ENTRY_TMA(3, 512, 1, 8, 5, 2, 4),
      HS_ENTRY_TMA(3, 256, 2, 8, 5, 2, 4),
      HS_ENTRY_TMA(3, 256, 4, 4, 5, 2, 4),
      HS_ENTRY_TMA(3, 512, 1, 16, 4, 1, 4),
      HS_ENTRY_TMA(3, 512, 2, 8, 5, 1, 4),
      HS_ENTRY_TMA(3, 256, 2, 8, 4, 1, 8),
      HS_ENTRY_TMA(3, 256, 1, 8, 5, 2, 8),
      HS_ENTRY_TMA(3, 128, 2, 8, 5, 2, 8),
      HS_ENTRY_TMA(2, 512, 1, 1, 16, 3, 4),
      HS_ENTRY_TMA(2, 512, 1, 1, 12, 2, 0),
      HS_ENTRY_TMA(2, 1024, 1, 1, 12, 2, 4),
  };
  return t;
}
#undef HS_ENTRY
#undef HS_ENTRY_PD
#undef HS_ENTRY_VX
#undef HS_ENTRY_ASYNC
#undef HS_ENTRY_TMA

template <typename T>
bool usable(const Entry& e, StencilVariant v, int dims) {
  return e.v == v && e.dims == dims && (e.only == 0 || e.only == int(sizeof(T)));
}

}  // namespace

bool is_streaming(StencilVariant v) {
  return stencil_variant_row(v).streaming;
}

template <typename T>
std::vector<StencilShape> compiled_shapes(StencilVariant v, int dims) {
  std::vector<StencilShape> out;
  for (const Entry& e : table())
    if (usable<T>(e, v, dims)) out.push_back(e.shape);
  return out;
}

template <typename T>
StencilShape resolve_shape(StencilVariant v, int dims, const std::array<int, 3>& block) {
  const std::vector<StencilShape> shapes = compiled_shapes<T>(v, dims);
  if (shapes.empty())
    throw BackendError(std::string("stencil variant '") + stencil_variant_name(v) +
                       "' has no compiled shape for this dimension");
  if (block[0] == 0 && block[1] == 0 && block[2] == 0) return shapes.front();
  for (const StencilShape& s : shapes) {
    if (s.bx != block[0] || s.by != block[1]) continue;
    if (is_streaming(v)) {
      if (block[2] < 0) break;
      StencilShape r = s;
      r.bz = block[2];  // planes per block; 0 = auto
      return r;
    }
    if (s.bz == block[2] || (dims == 2 && block[2] <= 1)) return s;
  }
  std::string list;
  for (const StencilShape& s : shapes) list += (list.empty() ? "" : ", ") + s.str();
  throw BackendError(std::string("block ") + std::to_string(block[0]) + "x" +
                     std::to_string(block[1]) + "x" + std::to_string(block[2]) +
                     " is not compiled for stencil variant '" + stencil_variant_name(v) + "' in " +
                     std::to_string(dims) + "D (compiled: " + list +
                     (is_streaming(v) ? "; bz = planes per block, 0 = auto" : "") + ")");
}

bool stencil_applies_rules(StencilVariant v, const BoundaryFaces& bc) {
  if (!stencil_variant_row(v).rules_in_sweep) return false;
  for (const FaceBC& face : bc)
    if (face.type == BoundaryType::Periodic) return false;
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
  for (const Entry& e : table()) {
    if (!usable<T>(e, v, g.dims) || e.shape.bx != shape.bx || e.shape.by != shape.by ||
        e.shape.ry != shape.ry || e.shape.pd != shape.pd || e.shape.vx != shape.vx ||
        e.shape.mb != shape.mb || e.shape.st != shape.st || e.shape.cb != shape.cb ||
        (!is_streaming(v) && e.shape.bz != shape.bz))
      continue;
    const Args<T> a{u,      out,
                    f,      g,
                    c,      is_streaming(v) ? shape.bz : 0,
                    stream, rules ? ghost_rules<T>(g, *rules) : GhostRules<T>{}};
    if constexpr (sizeof(T) == sizeof(float))
      e.fn_float(a);
    else
      e.fn_double(a);
    return;
  }
  throw BackendError(std::string("stencil variant '") + stencil_variant_name(v) +
                     "' is not compiled with shape " + shape.str());
}

#define HS_INSTANTIATE(T)                                                                        \
  template std::vector<StencilShape> compiled_shapes<T>(StencilVariant, int);                    \
  template StencilShape resolve_shape<T>(StencilVariant, int, const std::array<int, 3>&);        \
  template void launch_stencil<T>(StencilVariant, const StencilShape&, const T*, T*,             \
                                  const SourceRef<T>&, const GridDesc&, const StencilCoeffs<T>&, \
                                  cudaStream_t, const BoundaryFaces*);
HS_INSTANTIATE(float)
HS_INSTANTIATE(double)
#undef HS_INSTANTIATE

}  // namespace cuda

}  // namespace heatsolve
