// Temporal blocking (docs/kernels.md, "temporal"): one pass advances the explicit update by K
// steps. 2.5D streaming along the stream axis (z in 3D, y in 2D) with K stages in flight:
// iteration q loads input plane q and completes stage s (the state after s sub-steps) at
// plane q - s for s = 1..K, so each stage is one plane behind the one before it. Each block
// owns an x-y tile plus a redundant halo of K cells per side (overlapped tiling): the halo is
// recomputed by neighbouring blocks, and each sub-step spoils one more layer of it, so after
// K sub-steps exactly the tile's interior is valid.
//
// Registers, no shared memory for the stages: warps lie along x (32 lanes x VX columns, x
// neighbours by warp shuffles, VX-1 of every VX in-lane); each thread owns RY consecutive
// rows of one column group (3D; in-plane y neighbours are its own registers, the two rows
// beyond come from the neighbouring warps through a small double-buffered shared array, one
// barrier per iteration).
//
// Two designs share that frame (TemporalDesign, kernels/stencil/cuda/temporal_launch.cuh):
//   - rings (temporal_kernel): each stage keeps planes p-1 and p of its column and rotates
//     them (M <- C <- N) every plane; the input is prefetched one plane ahead;
//   - partial sums (temporal_partial_kernel, in temporal_partial_kernels.cuh): each stage
//     keeps its input plane and the z-minus term already multiplied, nothing rotates; aligned
//     vector loads where the padded rows allow them. Input planes either in three register sets
//     used in turn, or staged (each thread's cells copied two planes ahead into shared memory by
//     cp.async, all K stages under one face path per iteration).
//
// The source term (Jacobi), SRC: kSourceStaged instances stage each thread's own cells of every
// source plane once per pass in shared memory by cp.async, ahead of use (SourceRing below), and
// the K sub-steps read it there; kSourceGenerated instances generate it from its separable
// form (SourceRef): each thread loads its cells' plane factors once, and a sub-step multiplies
// them by the plane's stream factor, so a pass reads no source field at all; kSourceNone
// instances allocate and copy nothing.
//
// Boundaries inside the pass: ghost cells are never stored. Where a neighbour of a domain cell
// lies outside the domain, the consumer substitutes the ghost rule of that face applied to
// its own (inner) value: Dirichlet 2v - inner, Neumann inner + g*h: exactly what
// apply_boundary stores before a single step, so every sub-step sees the ghost values a
// single step would. Periodic and Exchange faces need the opposite side / another rank: the
// backend falls back to single steps for them (docs/kernels.md).
//
// Both designs apply the point update of stencil_point.cuh ("the point update every kernel
// uses"), every rounding explicit: a pass gives the bits of K single steps of any rung
// (tests/kernels/stencil/test_cuda_temporal.cpp checks it bit for bit).
//
// A multigrid visit's post-smoothing pass (rings, PROLONG) reads the iterate plus the coarse
// correction's linear prolongation, added to each input plane as it enters the stages from
// coarse planes staged in shared memory (ProlongTile), so that prolong_add's pass and the
// corrected iterate's store and reload are not needed.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/cp_async.cuh"
#include "kernels/stencil/cuda/stencil_kernels.cuh"

