// The stencil ladder's staged rungs (stencil_kernels.cuh): the stage layout, rung 7
// 2.5d-async (cp.async) and rung 8 2.5d-tma (the bulk tensor copy).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/stencil/cuda/ghost_rules.cuh"
#include "kernels/stencil/cuda/stencil_point.cuh"

namespace heatsolve::cuda {

// ---- staged rungs: the stage layout -------------------------------------------------------
// 2.5d-async and 2.5d-tma copy whole row segments of a plane tile into a shared stage with
// copies of up to V elements (16 bytes) that need equal addresses modulo V in both memories.
// So the stage's row pitch is congruent to the global row stride modulo V and every staged
// plane q is stored at its global phase (element index of its first cell modulo V); any nx,
// buffer offset and plane stride then works. V is a power of two (V = 1: no constraint).
template <typename T, int V>
struct CongruentStage {
  int pitch;              // stage row pitch in elements: >= min_pitch, = row stride mod V
  std::uint32_t e0, ssv;  // element index of the first staged cell; plane stride mod V
  __device__ CongruentStage(const T* u, std::int64_t first, std::int64_t sy, std::int64_t ss,
                            int min_pitch, bool rows)
      : pitch(rows ? min_pitch + int((std::uint32_t(sy) - std::uint32_t(min_pitch)) & (V - 1))
                   : min_pitch),
        e0(std::uint32_t(reinterpret_cast<std::uintptr_t>(u) / sizeof(T)) + std::uint32_t(first)),
        ssv(std::uint32_t(ss) & std::uint32_t(V - 1)) {}
  // Offset (elements) at which staged plane q starts in its stage.
  __device__ int phase(int q) const { return int((e0 + std::uint32_t(q) * ssv) & (V - 1)); }
};

// ---- rung 7 (ours): 2.5d-async ------------------------------------------------------------
// The register rung is limited by bytes in flight: its prefetch ring costs registers, which
// caps resident warps. Here the ring lives in shared memory and is filled by cp.async
// (LDGSTS: global -> shared without passing through registers), so the loads in flight per
// block are (S - 2) whole planes for a few registers per thread.
//   - A block of TX x BY threads owns a TX x TY tile of the plane (TY = BY*RY rows; 3D) or a
//     TX-wide x segment (2D) and walks `chunk` planes of the stream axis.
//   - Ring of S stages; a stage holds one plane of the tile INCLUDING its one-cell halo
//     ((TX+2) x (TY+2), corners included: whole row segments copy as runs). Computing plane
//     k reads the stages of planes k and k+1 (k-1 is in registers); plane k+S-1 is issued
//     into the stage of plane k-1 just before, so S-2 planes are in flight while computing.
//     One barrier per plane (see the loop for why it also covers the overwritten stage).
//   - Copies are CB bytes wide where both addresses allow: the stage's row pitch is congruent
//     to the global row stride modulo the vector width, and each plane starts at the global
//     phase of its first element, so every row's aligned vector chunks are aligned in both
//     memories; partial chunks at the row ends copy element-wise. CB = sizeof(T): scalar.
//   - Thread (tx, ty) computes column tx of rows ty*RY .. ty*RY+RY-1: x neighbours and the
//     rows just above/below its strip from the stage, rows inside its strip from its own
//     registers, stream neighbours from registers (previous, current plane) and the next
//     stage (next plane). Threads past the grid copy, wait and compute, but store nothing.
template <typename T, int DIM, int TX, int TY, int S, int CB>
struct AsyncTile {
  static constexpr int V = CB > int(sizeof(T)) ? CB / int(sizeof(T)) : 1;  // elements per copy
  static constexpr int W = TX + 2;                                         // staged row width
  static constexpr int ROWS = DIM == 3 ? TY + 2 : 1;                       // staged rows
  static constexpr int PITCH_MAX = W + V - 1;  // row pitch: >= W, congruent to the row stride
  // One stage: up to V-1 elements of plane phase, ROWS rows; a multiple of V so that every
  // stage starts vector-aligned.
  static constexpr int STAGE = (V - 1 + ROWS * PITCH_MAX + V - 1) / V * V;
  static constexpr int CHUNKS = (W + 2 * (V - 1)) / V;  // vector chunks touching one row
  static constexpr int OPS = ROWS * CHUNKS;             // copy operations per plane
  static constexpr std::size_t SMEM_BYTES = std::size_t(S) * STAGE * sizeof(T);
  static_assert(V == 1 || V == 2 || V == 4, "copies of 1, 2 or 4 elements");
  static_assert(V * sizeof(T) <= 16, "cp.async copies at most 16 bytes");
};

template <typename T, int DIM, int TX, int BY, int RY, int S, int CB, int MINB>
__global__ void __launch_bounds__(TX* BY, MINB)
    stencil_async_kernel(const T* __restrict__ u, T* __restrict__ out, SourceRef<T> f, StreamGeom g,
                         StencilCoeffs<T> c, int chunk) {
  static_assert(DIM == 3 || (BY == 1 && RY == 1), "2D tiles are one row");
  static_assert(S >= 3, "two stages are read while at least one is in flight");
  constexpr int TY = DIM == 3 ? BY * RY : 1;
  using Tile = AsyncTile<T, DIM, TX, TY, S, CB>;
  constexpr int V = Tile::V, W = Tile::W, STAGE = Tile::STAGE, CHUNKS = Tile::CHUNKS;
  constexpr int NT = TX * BY, OPS = Tile::OPS, OPS_PER_THREAD = (OPS + NT - 1) / NT;
  extern __shared__ __align__(16) unsigned char async_smem[];
  T* const ring = reinterpret_cast<T*>(async_smem);
  const std::uint32_t ring_shared = shared_address(ring);

  const int tx = threadIdx.x, ty = DIM == 3 ? int(threadIdx.y) : 0, t = tx + TX * ty;
  const int x0 = blockIdx.x * TX, y0 = DIM == 3 ? int(blockIdx.y) * TY : 0;
  const int ex = min(TX, g.nx - x0), ey = DIM == 3 ? min(TY, g.ny_plane - y0) : 1;
  const int wrow = ex + 2, rows = DIM == 3 ? ey + 2 : 1;  // staged extent of this tile
  const int k0 = blockIdx.z * chunk, k1 = min(k0 + chunk, g.ns);
  const int planes = k1 - k0 + 2;  // staged planes k0-1 .. k1 (k1 <= ns: a ghost plane at most)
  // Staged cell (-1, -1) of plane k0-1 (3D; 2D: cell -1 of row k0-1).
  const std::int64_t corner =
      g.origin + (x0 - 1) + (DIM == 3 ? g.sy * (y0 - 1) : 0) + g.ss * std::int64_t(k0 - 1);
  const CongruentStage<T, V> layout(u, corner, g.sy, g.ss, W, DIM == 3);
  const int pitch = layout.pitch;
  const auto phase = [&](int q) { return layout.phase(q); };

  // Staged plane q into ring stage `st`: row segments of wrow elements, split into vector
  // chunks aligned in both memories; chunks cut by a row end copy element-wise.
  const auto issue = [&](int q, int st) {
    const T* const plane = u + corner + g.ss * q;
    const int ph = phase(q);
#pragma unroll
    for (int n = 0; n < OPS_PER_THREAD; ++n) {
      const int op = t + n * NT;
      const int row = op / CHUNKS, ch = op - row * CHUNKS;
      if (op >= OPS || row >= rows) continue;
      const int srow = ph + row * pitch;         // stage offset of the row's cell 0
      const int e0 = ch * V - (srow & (V - 1));  // first row element of the chunk
      const T* src = plane + (DIM == 3 ? g.sy * row : 0);
      const std::uint32_t dst = ring_shared + std::uint32_t(sizeof(T) * (st * STAGE + srow));
      if (e0 >= 0 && e0 + V <= wrow) {
        cp_async<V * sizeof(T)>(dst + std::uint32_t(sizeof(T) * e0), src + e0);
      } else {
#pragma unroll
        for (int v = 0; v < V; ++v)
          if (e0 + v >= 0 && e0 + v < wrow)
            cp_async<sizeof(T)>(dst + std::uint32_t(sizeof(T) * (e0 + v)), src + (e0 + v));
      }
    }
  };

  // Prologue: planes 0 .. S-1 into stages 0 .. S-1, one group each (empty past the chunk, so
  // that every thread counts the same groups).
#pragma unroll 1
  for (int q = 0; q < S; ++q) {
    if (q < planes) issue(q, q);
    cp_async_commit();
  }
  // Stage offset of this thread's cell in row 0 of its strip (staged row ty*RY + 1).
  const int me = (DIM == 3 ? (ty * RY + 1) * pitch : 0) + tx + 1;
  T prev[RY], curr[RY];    // this thread's cells in planes k-1 and k (stream neighbour, centre)
  cp_async_wait<S - 2>();  // planes 0 and 1 have landed (this thread's copies)
  __syncthreads();         // ... and everyone's
  {
    const T* s0 = ring + phase(0) + me;
    const T* s1 = ring + STAGE + phase(1) + me;
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      prev[r] = s0[r * pitch];
      curr[r] = s1[r * pitch];
    }
  }

