// Temporal blocking (docs/kernels.md, "temporal"): one pass advances the explicit update by K
// steps. 2.5D streaming along the stream axis (z in 3D, y in 2D) with K stages in flight:
// iteration q loads input plane q and computes stage s (the state after s sub-steps) at plane
// q - s for s = 1..K, so each stage is one plane behind the one before it. Each block owns an
// x-y tile plus a redundant halo of K cells per side (overlapped tiling): the halo is
// recomputed by neighbouring blocks, and each sub-step spoils one more layer of it, so after
// K sub-steps exactly the tile's interior is valid.
//
// Registers, no shared memory for the stages: warps lie along x (32 lanes x VX columns, x
// neighbours by warp shuffles, VX-1 of every VX in-lane); each thread owns RY consecutive
// rows of one column group (3D; in-plane y neighbours are its own registers, the two rows
// beyond come from the neighbouring warps through a small double-buffered shared array, one
// barrier per iteration); each stage keeps planes p-1 and p of its column in registers.
//
// Boundaries inside the pass: ghost cells are never stored. Where a neighbour of a domain cell
// lies outside the domain, the consumer substitutes the ghost rule of that face applied to
// its own (inner) value: Dirichlet 2v - inner, Neumann inner + g*h: exactly what
// apply_boundary stores before a single step, so every sub-step sees the ghost values a
// single step would. Periodic and Exchange faces need the opposite side / another rank: the
// backend falls back to single steps for them (docs/kernels.md).
//
// Every point update is stream_point<DIM>() of stencil_kernels.cuh, the single-step kernels'
// function, so a pass of K sub-steps equals K single steps bit for bit.
#pragma once

#include <type_traits>

#include "kernels/cuda/stencil_kernels.cuh"