namespace heatsolve::cuda {

template <typename T, int K, int BY, int RY, int VX>
struct SourceRing;
template <typename T, int K, int BY, int RY, int VX>
struct ProlongTile;

template <typename T, int DIM, int K, int BY, int RY, int VX, int SRC>
struct TemporalGeom {
  static constexpr int WX = 32 * VX;                           // columns of a warp (extended tile)
  static constexpr int UX = WX - 2 * K;                        // useful columns of a warp
  static constexpr int EY = DIM == 3 ? BY * RY : 1;            // rows of the extended tile (3D)
  static constexpr int UY = DIM == 3 ? EY - 2 * K : 1;         // useful rows
  static constexpr int TILES_PER_BLOCK_X = DIM == 3 ? 1 : BY;  // 2D: warps are x tiles
  static_assert(UX > 0, "x tile too narrow for K");
  static_assert(UY > 0, "y tile too short for K");
  static_assert(DIM == 3 || RY == 1, "2D threads own one row");
  static constexpr int HALO = DIM == 3 ? 2 * K * BY * 2 * WX : 0;  // values, then the source
  static constexpr std::size_t shared_bytes(bool prolong = false) {
    return sizeof(T) * (HALO + (SRC == kSourceStaged ? SourceRing<T, K, BY, RY, VX>::SIZE : 0) +
                        (prolong ? ProlongTile<T, K, BY, RY, VX>::SIZE : 0));
  }
};

// A lane's cells in shared memory: with VX = 2 one aligned vector access (Vec2, as the
// 2.5d-register rung), otherwise single values.
template <typename T, int VX>
__device__ __forceinline__ void load_lane(T (&dst)[VX], const T* src) {
  if constexpr (VX == 2) {
    const typename Vec2<T>::type w = *reinterpret_cast<const typename Vec2<T>::type*>(src);
    dst[0] = w.x;
    dst[1] = w.y;
  } else {
#pragma unroll
    for (int v = 0; v < VX; ++v) dst[v] = src[v];
  }
}
template <typename T, int VX>
__device__ __forceinline__ void store_lane(T* dst, const T (&src)[VX]) {
  if constexpr (VX == 2) {
    typename Vec2<T>::type w;
    w.x = src[0];
    w.y = src[1];
    *reinterpret_cast<typename Vec2<T>::type*>(dst) = w;
  } else {
#pragma unroll
    for (int v = 0; v < VX; ++v) dst[v] = src[v];
  }
}

// ---- the source term ------------------------------------------------------------------
// Stage s reads the source at plane q - s in iteration q, so every plane is read in K
// iterations in turn. Instances with a source stage it like the staged input: each thread
// copies its own cells of plane q + 1 into shared memory by cp.async at the top of iteration q
// (in one group with the staged input plane where there is one) and waits for the group of
// iteration q - 2, which holds plane q - 1: one global read per plane and pass, AHEAD
// iterations to land, instead of K reads per plane that the sub-steps stall on. A thread reads
// only what it copied, so its own wait suffices. Planes q - K .. q + 1 are live in iteration
// q: K + AHEAD slots of [warp][row][WX] values. The prologue's first group holds plane q0.
// Reads clamp to the staged planes [q0, last]: planes outside are computed but never used (the
// spoiled ones below a chunk, those past the grid), exactly as with the grid's clamped plane.
template <typename T, int K, int BY, int RY, int VX>
struct SourceRing {
  static constexpr int AHEAD = 2;
  static constexpr int SLOTS = K + AHEAD;
  static constexpr int WX = 32 * VX;
  static constexpr int SLOT = BY * RY * WX;  // values per slot
  static constexpr int SIZE = SLOTS * SLOT;