  const bool col_in = tx < ex;
  std::int64_t orow = g.origin + x0 + tx + (DIM == 3 ? g.sy * (y0 + ty * RY) : 0) + g.ss * k0;
  int cur = 1, nxt = 2, free_stage = 0;  // stages of planes q, q+1, q-1
  for (int q = 1; q + 1 < planes; ++q, orow += g.ss) {
    // Before the wait, S + q - 1 groups are committed; plane q+1 is group q+1.
    cp_async_wait<S - 3>();
    // One barrier per plane: (a) plane q+1's copies by all threads are visible; (b) every
    // thread has finished iteration q-1 (its last reads of stage `free_stage`, plane q-1), so
    // the copy issued below may overwrite that stage.
    __syncthreads();
    if (q + S - 1 < planes) issue(q + S - 1, free_stage);
    cp_async_commit();

    const T* sc = ring + cur * STAGE + phase(q) + me;
    const T* sn = ring + nxt * STAGE + phase(q + 1) + me;
    T next[RY];
#pragma unroll
    for (int r = 0; r < RY; ++r) next[r] = sn[r * pitch];
    // In-plane y neighbours: the staged rows just outside the strip, own registers inside.
    T strip_lo = 0, strip_hi = 0;
    if constexpr (DIM == 3) {
      strip_lo = sc[-pitch];
      strip_hi = sc[RY * pitch];
    }
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      const T ym = r == 0 ? strip_lo : curr[r - 1];
      const T yp = r == RY - 1 ? strip_hi : curr[r + 1];
      const T xm = sc[r * pitch - 1], xp = sc[r * pitch + 1];
      if (col_in && ty * RY + r < ey) {
        const std::int64_t idx = orow + g.sy * r;
        out[idx] =
            stream_point<DIM>(c, curr[r], xm, xp, ym, yp, prev[r], next[r], f, idx, k0 + q - 1);
      }
    }
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      prev[r] = curr[r];
      curr[r] = next[r];
    }
    free_stage = cur;
    cur = nxt;
    nxt = nxt + 1 == S ? 0 : nxt + 1;
  }
  cp_async_wait<0>();  // nothing real is pending here (only empty groups); leave none behind
}

