// Temporal blocking, the partial-sums designs (temporal_partial_kernel): the frame, the source
// staging and the in-plane neighbour and face-path helpers they share with the rings design are
// in kernels/stencil/cuda/temporal_kernels.cuh, whose opening comment describes both.
#pragma once

#include "kernels/stencil/cuda/temporal_kernels.cuh"

namespace heatsolve::cuda {

// ---- partial sums ---------------------------------------------------------------------
// Stage s keeps, per cell, X_s (its input, stage s-1, at its current plane p) and
// B_s = c_s X_s(p-1), the z-minus term multiplied when that plane was current. An iteration
// has two phases:
//   1. every stage turns X_s(p) into the partial P_s = center X + cx (xm + xp) [+ cy (ym + yp)]
//      + B_s (+ source) and sets B_s = c_s X_s(p): its x neighbours by shuffles, its y halo
//      rows from the shared array (published last iteration);
//   2. stage 1 completes S_1 = P_1 + c_s X_1(p+1) with the plane that has just arrived; that
//      is stage 2's next input, which completes S_2 the same way, and so on; the last stage's
//      result is stored, each new stage input publishes its edge rows.
// Values are only ever overwritten in place, so the per-plane moves of the rings design (about
// 15 % of its instructions) are gone, and with them the registers of one plane per stage.
template <typename T, int DIM, int K, int BY, int RY, int VX, bool STAGED, int SRC>
struct PartialGeom {
  static constexpr int WX = 32 * VX;                 // columns of a warp (extended tile)
  static constexpr int UX = WX - 2 * K;              // useful columns
  static constexpr int EY = DIM == 3 ? BY * RY : 1;  // rows of the extended tile (3D)
  static constexpr int UY = DIM == 3 ? EY - 2 * K : 1;
  // Input planes in registers: q-1, q and q+1 (in flight), or, staged, q-1 and q.
  static constexpr int SETS = STAGED ? 2 : 3;
  static constexpr int AHEAD = 2;  // staged: planes in flight ahead of the one read (q+1, q+2)
  static constexpr int SLOTS = 4;  // staged: slots per thread (a power of two > AHEAD)
  // Published edge rows of every stage's input: [parity][stage][warp + 1 pad each side]
  // [first / last row][WX]; the pads let the edge warps read without a test (values nobody
  // uses: those rows are the spoiled halo).
  static constexpr int HALO = DIM == 3 ? 2 * K * (BY + 2) * 2 * WX : 0;
  // Staged input planes, each thread's own cells: [slot][warp][row][WX], after the halo rows.
  static constexpr int STAGE = STAGED ? SLOTS * BY * RY * WX : 0;
  // The source planes (SourceRing), after the staged input; its copies join the input's groups.
  using Source = SourceRing<T, K, BY, RY, VX>;
  static constexpr int FRING = SRC == kSourceStaged ? Source::SIZE : 0;
  static_assert(UX > 0 && UY > 0, "tile too small for K");
  static_assert(DIM == 3 || RY == 1, "2D threads own one row");
  static_assert(HALO % 4 == 0 && STAGE % 4 == 0, "the staging slots start 16-byte aligned");
  static_assert(!STAGED || Source::AHEAD == AHEAD, "one group per iteration, one wait");
  // Register input with a source: ptxas schedules the source's shared-memory reads early and
  // takes more registers (k = 2: 96 -> 126 in float, 168 -> 246 in double) than the blocks per
  // SM of the instance without a source allow; bound it to those (96 / 168 registers, ptxas
  // -v, no spills). 0: no bound (an explicit 1 changes ptxas's choice).
  static constexpr int MIN_BLOCKS =
      SRC != kSourceNone && !STAGED ? 65536 / (32 * BY * (sizeof(T) == 4 ? 96 : 168)) : 0;
  static constexpr std::size_t shared_bytes() {
    return sizeof(T) * std::size_t(HALO + STAGE + FRING);
  }
};

// Phase 1 of one stage for this thread's RY x VX cells (see above). hlo/hhi: the rows just
// outside the thread's rows (3D). FACES, SOURCE, F (the source at plane p): as
// temporal_substep.
template <typename T, int DIM, int RY, int VX, int FACES, bool SOURCE>
__device__ __forceinline__ void partial_substep(T (&P)[RY][VX], T (&B)[RY][VX],
                                                const T (&X)[RY][VX], const T (&hlo)[VX],
                                                const T (&hhi)[VX], const StencilCoeffs<T>& c,
                                                const GhostRules<T>& gr, const T (&F)[RY][VX],
                                                const int (&xcol)[VX], const int (&yrow)[RY],
                                                int nx, int ny, int p, int ns) {
  constexpr int SLO = DIM == 3 ? 4 : 2, SHI = SLO + 1;
  const T cs = DIM == 3 ? c.cz : c.cy;
  for_each_cell_inplane<T, DIM, RY, VX, FACES>(
      X, hlo, hhi, gr, xcol, yrow, nx, ny, [&](int r, int v, T u0, T xm, T xp, T ym, T yp) {
        T zm = B[r][v];
        if constexpr ((FACES & kFaceStream) != 0) {
          if (p == 0) zm = mul_rn(cs, ghost_rule(gr, SLO, u0));
        }
        T acc = point_part_b<DIM, SOURCE>(c, u0, xm, xp, ym, yp, SOURCE ? F[r][v] : T(0), zm);
        if constexpr ((FACES & kFaceStream) != 0) {  // phase 2 adds nothing at the last plane
          if (p == ns - 1) acc = point_finish<DIM>(c, acc, ghost_rule(gr, SHI, u0));
        }
        P[r][v] = acc;
        B[r][v] = mul_rn(cs, u0);
      });
}

// Block: 32 x BY threads. 3D: one x-y tile per block, warps stacked in y. 2D: each warp is
// its own x tile. blockIdx.z: chunk of `chunk` output planes of [p0, p1), as above. vec (VX = 2):
// each lane's pair is one aligned vector; xshift: 1 where the tiles start one column early for that
// (lanes start at tile column -K + 2 lane: even K needs the shift, odd K not; the launcher decides,
// from pair_vector_shift in kernels/stencil/cuda/stencil_launch.cuh).
// STAGED: the input path and the face-path dispatch (TemporalDesign::StagedPartialSums).
// Staged, each thread copies its own cells of plane q + AHEAD into shared memory (cp.async) at
// the top of iteration q and reads plane q back: AHEAD planes in flight hold no registers,
// and a thread reads only what it copied, so its own wait suffices (no barrier). The register
// set that frees lets all K stages run under one face path per iteration (one branch, and one
// block of code whose stages the compiler interleaves) instead of one per stage. The 3D float
// k = 3 and k = 4 defaults are staged; at k = 2 the register input stays faster (its five
// blocks per SM already hide the loads).
// SRC: the source term (kSourceStaged: in SourceRing, in the staged input's cp.async groups;
// kSourceGenerated: from its separable form); without one f
// is ignored. With vec, f must be aligned as u (the launcher checks).
// MEMORY_ONLY: the benchmark's twin of a shape (heatsolve bench, row "temporal-memory"): every
// load, edge-row publication, barrier and store of the pass, no arithmetic (plane q is stored
// as plane q - K). Its time is what the pass's memory traffic alone costs (docs/performance.md).
template <typename T, int DIM, int K, int BY, int RY, int VX, bool STAGED, int SRC,
          bool MEMORY_ONLY = false>
__global__ void __launch_bounds__(32 * BY,
                                  (PartialGeom<T, DIM, K, BY, RY, VX, STAGED, SRC>::MIN_BLOCKS))
    temporal_partial_kernel(const T* __restrict__ u, T* __restrict__ out, SourceRef<T> f,
                            StreamGeom g, PassCoeffs<T> c, GhostRules<T> gr, int chunk, int p0,
                            int p1, int xshift, bool vec) {
  static_assert(K <= PassCoeffs<T>::kMaxSteps, "more sub-steps than PassCoeffs holds");
  using G = PartialGeom<T, DIM, K, BY, RY, VX, STAGED, SRC>;
  constexpr bool SOURCE = SRC != kSourceNone, RING = SRC == kSourceStaged;
  constexpr int WX = G::WX, UX = G::UX, EY = G::EY, UY = G::UY, SETS = G::SETS;
  extern __shared__ __align__(16) unsigned char temporal_partial_smem[];
  T* const halo = reinterpret_cast<T*>(temporal_partial_smem);
  T* const staged = halo + G::HALO + (threadIdx.y * RY * WX + threadIdx.x * VX);  // slot 0, row 0

  const int lane = threadIdx.x, ty = threadIdx.y;
  int xt, yt;  // tile origin (first useful column / row); the first tile may start at -1
  if constexpr (DIM == 3) {
    xt = blockIdx.x * UX - xshift;
    yt = blockIdx.y * UY;
    // Deterministic values in the pad rows and before the first publication.
    for (int i = ty * 32 + lane; i < G::HALO; i += 32 * BY) halo[i] = T(0);
    __syncthreads();
  } else {
    xt = (blockIdx.x * BY + ty) * UX - xshift;
    yt = 0;
    if (xt >= g.nx) return;  // whole warp; no block barriers in 2D
  }
  const int xe = xt - K + lane * VX;
  const int ye = DIM == 3 ? yt - K + ty * RY : 0;
  const int nx = g.nx, ny = g.ny_plane, ns = g.ns;

  // Loads (and source reads): one byte offset per row from its plane's start, rows clamped
  // into the grid, VX consecutive columns from xs. A lane with a cell in the grid starts at
  // its own first column (xs = xe): its cells outside read a ghost or the neighbouring row,
  // in bounds and never used; lanes entirely outside read in-grid columns. Addresses are a
  // plane pointer plus these 32-bit offsets (64-bit index arithmetic per cell was a third of
  // the rings design's load instructions).
  int xcol[VX], yrow[RY];
  unsigned offb[RY];
  unsigned stored = 0;  // one bit per cell this thread stores (inside the useful tile)
  {
    const int xs = min(max(xe, -(VX - 1)), nx - 1);
#pragma unroll
    for (int v = 0; v < VX; ++v) xcol[v] = xe + v;
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      yrow[r] = ye + r;
      offb[r] = unsigned((g.origin + g.sy * min(max(yrow[r], 0), ny - 1) + xs) * sizeof(T));
      const int ly = DIM == 3 ? ty * RY + r : K;
      const bool yst = DIM == 3 ? (ly >= K && ly < EY - K && yrow[r] < ny) : true;
#pragma unroll
      for (int v = 0; v < VX; ++v) {
        const int lx = lane * VX + v;
        if (yst && lx >= K && lx < WX - K && xcol[v] >= 0 && xcol[v] < nx)
          stored |= 1u << (r * VX + v);
      }
    }
  }
  const std::int64_t plane_bytes = g.ss * std::int64_t(sizeof(T));
  const unsigned row_bytes = unsigned(g.sy * sizeof(T));
  const bool xface = xt - K <= 0 || xt - K + WX - 1 >= nx - 1;
  const bool yface = DIM == 3 && (yt - K <= 0 || yt - K + EY - 1 >= ny - 1);
  auto halo_row = [&](int par, int st, int w, int side) -> T* {  // w: warp index + 1
    return halo + ((std::size_t(par * K + st) * (BY + 2) + w) * 2 + side) * WX + lane * VX;
  };