  T* mine;       // this thread's cell (0, 0) in slot 0
  int q0, last;  // first and last plane staged
  __device__ __forceinline__ SourceRing(T* ring, int q0_, int last_)
      : mine(ring + threadIdx.y * RY * WX + threadIdx.x * VX), q0(q0_), last(last_) {}
  // Plane p's slot (row 0 of this thread; rows WX apart).
  __device__ __forceinline__ T* slot(int p) const { return mine + unsigned(p) % SLOTS * SLOT; }
  __device__ __forceinline__ void read(T (&F)[RY][VX], int p) const {
    const T* const src = slot(min(max(p, q0), last));
#pragma unroll
    for (int r = 0; r < RY; ++r) load_lane<T, VX>(F[r], src + r * WX);
  }
};

// kSourceGenerated: this thread's source at plane p from its cells' plane factors PF (loaded
// once) and the plane's stream factor (clamped into the grid: planes outside are computed but
// never used), as source_value() forms it.
template <typename T, int RY, int VX>
__device__ __forceinline__ void generate_source(T (&F)[RY][VX], const T (&PF)[RY][VX],
                                                const SourceRef<T>& f, int p, int ns) {
  const T column = __ldg(f.column + min(max(p, 0), ns - 1));
#pragma unroll
  for (int r = 0; r < RY; ++r)
#pragma unroll
    for (int v = 0; v < VX; ++v)
      F[r][v] = add_rn(f.offset, mul_rn(f.scale, mul_rn(PF[r][v], column)));
}

// FACES: which ghost tests a sub-step compiles in, a mask of kFaceX, kFaceY (in-plane faces
// the block's extended tile touches) and kFaceStream (planes 0 and ns-1: all three). 0 is the
// interior path: ncu and the SASS showed the face tests, evaluated for every point, were most
// of the instructions of a pass (about 60 per point update, against 7-8 floating-point
// ones); blocks at one in-plane face pay only for that axis.
inline constexpr int kFaceX = 1, kFaceY = 2, kFaceStream = 4;

// The in-plane neighbours of each of this thread's RY x VX cells of plane values X (both
// designs): x from the lane's own columns and its neighbour lanes (shuffles), y from the
// thread's own rows and hlo/hhi (the rows just outside them, 3D), with the x / y ghost rules
// of FACES substituted where the neighbour lies outside the domain. cell(r, v, u0, xm, xp,
// ym, yp) completes the update of cell (r, v).
template <typename T, int DIM, int RY, int VX, int FACES, typename Cell>
__device__ __forceinline__ void for_each_cell_inplane(const T (&X)[RY][VX], const T (&hlo)[VX],
                                                      const T (&hhi)[VX], const GhostRules<T>& gr,
                                                      const int (&xcol)[VX], const int (&yrow)[RY],
                                                      int nx, int ny, Cell&& cell) {
#pragma unroll
  for (int r = 0; r < RY; ++r) {
    const T left = __shfl_up_sync(0xffffffffu, X[r][VX - 1], 1);
    const T right = __shfl_down_sync(0xffffffffu, X[r][0], 1);
#pragma unroll
    for (int v = 0; v < VX; ++v) {
      const T u0 = X[r][v];
      T xm = v > 0 ? X[r][v - 1] : left;
      T xp = v < VX - 1 ? X[r][v + 1] : right;
      T ym = 0, yp = 0;
      if constexpr (DIM == 3) {
        ym = r > 0 ? X[r - 1][v] : hlo[v];
        yp = r < RY - 1 ? X[r + 1][v] : hhi[v];
      }
      if constexpr ((FACES & kFaceX) != 0) {
        if (xcol[v] == 0) xm = ghost_rule(gr, 0, u0);
        if (xcol[v] == nx - 1) xp = ghost_rule(gr, 1, u0);
      }
      if constexpr (DIM == 3 && (FACES & kFaceY) != 0) {
        if (yrow[r] == 0) ym = ghost_rule(gr, 2, u0);
        if (yrow[r] == ny - 1) yp = ghost_rule(gr, 3, u0);
      }
      cell(r, v, u0, xm, xp, ym, yp);
    }
  }
}

// One sub-step (rings design) for the RY x VX values of this thread at plane p: C = stage
// s-1 at p, M at p-1, N at p+1; hlo/hhi: the rows above/below the thread's rows (stage s-1,
// plane p); F: the source at plane p (SOURCE = false: unused). NORM: also adds to *acc the
// square of stencil(C, F, *rc) (a residual of the sub-step's input, the bits a residual
// sweep stores) of each cell whose bit is set in `owned`.
template <typename T, int DIM, int RY, int VX, int FACES, bool SOURCE, bool NORM = false>
__device__ __forceinline__ void temporal_substep(
    T (&R)[RY][VX], const T (&M)[RY][VX], const T (&C)[RY][VX], const T (&N)[RY][VX],
    const T (&hlo)[VX], const T (&hhi)[VX], const StencilCoeffs<T>& c, const GhostRules<T>& gr,
    const T (&F)[RY][VX], const int (&xcol)[VX], const int (&yrow)[RY], int nx, int ny, int p,
    int ns, const StencilCoeffs<T>* rc = nullptr, double* acc = nullptr, unsigned owned = 0) {
  constexpr int SLO = DIM == 3 ? 4 : 2, SHI = SLO + 1;
  for_each_cell_inplane<T, DIM, RY, VX, FACES>(
      C, hlo, hhi, gr, xcol, yrow, nx, ny, [&](int r, int v, T u0, T xm, T xp, T ym, T yp) {
        T sm = M[r][v], sp = N[r][v];
        if constexpr ((FACES & kFaceStream) != 0) {
          if (p == 0) sm = ghost_rule(gr, SLO, u0);
          if (p == ns - 1) sp = ghost_rule(gr, SHI, u0);
        }
        const T fv = SOURCE ? F[r][v] : T(0);
        R[r][v] = point_finish<DIM>(c, point_part<DIM, SOURCE>(c, u0, xm, xp, ym, yp, sm, fv), sp);
        if constexpr (NORM) {
          if ((owned >> (r * VX + v)) & 1u) {
            const T res = point_finish<DIM>(
                *rc, point_part<DIM, SOURCE>(*rc, u0, xm, xp, ym, yp, sm, fv), sp);
            *acc += double(res) * double(res);
          }
        }
      });
}

// Where a pass with NORM (temporal_kernel) leaves the squared residual of its input: the
// residual's coefficients, and one partial sum per warp of the launch grid (block-major,
// warps in y order), which the launcher sums in a fixed order; the sum covers the stream
// axis' planes [lo, hi) only (a deep-halo pass: the block inside its margins).
template <typename T>
struct PassNorm {
  StencilCoeffs<T> rc{};
  double* partials = nullptr;
  int lo = 0, hi = 0;
};

// This warp's sum of acc into partials[(linear block) * BY + warp], by lane 0.
template <int BY>
__device__ __forceinline__ void store_warp_norm(double acc, double* partials) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (threadIdx.x == 0) {
    const unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    partials[std::size_t(block) * BY + threadIdx.y] = acc;
  }
}