// ---- rung 8 (ours): 2.5d-tma --------------------------------------------------------------
// Why (ncu, 512^3 float, docs/performance.md): 2.5d-register and 2.5d-async are held by
// L2 traffic (L2 throughput 76-79 % of peak at 55-57 % of DRAM; the copy kernel runs 87 % at
// 81 %) and by instruction issue (54-74 instructions per point): their small tiles re-read 1.5
// to 1.9 times the minimum bytes from L2 (y halo rows of 2-4 row strips, one-element x edge
// loads, rows straddling sectors), and per-thread copy addressing costs instructions.
// This rung:
//   - stages TALL tiles: TX x TY cells (TY = BY*RY rows, 3D) plus a one-cell halo, so L2
//     reads are (TX+2)/TX * (TY+2)/TY of the minimum (1.25 for 512 x 8);
//   - copies each staged row with ONE bulk copy of the copy engine (cp.async.bulk), the rows
//     spread over the warps; completion is counted in bytes on one mbarrier per stage;
//   - stores whole 32-byte sectors: the thread-to-column map of each row is rotated so that
//     every warp's 32 stores fill aligned sectors (a plain row-major map straddles one more
//     sector per warp: 25 % more L2 store traffic in float), which is why every value,
//     also the stream neighbours, is read from the stages.
// Ring of S stages, one staged plane each: computing plane k reads the stages of planes k-1,
// k and k+1; once every thread is past plane k-1 (one block barrier per plane), the stage of
// plane k-2 is refilled with plane k+S-2, so S-3 planes are in flight while computing.
// Alignment: bulk copies need 16-byte aligned addresses and sizes. Each row copy covers the
// 16-byte aligned range around its TX+2 elements (at most 16 - sizeof(T) bytes more on either
// side: device buffers are rounded up to 256 bytes, kernels/cuda/cuda_array.cuh); the row
// pitch is congruent to the global row stride modulo V = 16 / sizeof(T) elements and each
// stage starts at its plane's global phase, so shared and global addresses agree modulo 16.
// Threads past the grid wait and read like the others but store nothing.
// Boundary rules (gr.active): the ghosts of u in memory are not used for those faces; once a
// stage has landed, a few threads overwrite its ghost cells with the rules (x, y ghosts of a
// centre plane; the ghost planes -1 and ns). This replaces the ghost-fill pass before the
// sweep, which costs about 15 % of a 512^3 float step (one DRAM sector per x-face row).
template <typename T, int DIM, int TX, int TY, int S>
struct TmaTile {
  static constexpr int V = 16 / int(sizeof(T));       // elements per 16 bytes
  static constexpr int W = TX + 2;                    // staged row: tile columns + halo
  static constexpr int ROWS = DIM == 3 ? TY + 2 : 1;  // staged rows
  static constexpr int PITCH_MAX = W + 3 * (V - 1);   // pitch >= W + 2(V-1), + congruence
  static constexpr int STAGE =                        // phase, rows, last row's overhang
      (2 * (V - 1) + (ROWS - 1) * PITCH_MAX + W + 2 * (V - 1) + V - 1) / V * V;
  static constexpr std::size_t RING_BYTES = std::size_t(S) * STAGE * sizeof(T);
  static constexpr std::size_t SMEM_BYTES = RING_BYTES + S * sizeof(std::uint64_t);
};