namespace heatsolve::cuda {

template <typename T, int DIM, int K, int BY, int RY, int VX>
struct TemporalGeom {
  static constexpr int WX = 32 * VX;                           // columns of a warp (extended tile)
  static constexpr int UX = WX - 2 * K;                        // useful columns of a warp
  static constexpr int EY = DIM == 3 ? BY * RY : 1;            // rows of the extended tile (3D)
  static constexpr int UY = DIM == 3 ? EY - 2 * K : 1;         // useful rows
  static constexpr int TILES_PER_BLOCK_X = DIM == 3 ? 1 : BY;  // 2D: warps are x tiles
  static_assert(UX > 0, "x tile too narrow for K");
  static_assert(UY > 0, "y tile too short for K");
  static_assert(DIM == 3 || RY == 1, "2D threads own one row");
  static constexpr std::size_t shared_bytes() {
    return DIM == 3 ? sizeof(T) * 2 * K * BY * 2 * WX : 0;
  }
};

// One sub-step for the RY x VX values of this thread at plane p: C = stage s-1 at p, M at p-1,
// N at p+1; hlo/hhi: the rows above/below the thread's rows (stage s-1, plane p). Neighbours
// outside the domain are replaced by the face's ghost rule (only in blocks/planes at a face).
//
// FACES: which ghost tests are compiled in, a mask of kFaceX, kFaceY (in-plane faces the
// block's extended tile touches) and kFaceStream (planes 0 and ns-1: all three). 0 is the
// interior path: ncu and the SASS showed the face tests, evaluated for every point, were most
// of the instructions of a pass (about 60 per point update, against 7-8 floating-point
// ones); blocks at one in-plane face pay only for that axis. SOURCE = false drops the source
// read.
inline constexpr int kFaceX = 1, kFaceY = 2, kFaceStream = 4;
template <typename T, int DIM, int RY, int VX, int FACES, bool SOURCE>
__device__ __forceinline__ void temporal_substep(
    T (&R)[RY][VX], const T (&M)[RY][VX], const T (&C)[RY][VX], const T (&N)[RY][VX],
    const T (&hlo)[VX], const T (&hhi)[VX], const StencilCoeffs<T>& c, const GhostRules<T>& gr,
    const T* __restrict__ fpl, const int (&roff)[RY], const int (&colc)[VX], const int (&xcol)[VX],
    const int (&yrow)[RY], int nx, int ny, int p, int ns) {
  constexpr int SLO = DIM == 3 ? 4 : 2, SHI = SLO + 1;
#pragma unroll
  for (int r = 0; r < RY; ++r) {
    const T left = __shfl_up_sync(0xffffffffu, C[r][VX - 1], 1);
    const T right = __shfl_down_sync(0xffffffffu, C[r][0], 1);
#pragma unroll
    for (int v = 0; v < VX; ++v) {
      const T u0 = C[r][v];
      T xm = v > 0 ? C[r][v - 1] : left;
      T xp = v < VX - 1 ? C[r][v + 1] : right;
      T ym = 0, yp = 0;
      if constexpr (DIM == 3) {
        ym = r > 0 ? C[r - 1][v] : hlo[v];
        yp = r < RY - 1 ? C[r + 1][v] : hhi[v];
      }
      T sm = M[r][v], sp = N[r][v];
      if constexpr ((FACES & kFaceX) != 0) {
        if (xcol[v] == 0) xm = ghost_rule(gr, 0, u0);
        if (xcol[v] == nx - 1) xp = ghost_rule(gr, 1, u0);
      }
      if constexpr (DIM == 3 && (FACES & kFaceY) != 0) {
        if (yrow[r] == 0) ym = ghost_rule(gr, 2, u0);
        if (yrow[r] == ny - 1) yp = ghost_rule(gr, 3, u0);
      }
      if constexpr ((FACES & kFaceStream) != 0) {
        if (p == 0) sm = ghost_rule(gr, SLO, u0);
        if (p == ns - 1) sp = ghost_rule(gr, SHI, u0);
      }
      R[r][v] = stream_point<DIM>(c, u0, xm, xp, ym, yp, sm, sp, SOURCE ? fpl : nullptr,
                                  roff[r] + colc[v]);
    }
  }
}

// Block: 32 x BY threads. 3D: one x-y tile per block (UX x UY useful cells), warps stacked in
// y. 2D: each warp is its own x tile (no barrier, no shared memory). blockIdx.z: chunk of
// `chunk` output planes along the stream axis.
template <typename T, int DIM, int K, int BY, int RY, int VX>
__global__ void __launch_bounds__(32 * BY)
    temporal_kernel(const T* __restrict__ u, T* __restrict__ out, const T* __restrict__ f,
                    StreamGeom g, StencilCoeffs<T> c, GhostRules<T> gr, int chunk) {
  using G = TemporalGeom<T, DIM, K, BY, RY, VX>;
  constexpr int WX = G::WX, UX = G::UX, EY = G::EY, UY = G::UY;
  extern __shared__ unsigned char temporal_smem_raw[];
  T* const sh = reinterpret_cast<T*>(temporal_smem_raw);  // [2][K][BY][2][WX] (3D)

  const int lane = threadIdx.x, ty = threadIdx.y;
  int xt, yt;  // tile origin (first useful column / row)
  if constexpr (DIM == 3) {
    xt = blockIdx.x * UX;
    yt = blockIdx.y * UY;
  } else {
    xt = (blockIdx.x * BY + ty) * UX;
    yt = 0;
    if (xt >= g.nx) return;  // whole warp; no barriers in 2D
  }
  const int xe = xt - K + lane * VX;  // first column of this lane
  const int ye = DIM == 3 ? yt - K + ty * RY : 0;
  const int nx = g.nx, ny = g.ny_plane, ns = g.ns;

  int xcol[VX], yrow[RY];
  int colc[VX], roff[RY];  // clamped in-plane offsets (column; row * sy) of this thread's cells
  bool xuse[VX], yuse[RY];
#pragma unroll
  for (int v = 0; v < VX; ++v) {
    xcol[v] = xe + v;
    const int lx = lane * VX + v;
    xuse[v] = lx >= K && lx < WX - K && xcol[v] < nx;
  }
#pragma unroll
  for (int r = 0; r < RY; ++r) {
    yrow[r] = ye + r;
    const int ly = DIM == 3 ? ty * RY + r : K;
    yuse[r] = DIM == 3 ? (ly >= K && ly < EY - K && yrow[r] < ny) : true;
  }
#pragma unroll
  for (int v = 0; v < VX; ++v) colc[v] = min(max(xcol[v], 0), nx - 1);
#pragma unroll
  for (int r = 0; r < RY; ++r) roff[r] = int(g.sy) * min(max(yrow[r], 0), ny - 1);
  const T* __restrict__ u0p = u + g.origin;
  // Stores: the cells a thread stores lie inside the grid, where the clamps above change
  // nothing, so cell (r, v) is at first_cell + r * sy + v; one bit per stored cell. With
  // per-cell offsets and use flags, ncu counted 72 instructions per warp and plane for the 8
  // stores of the k = 2 default; this form made 3D passes 9 % faster (docs/performance.md,
  // session 4). The loads keep their clamped offsets: the same form for them in interior
  // blocks measured no faster.
  unsigned stored = 0;
#pragma unroll
  for (int r = 0; r < RY; ++r)
#pragma unroll
    for (int v = 0; v < VX; ++v)
      if (xuse[v] && yuse[r]) stored |= 1u << (r * VX + v);
  T* __restrict__ out_cell0 = out + g.origin + (DIM == 3 ? int(g.sy) * ye : 0) + xe;
  // Does the extended tile reach a face? (Block-uniform in 3D, warp-uniform in 2D.)
  const bool xface = xt - K <= 0 || xt - K + WX - 1 >= nx - 1;
  const bool yface = DIM == 3 && (yt - K <= 0 || yt - K + EY - 1 >= ny - 1);

  const int z0 = blockIdx.z * chunk, z1 = min(z0 + chunk, ns);
  const int q0 = max(z0 - K, 0), q1 = z1 - 1 + K;  // iterations (input planes)

  // Stage rings: Ms[s] = stage s at plane q-s-1, Cs[s] = at q-s (before iteration q's
  // update of stage s+1). Stage 0 is the input.
  T Ms[K][RY][VX], Cs[K][RY][VX], in[RY][VX];
#pragma unroll
  for (int s = 0; s < K; ++s)
#pragma unroll
    for (int r = 0; r < RY; ++r)
#pragma unroll
      for (int v = 0; v < VX; ++v) Ms[s][r][v] = Cs[s][r][v] = T(0);
        // Prefetch of input plane q0.
#pragma unroll
  for (int r = 0; r < RY; ++r)
#pragma unroll
    for (int v = 0; v < VX; ++v) in[r][v] = __ldg(u0p + g.ss * q0 + (roff[r] + colc[v]));

  // Shared halo rows: sh[((par*K + s)*BY + ty)*2 + side][x]; side 0 = first row, 1 = last.
  auto slot = [&](int par, int s, int w, int side) -> T* {
    return sh + ((std::size_t(par * K + s) * BY + w) * 2 + side) * WX;
  };

  for (int q = q0; q <= q1; ++q) {
    const int par = q & 1;
    T N[RY][VX];
#pragma unroll
    for (int r = 0; r < RY; ++r)
#pragma unroll
      for (int v = 0; v < VX; ++v) N[r][v] = in[r][v];
    if (q + 1 <= q1) {  // prefetch the next input plane (clamped: planes past ns are unused)
      // One 64-bit plane base, 32-bit in-plane offsets (one IMAD.WIDE per address).
      const T* __restrict__ src = u0p + g.ss * min(q + 1, ns - 1);
#pragma unroll
      for (int r = 0; r < RY; ++r)
#pragma unroll
        for (int v = 0; v < VX; ++v) in[r][v] = __ldg(src + (roff[r] + colc[v]));
    }
#pragma unroll
    for (int s = 1; s <= K; ++s) {
      const int p = q - s;  // plane of stage s computed now
      T hlo[VX], hhi[VX];
      if constexpr (DIM == 3) {
        const int pp = par ^ 1;  // written last iteration
#pragma unroll
        for (int v = 0; v < VX; ++v) {
          hlo[v] = ty > 0 ? slot(pp, s - 1, ty - 1, 1)[lane * VX + v] : Cs[s - 1][0][v];
          hhi[v] = ty < BY - 1 ? slot(pp, s - 1, ty + 1, 0)[lane * VX + v] : Cs[s - 1][RY - 1][v];
        }
      } else {
#pragma unroll
        for (int v = 0; v < VX; ++v) hlo[v] = hhi[v] = T(0);
      }
      T R[RY][VX];
      const T* fpl = f ? f + g.origin + g.ss * min(max(p, 0), ns - 1) : nullptr;
      // Block- and plane-uniform choice of the path (planes p < 0 or >= ns are computed but
      // never used: their consumers substitute the z ghost rule).
      const auto substep = [&](auto faces, auto source) {
        temporal_substep<T, DIM, RY, VX, decltype(faces)::value, decltype(source)::value>(
            R, Ms[s - 1], Cs[s - 1], N, hlo, hhi, c, gr, fpl, roff, colc, xcol, yrow, nx, ny, p,
            ns);
      };
      const auto with_source = [&](auto faces) {
        if (fpl)
          substep(faces, std::true_type{});
        else
          substep(faces, std::false_type{});
      };
      // The stream-face planes (2 of ns) test every face, needed or not.
      using std::integral_constant;
      if (p == 0 || p == ns - 1) {
        with_source(integral_constant<int, kFaceX | kFaceY | kFaceStream>{});
      } else if (!xface && !yface) {
        with_source(integral_constant<int, 0>{});
      } else if constexpr (DIM == 2) {  // no y faces: no kFaceY instances in 2D
        with_source(integral_constant<int, kFaceX>{});
      } else if (!yface) {
        with_source(integral_constant<int, kFaceX>{});
      } else if (!xface) {
        with_source(integral_constant<int, kFaceY>{});
      } else {
        with_source(integral_constant<int, kFaceX | kFaceY>{});
      }
      // Rotate stage s-1 (plane p+1 becomes current) and publish its edge rows.
#pragma unroll
      for (int r = 0; r < RY; ++r)
#pragma unroll
        for (int v = 0; v < VX; ++v) {
          Ms[s - 1][r][v] = Cs[s - 1][r][v];
          Cs[s - 1][r][v] = N[r][v];
        }
      if constexpr (DIM == 3) {
#pragma unroll
        for (int v = 0; v < VX; ++v) {
          slot(par, s - 1, ty, 0)[lane * VX + v] = N[0][v];
          slot(par, s - 1, ty, 1)[lane * VX + v] = N[RY - 1][v];
        }
      }
#pragma unroll
      for (int r = 0; r < RY; ++r)
#pragma unroll
        for (int v = 0; v < VX; ++v) N[r][v] = R[r][v];
    }
    // N = stage K at plane q - K.
    const int p = q - K;
    if (p >= z0 && p < z1) {
      T* __restrict__ dst = out_cell0 + g.ss * p;
#pragma unroll
      for (int r = 0; r < RY; ++r) {
        T* __restrict__ row = dst + (DIM == 3 ? r * int(g.sy) : 0);
#pragma unroll
        for (int v = 0; v < VX; ++v)
          if ((stored >> (r * VX + v)) & 1u) row[v] = N[r][v];
      }
    }
    if constexpr (DIM == 3) __syncthreads();
  }
}

}  // namespace heatsolve::cuda