// The block- and plane-uniform choice of a compiled face path, shared by both designs:
// body(FACES) with FACES a kFace* mask as an integral constant. `stream`: the code computes a
// stream-face plane (0 or ns-1; 2 of ns), which tests every face; planes p < 0 or >= ns are
// computed but never used.
template <int DIM, typename Body>
__device__ __forceinline__ void with_substep_path(bool stream, bool xface, bool yface,
                                                  Body&& body) {
  using std::integral_constant;
  if (stream) {
    body(integral_constant<int, kFaceX | kFaceY | kFaceStream>{});
  } else if (!xface && !yface) {
    body(integral_constant<int, 0>{});
  } else if constexpr (DIM == 2) {  // no y faces: no kFaceY instances in 2D
    body(integral_constant<int, kFaceX>{});
  } else if (!yface) {
    body(integral_constant<int, kFaceX>{});
  } else if (!xface) {
    body(integral_constant<int, kFaceY>{});
  } else {
    body(integral_constant<int, kFaceX | kFaceY>{});
  }
}

// A pass whose input is the iterate plus a coarse-grid correction (a multigrid visit's
// post-smoothing, Backend::prolong_add_sweeps): the coarse field's cell (0, 0, 0), strides and
// interior rows and columns; the pass's plane p is the child of coarse plane (p - offset) / 2
// (rounded down; a deep-halo pass's margin planes lie over the coarse field's margins), rows
// and columns twice the coarse ones (3D). Null: the input is u alone.
template <typename T>
struct ProlongRef {
  const T* coarse = nullptr;
  long long sy = 0, sz = 0;
  int nx = 0, ny = 0;
  int offset = 0;
};

// The coarse correction under a block's tile, plane by plane in shared memory: a ring of
// SLOTS planes of CW x CH values (the tile's coarse columns and rows, one more on each side
// for the neighbours), copied by cp.async three iterations ahead of the plane that first needs
// them, so that adding the correction waits on no load (loads issued as each plane enters the
// pass leave it waiting on them). Iteration q reads coarse planes K - 1 .. K + 1 (K the parent
// of plane q) and copies up to K + 3.
template <typename T, int K, int BY, int RY, int VX>
struct ProlongTile {
  static constexpr int WX = 32 * VX, EY = BY * RY;
  static constexpr int CW = WX / 2 + 3, CH = EY / 2 + 3, PLANE = CW * CH;
  static constexpr int SLOTS = 6;
  static constexpr int SIZE = SLOTS * PLANE;