template <typename T, int DIM, int TX, int BY, int RY, int S, int MINB, int SRC>
__global__ void __launch_bounds__(TX* BY, MINB)
    stencil_tma_kernel(const T* __restrict__ u, T* __restrict__ out, SourceRef<T> f, StreamGeom g,
                       StencilCoeffs<T> c, int chunk, GhostRules<T> gr) {
  static_assert(DIM == 3 || (BY == 1 && RY == 1), "2D tiles are one row");
  static_assert(TX % 32 == 0, "warp 0 lies in the first row of threads");
  static_assert(S >= 4, "three stages are read while at least one is in flight");
  static_assert((TX & (TX - 1)) == 0, "the store mapping wraps columns modulo TX");
  constexpr int TY = DIM == 3 ? BY * RY : 1;
  using Tile = TmaTile<T, DIM, TX, TY, S>;
  constexpr int V = Tile::V, W = Tile::W, ROWS = Tile::ROWS, STAGE = Tile::STAGE;
  extern __shared__ __align__(16) unsigned char tma_smem[];
  const std::uint32_t ring_shared = shared_address(tma_smem);
  const std::uint32_t full0 = ring_shared + std::uint32_t(Tile::RING_BYTES);  // S mbarriers

  const int tx = threadIdx.x, ty = DIM == 3 ? int(threadIdx.y) : 0;
  const int lane = tx & 31;
  const int x0 = blockIdx.x * TX, y0 = DIM == 3 ? int(blockIdx.y) * TY : 0;
  const int ex = min(TX, g.nx - x0), ey = DIM == 3 ? min(TY, g.ny_plane - y0) : 1;
  const int k0 = blockIdx.z * chunk, k1 = min(k0 + chunk, g.ns);
  const int planes = k1 - k0 + 2;  // staged planes k0-1 .. k1 (k1 <= ns: a ghost plane at most)
  // Staged cell (-1, -1) of plane k0-1 (2D: cell -1 of row k0-1).
  const std::int64_t corner =
      g.origin + (x0 - 1) + (DIM == 3 ? g.sy * (y0 - 1) : 0) + g.ss * std::int64_t(k0 - 1);
  // Rows are copied with up to V-1 extra elements on either side: pitch >= W + 2(V-1).
  const CongruentStage<T, V> layout(u, corner, g.sy, g.ss, DIM == 3 ? W + 2 * (V - 1) : W,
                                    DIM == 3);
  const int pitch = layout.pitch;
  const auto phase = [&](int q) { return layout.phase(q); };

  // Staged plane q lives in stage q mod S (planes k0-1+q: the ring turns once every S planes).
  const auto stage = [](int q) { return q % S; };
  // Plane q is staged by the first NWI warps: warp w copies staged rows w, w + NWI, ... (lane
  // i: row w + NWI i), announcing its bytes with its own arrival (NWI arrivals per stage). A
  // bulk copy takes uniform operands, so one warp's copies issue one after another (an R2UR
  // loop over the lanes in the SASS): with all rows on warp 0, that warp falls behind the
  // others every plane, which matters for tall tiles (34 staged rows in the float default).
  constexpr int NW = TX * BY / 32, NWI = NW < ROWS ? NW : ROWS;
  static_assert(ROWS <= 32 * NWI, "each issuing lane copies one row");
  const int warp = (tx + TX * ty) >> 5;
  const bool producer = warp < NWI;
  const int rows_staged = DIM == 3 ? ey + 2 : 1;
  const std::uint32_t row_bytes = std::uint32_t(sizeof(T)) * std::uint32_t(ex + 2);
  const auto issue = [&](int q) {
    const int st = stage(q);
    const int j = warp + NWI * lane;  // staged row of this lane
    std::uint32_t bytes = 0, dst = 0;
    const T* src = nullptr;
    if (j < rows_staged) {
      const char* first =
          reinterpret_cast<const char*>(u + corner + g.ss * q + (DIM == 3 ? g.sy * j : 0));
      const std::uint32_t mis = std::uint32_t(reinterpret_cast<std::uintptr_t>(first)) & 15u;
      src = reinterpret_cast<const T*>(first - mis);
      dst = ring_shared +
            std::uint32_t(sizeof(T)) * std::uint32_t(st * STAGE + phase(q) + j * pitch) - mis;
      bytes = (mis + row_bytes + 15u) & ~15u;
    }
    const std::uint32_t total = __reduce_add_sync(0xffffffffu, bytes);
    const std::uint32_t bar = full0 + 8u * std::uint32_t(st);
    if (lane == 0) mbarrier_arrive_expect_tx(bar, total);
    __syncwarp();
    if (bytes) bulk_copy_to_shared(dst, src, bytes, bar);
  };
  if (tx == 0 && ty == 0) {
#pragma unroll
    for (int st = 0; st < S; ++st) mbarrier_init(full0 + 8u * st, NWI);
    mbarrier_init_fence();
  }
  // kSourceGenerated: the tile's plane factors ([row][column], the same in every plane), after
  // the stages and barriers; read like the stages, so a cell's source costs no global load.
  T* const factors = reinterpret_cast<T*>(tma_smem + Tile::SMEM_BYTES);
  if constexpr (SRC == kSourceGenerated) {
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      const int row = ty * RY + r;
      const bool in = tx < ex && (DIM == 3 ? row < ey : true);
      factors[row * TX + tx] =
          in ? __ldg(f.plane + (g.origin - g.ss + x0 + tx + (DIM == 3 ? g.sy * (y0 + row) : 0)))
             : T(0);
    }
  }
  __syncthreads();
  if (producer)