  const int z0 = p0 + blockIdx.z * chunk, z1 = min(z0 + chunk, p1);
  const int q0 = max(z0 - K, 0), q1 = z1 - 1 + K;  // iteration q: input plane q arrives
  const char* const ub = reinterpret_cast<const char*>(u);
  auto load_plane = [&](T(&dst)[RY][VX], int q) {  // planes past the grid are never used
    if (q >= ns) return;
    const char* pl = ub + plane_bytes * q;
    if constexpr (VX == 2) {
      if (vec) {
        using V = typename Vec2<T>::type;
#pragma unroll
        for (int r = 0; r < RY; ++r) {
          const V w = __ldg(reinterpret_cast<const V*>(pl + offb[r]));
          dst[r][0] = w.x;
          dst[r][1] = w.y;
        }
        return;
      }
    }
#pragma unroll
    for (int r = 0; r < RY; ++r)
#pragma unroll
      for (int v = 0; v < VX; ++v) dst[r][v] = __ldg(reinterpret_cast<const T*>(pl + offb[r]) + v);
  };
  auto copy_cells = [&](T* dst, const char* pl) {  // this thread's cells of plane pl
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      const char* src = pl + offb[r];
      if (VX == 2 && vec) {
        cp_async<2 * sizeof(T)>(shared_address(dst + r * WX), src);
      } else {
#pragma unroll
        for (int v = 0; v < VX; ++v)
          cp_async<sizeof(T)>(shared_address(dst + r * WX + v),
                              reinterpret_cast<const T*>(src) + v);
      }
    }
  };
  using Source = typename G::Source;
  const Source fring(halo + G::HALO + G::STAGE, q0, min(q1 - 1, ns - 1));
  const char* const fb = reinterpret_cast<const char*>(f.field);
  // One group: staged input plane qi (planes past the grid are never used, not copied) and
  // source plane pf (none past fring.last).
  auto stage_planes = [&](int qi, int pf) {
    if (STAGED && qi < ns)
      copy_cells(staged + (qi & (G::SLOTS - 1)) * (BY * RY * WX), ub + plane_bytes * qi);
    if (RING && pf <= fring.last) copy_cells(fring.slot(pf), fb + plane_bytes * pf);
    cp_async_commit();  // also when empty: one group per iteration keeps the wait count exact
  };
  auto read_plane = [&](T(&dst)[RY][VX], int q) {
    const T* const src = staged + (q & (G::SLOTS - 1)) * (BY * RY * WX);
#pragma unroll
    for (int r = 0; r < RY; ++r) load_lane<T, VX>(dst[r], src + r * WX);
  };
  char* const outb = reinterpret_cast<char*>(out) +
                     (g.origin + (DIM == 3 ? g.sy * ye : 0) + xe) * std::int64_t(sizeof(T));

  // Input planes: set (q - q0) % SETS holds plane q, the set before it plane q-1; at the top
  // of iteration q, plane q+1 is loaded into the set of plane q-2, or (staged) plane q is read
  // into it. The loop is unrolled by SETS, so every set's role is a compile-time choice and
  // nothing moves.
  T XS[SETS][RY][VX], Xr[K > 1 ? K - 1 : 1][RY][VX], B[K][RY][VX];