  T* ring;
  int cx0, cy0;    // the tile's first coarse column and row (before the clamp)
  int khi;         // the last coarse plane the pass's planes reach
  int copied = 0;  // the last plane copied (block-uniform)
  // Plane P's slot; planes lie above -SLOTS * 64.
  __device__ __forceinline__ T* slot(int P) const {
    return ring + unsigned(P + SLOTS * 64) % SLOTS * PLANE;
  }
  // Copies coarse planes up to `upto` (clamped to the reached ones) not yet copied: each
  // thread a share of each plane's cells, rows and columns clamped into the coarse field with
  // its ghosts (a clamped value lands where no cell inside the grid reads it).
  __device__ __forceinline__ void copy_upto(int upto, const ProlongRef<T>& pr) {
    upto = min(upto, khi);
    for (; copied < upto;) {
      const int P = ++copied;
      T* const dst = slot(P);
      const T* const src = pr.coarse + P * pr.sz;
      for (int t = threadIdx.y * 32 + threadIdx.x; t < PLANE; t += 32 * BY) {
        const int gx = min(max(cx0 + t % CW, -1), pr.nx);
        const int gy = min(max(cy0 + t / CW, -1), pr.ny);
        cp_async<sizeof(T)>(shared_address(dst + t), src + gy * pr.sy + gx);
      }
    }
  }
  // X (this thread's cells of pass plane p: columns x0 .. x0 + VX - 1, rows y0 .. y0 + RY - 1,
  // unclamped; cells outside the grid take values no cell inside reads) += the linear
  // prolongation of the correction: prolong_add_kernel's arithmetic in its order (the parent
  // plus a quarter of the difference to the parent's neighbour on the child's side, x, then y,
  // then z; unfused, then added to the cell in double), so the bits of prolong_add followed by
  // the pass. The thread's first row has K's parity (tiles start on even rows, RY is even), so
  // its RY rows have their parents and y neighbours in RY / 2 + 1 coarse rows (K odd) or
  // RY / 2 + 2 (K even), each read once for all of them.
  __device__ __forceinline__ void add(T (&X)[RY][VX], int x0, int y0, int p, int offset) const {
    static_assert(RY % 2 == 0, "rows pair with their parents");
    constexpr bool ODD = (K & 1) != 0;  // y0's parity
    constexpr int ROWS = RY / 2 + (ODD ? 1 : 2);
    const int kc = p - offset;  // may be negative: >> and & act on two's complement
    const T* const parents = slot(kc >> 1);
    const T* const zn = slot((kc >> 1) + ((kc & 1) ? 1 : -1));
    const int first = (y0 >> 1) - (ODD ? 0 : 1);  // the first coarse row
#pragma unroll
    for (int v = 0; v < VX; ++v) {
      const int col = x0 + v;
      const int at = (first - cy0) * CW + (col >> 1) - cx0;
      const int xs = (col & 1) ? 1 : -1;
      double parent[ROWS];
      T xn[ROWS], zv[ROWS];
#pragma unroll
      for (int q = 0; q < ROWS; ++q) {
        parent[q] = double(parents[at + q * CW]);
        xn[q] = parents[at + q * CW + xs];
        zv[q] = zn[at + q * CW];
      }
#pragma unroll
      for (int r = 0; r < RY; ++r) {
        // Row y0 + r: its parent's coarse row and the neighbour's on its side.
        const int pq = ODD ? (r + 1) >> 1 : (r >> 1) + 1;
        const bool odd_row = ODD ? (r & 1) == 0 : (r & 1) != 0;
        const int nq = odd_row ? pq + 1 : pq - 1;
        const double pv = parent[pq];
        const auto quarter = [&](double c) { return __dmul_rn(0.25, __dsub_rn(c, pv)); };
        double c = __dadd_rn(pv, quarter(double(xn[pq])));
        c = __dadd_rn(c, quarter(parent[nq]));
        c = __dadd_rn(c, quarter(double(zv[pq])));
        X[r][v] = static_cast<T>(__dadd_rn(double(X[r][v]), c));
      }
    }
  }
};