#pragma unroll 1
    for (int q = 0; q < S && q < planes; ++q) issue(q);

  // Aligned stores: in every row, the warps store whole 32-byte sectors. Row segment
  // [x0, x0 + TX) starts d = (-address) mod SEC elements before a sector boundary; thread tx
  // takes column (tx + d - 32) mod TX, so warp w >= 1 covers the aligned window
  // [x0 + d + 32(w-1), x0 + d + 32w) and warp 0 the head [x0, x0 + d) and the tail. The
  // column changes with the row and the plane, so every value comes from the stages (the
  // stage of plane k-1 stays readable while plane k is computed).
  constexpr int SEC = 32 / int(sizeof(T));
  const std::uint32_t oelem =
      std::uint32_t(reinterpret_cast<std::uintptr_t>(out) / sizeof(T)) +
      std::uint32_t(g.origin + x0 + (DIM == 3 ? g.sy * (y0 + ty * RY) : 0) + g.ss * k0);
  const std::uint32_t sy_mod = std::uint32_t(g.sy), ss_u = std::uint32_t(g.ss);
  const int pb = int(sizeof(T)) * pitch;
  const int row0 = int(sizeof(T)) * ((DIM == 3 ? (ty * RY + 1) * pitch : 0) + 1);
  const auto stage_base = [&](int q) {  // shared byte offset of this thread's first cell
    return int(sizeof(T)) * (stage(q) * STAGE + phase(q)) + row0;
  };
  const auto at = [&](int off) { return *reinterpret_cast<const T*>(tma_smem + off); };
  int rows_left = DIM == 3 ? ey - ty * RY : 1;  // rows of this thread inside the grid
  T* oplane = out + g.origin + x0 + (DIM == 3 ? g.sy * (y0 + ty * RY) : 0) + g.ss * k0;
  const int sy = DIM == 3 ? int(g.sy) : 0;  // row stride (fits: the launcher checks)

  // Boundary rules on the stages (gr.active != 0: ghosts of u in memory are not read; see
  // the comment above TmaTile). Ghost cells of the stage of plane q are read only while plane
  // q is computed (x and y neighbours of the centre stage; plane -1 / ns: stream neighbours).
  constexpr int SLO = DIM == 3 ? 4 : 2;
  const unsigned fix = gr.active
                           ? ((gr.active & 1u) && x0 == 0 ? 1u : 0u) |
                                 ((gr.active & 2u) && x0 + ex == g.nx ? 2u : 0u) |
                                 (DIM == 3 && (gr.active & 4u) && y0 == 0 ? 4u : 0u) |
                                 (DIM == 3 && (gr.active & 8u) && y0 + ey == g.ny_plane ? 8u : 0u) |
                                 ((gr.active >> SLO) & 1u && k0 == 0 ? 16u : 0u) |
                                 ((gr.active >> (SLO + 1)) & 1u && k1 == g.ns ? 32u : 0u)
                           : 0u;
  // A partial tile's threads past the grid read (and discard) the stage cells at column ex
  // and row ey, its x+ / y+ ghosts, while they compute: there the ghosts of plane q are fixed
  // two steps ahead (waiting for that plane early), elsewhere one step ahead. Either way no
  // thread reads a stage while it is fixed, and the next step's barrier publishes it.
  const bool late = ((fix & 2u) && ex < TX) || ((fix & 8u) && ey < TY);
  const int ahead = late ? 2 : 1;
  const auto wait_plane = [&](int q) {  // until staged plane q has landed
    mbarrier_wait_parity(full0 + 8u * std::uint32_t(stage(q)), std::uint32_t((q / S) & 1));
  };
  const auto cell = [&](int q, int col, int row) -> T& {  // staged cell of plane q
    return *reinterpret_cast<T*>(
        tma_smem +
        sizeof(T) * (stage(q) * STAGE + phase(q) + (DIM == 3 ? (row + 1) * pitch : 0) + col + 1));
  };
  const int lin = ty * TX + tx;
  const auto fix_inplane = [&](int q) {  // x and y ghosts of staged plane q
    if (lin < ey) {
      if (fix & 1u) cell(q, -1, lin) = ghost_rule(gr, 0, cell(q, 0, lin));
      if (fix & 2u) cell(q, ex, lin) = ghost_rule(gr, 1, cell(q, ex - 1, lin));
    }
    if (DIM == 3 && (fix & 12u))
      for (int col = lin; col < ex; col += TX * BY) {
        if (fix & 4u) cell(q, col, -1) = ghost_rule(gr, 2, cell(q, col, 0));
        if (fix & 8u) cell(q, col, ey) = ghost_rule(gr, 3, cell(q, col, ey - 1));
      }
  };
  const auto fix_plane = [&](int q, int src_q, int face) {  // ghost plane q from plane src_q
    for (int t = lin; t < ex * ey; t += TX * BY)
      cell(q, t % ex, t / ex) = ghost_rule(gr, face, cell(src_q, t % ex, t / ex));
  };

  // Planes q = 1 .. planes-2 are computed; plane planes-1 is the ghost plane ns when k1 == ns,
  // fixed at step planes-3 (0: here).
  wait_plane(0);
  if (fix) {
    for (int q = 1; q <= ahead && q <= planes - 2; ++q) {
      wait_plane(q);
      if (fix & 15u) fix_inplane(q);
    }
    if (fix & 16u) fix_plane(0, 1, SLO);  // plane -1 from plane 0
    if ((fix & 32u) && planes == 3) {
      wait_plane(2);
      fix_plane(2, 1, SLO + 1);  // plane ns from plane ns - 1
    }
  }