#pragma unroll
  for (int r = 0; r < RY; ++r)
#pragma unroll
    for (int v = 0; v < VX; ++v) {
#pragma unroll
      for (int i = 0; i < SETS; ++i) XS[i][r][v] = T(0);
#pragma unroll
      for (int s = 0; s < K; ++s) {
        B[s][r][v] = T(0);
        if (s < K - 1) Xr[s][r][v] = T(0);
      }
    }
  T PF[RY][VX];  // kSourceGenerated: this thread's plane factors (offsets as the loads')
  if constexpr (SRC == kSourceGenerated) {
    const char* const pb = reinterpret_cast<const char*>(f.plane) - plane_bytes;
#pragma unroll
    for (int r = 0; r < RY; ++r)
#pragma unroll
      for (int v = 0; v < VX; ++v) PF[r][v] = __ldg(reinterpret_cast<const T*>(pb + offb[r]) + v);
  }
  if constexpr (STAGED || RING) {  // Source::AHEAD groups; the first holds source plane q0
    stage_planes(q0, q0);
    stage_planes(q0 + 1, ns);
  }
  if constexpr (!STAGED) load_plane(XS[0], q0);

  const auto iteration = [&](int q, auto set) {
    constexpr int J = decltype(set)::value;
    T(&X1)[RY][VX] = XS[(J + SETS - 1) % SETS];  // plane q-1
    T(&IN)[RY][VX] = XS[J];                      // plane q
    if constexpr (STAGED || RING) stage_planes(q + Source::AHEAD, q + 1);
    if constexpr (!STAGED) load_plane(XS[(J + 1) % SETS], q + 1);
    // Input plane q (staged) and source planes up to q - 1 have landed.
    if constexpr (STAGED || RING) cp_async_wait<Source::AHEAD>();
    if constexpr (STAGED) read_plane(IN, q);
    const int par = q & 1;
    T Y[RY][VX];
    // Phase 1 of stage s into P[s-1]; phase 2 of every stage (see above).
    const auto phase1 = [&](T(&P)[K][RY][VX], int s, const T(&F)[RY][VX], auto faces) {
      const int p = q - s;
      T X[RY][VX], hlo[VX], hhi[VX];
#pragma unroll
      for (int r = 0; r < RY; ++r)
#pragma unroll
        for (int v = 0; v < VX; ++v) X[r][v] = s == 1 ? X1[r][v] : Xr[s - 2][r][v];
      if constexpr (DIM == 3) {
        load_lane<T, VX>(hlo, halo_row(par ^ 1, s - 1, ty, 1));
        load_lane<T, VX>(hhi, halo_row(par ^ 1, s - 1, ty + 2, 0));
      } else {
#pragma unroll
        for (int v = 0; v < VX; ++v) hlo[v] = hhi[v] = T(0);
      }
      partial_substep<T, DIM, RY, VX, decltype(faces)::value, SOURCE>(
          P[s - 1], B[s - 1], X, hlo, hhi, c.step[s - 1], gr, F, xcol, yrow, nx, ny, p, ns);
    };
    const auto phase2 = [&](const T(&P)[K][RY][VX], auto faces) {  // Y: stage s's next input,
                                                                   // then its result
#pragma unroll
      for (int r = 0; r < RY; ++r)
#pragma unroll
        for (int v = 0; v < VX; ++v) Y[r][v] = IN[r][v];
#pragma unroll
      for (int s = 1; s <= K; ++s) {
        if constexpr (DIM == 3) {
          store_lane<T, VX>(halo_row(par, s - 1, ty + 1, 0), Y[0]);
          store_lane<T, VX>(halo_row(par, s - 1, ty + 1, 1), Y[RY - 1]);
        }
        if constexpr (MEMORY_ONLY) continue;
        // Its z-plus ghost is in P already; only the stream-face path has a last plane.
        const bool last = (decltype(faces)::value & kFaceStream) != 0 && q - s == ns - 1;
        const T cs = DIM == 3 ? c.step[s - 1].cz : c.step[s - 1].cy;
#pragma unroll
        for (int r = 0; r < RY; ++r)
#pragma unroll
          for (int v = 0; v < VX; ++v)
            Y[r][v] = last ? P[s - 1][r][v] : fma_rn(cs, Y[r][v], P[s - 1][r][v]);
        if (s < K) {
#pragma unroll
          for (int r = 0; r < RY; ++r)
#pragma unroll
            for (int v = 0; v < VX; ++v) Xr[s - 1][r][v] = Y[r][v];
        }
      }
    };
    if constexpr (MEMORY_ONLY) {
      T P[K][RY][VX];
      phase2(P, std::integral_constant<int, 0>{});
    } else if constexpr (STAGED) {  // one path for the iteration's stages at planes q-K..q-1
      const bool stream = (q - K <= 0 && q - 1 >= 0) || (q - K <= ns - 1 && q - 1 >= ns - 1);
      with_substep_path<DIM>(stream, xface, yface, [&](auto faces) {
        T P[K][RY][VX];
#pragma unroll
        for (int s = 1; s <= K; ++s) {
          T F[RY][VX];
          if constexpr (RING) fring.read(F, q - s);
          if constexpr (SRC == kSourceGenerated) generate_source(F, PF, f, q - s, ns);
          phase1(P, s, F, faces);
        }
        phase2(P, faces);
      });
    } else {  // a path per stage
      T P[K][RY][VX];
#pragma unroll
      for (int s = 1; s <= K; ++s) {
        const int p = q - s;
        T F[RY][VX];  // read before the branch: in every path, it would be hoisted anyway
        if constexpr (RING) fring.read(F, p);
        if constexpr (SRC == kSourceGenerated) generate_source(F, PF, f, p, ns);
        with_substep_path<DIM>(p == 0 || p == ns - 1, xface, yface,
                               [&](auto faces) { phase1(P, s, F, faces); });
      }
      phase2(P, std::integral_constant<int, kFaceStream>{});
    }
    const int p = q - K;
    if (p >= z0 && p < z1) {
      char* const pl = outb + plane_bytes * p;
#pragma unroll
      for (int r = 0; r < RY; ++r) {
        T* const row = reinterpret_cast<T*>(pl + (DIM == 3 ? r * row_bytes : 0u));
#pragma unroll
        for (int v = 0; v < VX; ++v)
          if (stored & (1u << (r * VX + v))) row[v] = Y[r][v];
      }
    }
    if constexpr (DIM == 3) __syncthreads();
  };
  for (int q = q0; q <= q1; q += SETS) {
    iteration(q, std::integral_constant<int, 0>{});
    if (q + 1 <= q1) iteration(q + 1, std::integral_constant<int, 1>{});
    if constexpr (SETS == 3) {
      if (q + 2 <= q1) iteration(q + 2, std::integral_constant<int, 2>{});
    }
  }
  if constexpr (STAGED || RING) cp_async_wait<0>();  // no copy outlives the block
}

}  // namespace heatsolve::cuda