// Block: 32 x BY threads. 3D: one x-y tile per block (UX x UY useful cells), warps stacked in
// y. 2D: each warp is its own x tile (no barrier; shared memory only for the source).
// blockIdx.z: chunk of `chunk` output planes along the stream axis, the chunks tiling the
// planes [p0, p1) that the pass stores (0, ns: all); a chunk's planes are computed the same
// way wherever it starts, so a range's cells have the full pass's bits. SRC: the source term
// (kSource*, above); without one f is ignored. NORM: the first sub-step also measures the
// residual of the input (PassNorm): each cell once, by the block that stores it, in the chunk
// that stores its plane, so the input is read once for the sweeps and the convergence check.
// MINB: resident blocks per SM the instance is compiled for (TemporalPolicy::norm_blocks; 0:
// ptxas's choice). PROLONG (3D): the input is u + the prolonged coarse correction `pr`
// (ProlongTile::add), added as each plane enters the stages.
template <typename T, int DIM, int K, int BY, int RY, int VX, int SRC, bool NORM = false,
          int MINB = 0, bool PROLONG = false>
__global__ void __launch_bounds__(32 * BY, MINB)
    temporal_kernel(const T* __restrict__ u, T* __restrict__ out, SourceRef<T> f, StreamGeom g,
                    PassCoeffs<T> c, GhostRules<T> gr, int chunk, int p0, int p1, PassNorm<T> norm,
                    ProlongRef<T> pr = {}) {
  static_assert(!PROLONG || DIM == 3, "the prolonged input is 3D");
  static_assert(K <= PassCoeffs<T>::kMaxSteps, "more sub-steps than PassCoeffs holds");
  using G = TemporalGeom<T, DIM, K, BY, RY, VX, SRC>;
  constexpr bool SOURCE = SRC != kSourceNone, RING = SRC == kSourceStaged;
  constexpr int WX = G::WX, UX = G::UX, EY = G::EY, UY = G::UY;
  extern __shared__ __align__(16) unsigned char temporal_smem_raw[];
  T* const sh = reinterpret_cast<T*>(temporal_smem_raw);  // [2][K][BY][2][WX] (3D)

  const int lane = threadIdx.x, ty = threadIdx.y;
  int xt, yt;  // tile origin (first useful column / row)
  if constexpr (DIM == 3) {
    xt = blockIdx.x * UX;
    yt = blockIdx.y * UY;
  } else {
    xt = (blockIdx.x * BY + ty) * UX;
    yt = 0;
    if (xt >= g.nx) {  // whole warp; no barriers in 2D
      if constexpr (NORM) store_warp_norm<BY>(0.0, norm.partials);
      return;
    }
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
  // nothing, so cell (r, v) is at first_cell + r * sy + v; one bit per stored cell. Per-cell
  // offsets and use flags made the stores the largest item of a pass's instructions. The
  // loads keep their clamped offsets (cells outside the grid must read something); the
  // same form for them in interior blocks is no faster.
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

  const int z0 = p0 + blockIdx.z * chunk, z1 = min(z0 + chunk, p1);
  const int q0 = max(z0 - K, 0), q1 = z1 - 1 + K;  // iterations (input planes)

  using Source = SourceRing<T, K, BY, RY, VX>;
  const Source fring(sh + G::HALO, q0, min(q1 - 1, ns - 1));
  const auto stage_source = [&](int p) {  // this thread's cells of plane p, one group
    if (RING && p <= fring.last) {
      const T* const src = f.field + g.origin + g.ss * p;
      T* const dst = fring.slot(p);
#pragma unroll
      for (int r = 0; r < RY; ++r)
#pragma unroll
        for (int v = 0; v < VX; ++v)
          cp_async<sizeof(T)>(shared_address(dst + r * WX + v), src + (roff[r] + colc[v]));
    }
    cp_async_commit();
  };
  if constexpr (RING) {
    stage_source(q0);
    cp_async_commit();  // Source::AHEAD groups before the first iteration's
  }
  T PF[RY][VX];  // kSourceGenerated: this thread's plane factors
  if constexpr (SRC == kSourceGenerated) {
#pragma unroll
    for (int r = 0; r < RY; ++r)
#pragma unroll
      for (int v = 0; v < VX; ++v)
        PF[r][v] = __ldg(f.plane + (g.origin - g.ss) + roff[r] + colc[v]);
  }

  // PROLONG: the coarse planes of iterations q0 .. q0 + 2, seen by every thread before the
  // first; the planes the pass reaches: those of its first and last planes, and their z
  // neighbours on the children's sides.
  using Tile = ProlongTile<T, K, BY, RY, VX>;
  const auto coarse_parent = [&](int q) { return (min(q, ns - 1) - pr.offset) >> 1; };
  Tile ptile{};
  if constexpr (PROLONG) {
    ptile.ring = sh + G::HALO + (RING ? Source::SIZE : 0);
    ptile.cx0 = ((xt - K) >> 1) - 1;
    ptile.cy0 = ((yt - K) >> 1) - 1;
    const int first = -pr.offset, last = ns - 1 - pr.offset;
    const int klo = (first >> 1) - ((first & 1) ? 0 : 1);
    ptile.khi = (last >> 1) + ((last & 1) ? 1 : 0);
    ptile.copied = max(coarse_parent(q0) - 1, klo) - 1;
    ptile.copy_upto(coarse_parent(q0 + 2) + 1, pr);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
  }

  // Stage rings: Ms[s] = stage s at plane q-s-1, Cs[s] = at q-s (before iteration q's
  // update of stage s+1). Stage 0 is the input.
  T Ms[K][RY][VX], Cs[K][RY][VX], in[RY][VX];
  double norm_acc = 0;  // NORM: this thread's squared residuals
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
    // The input plane q (clamped, as loaded), corrected here rather than at its load, so that
    // the prefetch below stays in flight during the sub-steps; cells outside the grid (loaded
    // clamped) take a correction of their own: no cell inside reads them.
    if constexpr (PROLONG) ptile.add(N, xe, ye, min(q, ns - 1), pr.offset);
    if (q + 1 <= q1) {  // prefetch the next input plane (clamped: planes past ns are unused)
      // One 64-bit plane base, 32-bit in-plane offsets (one IMAD.WIDE per address).
      const T* __restrict__ src = u0p + g.ss * min(q + 1, ns - 1);
#pragma unroll
      for (int r = 0; r < RY; ++r)
#pragma unroll
        for (int v = 0; v < VX; ++v) in[r][v] = __ldg(src + (roff[r] + colc[v]));
    }
    if constexpr (PROLONG) {
      // Iteration q + 3's planes, in this iteration's group: waited for two iterations on, seen
      // by every thread past that iteration's barrier.
      ptile.copy_upto(coarse_parent(q + 3) + 1, pr);
      if constexpr (!RING) {
        cp_async_commit();
        cp_async_wait<2>();
      }
    }
    if constexpr (RING) {
      stage_source(q + 1);
      cp_async_wait<Source::AHEAD>();  // planes up to q - 1 have landed
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
      T R[RY][VX], F[RY][VX];
      if constexpr (RING) fring.read(F, p);
      if constexpr (SRC == kSourceGenerated) generate_source(F, PF, f, p, ns);
      with_substep_path<DIM>(p == 0 || p == ns - 1, xface, yface, [&](auto faces) {
        constexpr int FACES = decltype(faces)::value;
        if constexpr (NORM) {
          if (s == 1) {
            const bool measured = p >= max(z0, norm.lo) && p < min(z1, norm.hi);
            const unsigned owned = measured ? stored : 0u;
            temporal_substep<T, DIM, RY, VX, FACES, SOURCE, true>(
                R, Ms[0], Cs[0], N, hlo, hhi, c.step[0], gr, F, xcol, yrow, nx, ny, p, ns, &norm.rc,
                &norm_acc, owned);
            return;
          }
        }
        temporal_substep<T, DIM, RY, VX, FACES, SOURCE>(
            R, Ms[s - 1], Cs[s - 1], N, hlo, hhi, c.step[s - 1], gr, F, xcol, yrow, nx, ny, p, ns);
      });
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
  if constexpr (RING || PROLONG) cp_async_wait<0>();  // no copy outlives the block
  if constexpr (NORM) store_warp_norm<BY>(norm_acc, norm.partials);
}

}  // namespace heatsolve::cuda