#pragma unroll 1
  for (int q = 1; q + 1 < planes; ++q) {
    __syncthreads();  // every thread is past plane q-1: the stage of plane q-2 is free
    if (producer && q >= 2 && q - 2 + S < planes) issue(q - 2 + S);
    wait_plane(q);
    wait_plane(q + 1);
    if (fix) {
      const int p = q + ahead;  // nobody reads its stage during this step
      if ((fix & 15u) && p <= planes - 2) {
        if (late) wait_plane(p);
        fix_inplane(p);
      }
      if ((fix & 32u) && q == planes - 3) {
        wait_plane(q + 2);
        fix_plane(q + 2, q + 1, SLO + 1);  // plane ns from plane ns - 1
      }
    }
    const int bp = stage_base(q - 1), bc = stage_base(q), bn = stage_base(q + 1);
    const std::uint32_t e = oelem + std::uint32_t(q - 1) * ss_u;  // column x0, row 0, plane q-1
    T column = 0;  // kSourceGenerated: the stream factor of this plane
    if constexpr (SRC == kSourceGenerated) column = __ldg(f.column + (k0 + q - 1));
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      const int d = int((0u - (e + std::uint32_t(r) * sy_mod)) & std::uint32_t(SEC - 1));
      const int col = (tx + d + TX - 32) & (TX - 1);
      const int o = r * pb + int(sizeof(T)) * col;
      const bool inside = col < ex && r < rows_left;  // f is read at inside cells only
      T fv = 0;
      if constexpr (SRC == kSourceStaged) {
        if (inside) fv = __ldg(oplane - out + f.field + r * sy + col);
      } else if constexpr (SRC == kSourceGenerated) {
        if (inside)
          fv = add_rn(f.offset, mul_rn(f.scale, mul_rn(factors[(ty * RY + r) * TX + col], column)));
      }
      const T v = point_finish<DIM>(
          c,
          point_part<DIM, SRC != kSourceNone>(
              c, at(bc + o), at(bc + o - int(sizeof(T))), at(bc + o + int(sizeof(T))),
              DIM == 3 ? at(bc + o - pb) : T(0), DIM == 3 ? at(bc + o + pb) : T(0), at(bp + o), fv),
          at(bn + o));
      if (inside) oplane[r * sy + col] = v;
    }
    oplane += g.ss;
  }
}

}  // namespace heatsolve::cuda
