// The compute interface every backend (CPU/OpenMP, CUDA) implements. Solvers talk only to
// this; kernels know arrays and a GridDesc, nothing about decks, MPI or files.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/execution.hpp"
#include "core/grid.hpp"
#include "core/multigrid.hpp"
#include "kernels/stencil/coefficients.hpp"
#include "kernels/stencil/source.hpp"
#include "kernels/stencil/variable.hpp"

namespace heatsolve {

namespace device {
class IpcEvent;  // kernels/device.hpp
}

enum class ReduceOp { Sum, SumSquares, MaxAbs };

// A box of interior cells, [lo, hi) per axis (in 2D the z range is [0, 1)). Used to compute
// the halo-independent core of a sweep while the halo exchange is in flight.
struct CellRange {
  std::array<int, 3> lo{0, 0, 0}, hi{0, 0, 0};
  bool empty() const { return hi[0] <= lo[0] || hi[1] <= lo[1] || hi[2] <= lo[2]; }
};

// A backend's work orders: the main one, and a side one that a deep halo exchange runs on
// while a pass computes (Backend::fork_side). Without a device both are the same sequential
// order.
enum class Lane { Main, Side };

// Work a backend recorded to replay it (Backend::replay; CUDA: an instantiated graph), owned
// by the caller that keeps the fields the work reads and writes.
class Recording {
 public:
  virtual ~Recording() = default;
};

// Thrown for a requested backend that cannot be used (no device, built without CUDA...).
struct BackendError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A buffer in the backend's memory space (host for CPU, device for CUDA), freed on scope exit.
template <typename T>
class Array {
 public:
  virtual ~Array() = default;
  virtual T* data() = 0;
  virtual const T* data() const = 0;
  virtual std::size_t size() const = 0;
  virtual void copy_from_host(const T* src) = 0;
  virtual void copy_to_host(T* dst) const = 0;
  virtual void copy_from(const Array<T>& other) = 0;  // same backend, same size
  virtual void set_zero() = 0;                        // every element, ghosts included
};

struct BackendOptions {
  std::string kernel = "auto";        // stencil variant name (CUDA); "auto" times candidates
  std::array<int, 3> block{0, 0, 0};  // optional thread-block shape; 0 = variant default
  int time_block = 0;  // steps per fused pass (kernel "temporal"); 0 = auto: timed in prepare()
  int device = -1;     // CUDA device; -1 = current
  // stencil_sweeps fuses sweeps into temporal passes on grids of at least this many interior
  // cells: on smaller ones a pass has too few tiles to fill the GPU and its planes run in
  // sequence (H100, double, a 3-sweep pass: 67 us at 128^3, 72 us at 64^3, about what three
  // single sweeps take; 1.7 ms at 512^3, against about 4 ms; docs/performance.md).
  long long fuse_min_cells = 1LL << 22;  // between 128^3 and 256^3
  // Below it, grids of at most this many interior cells with Dirichlet and Neumann faces run
  // their sweeps in one block, one launch (CUDA): multigrid's levels of 16^3 and fewer cells,
  // whose sweeps launched one by one cost a launch each and compute next to nothing. 0: never.
  long long block_sweep_max_cells = 8192;
  // The run's sweeps add a source term (a deck source: Jacobi, heat with a source), so that
  // time_block auto times its candidate passes with one: the source stream changes the
  // ranking of k.
  bool source = false;
  // "auto" tuning under domain decomposition: called with the candidates' times (ms, the
  // same candidates in the same order on every rank) to replace them by values all ranks
  // agree on (a max over ranks), so that every rank picks the same variant; ranks that
  // picked differently would each wait for the slowest. Unset: this process decides alone.
  std::function<void(std::vector<double>&)> agree_timings;
};

// 1, 2, ... over the process's life, for Backend::instance() (thread-safe).
std::uint64_t next_backend_instance();

template <typename T>
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;         // "cpu" | "cuda"
  virtual std::string description() const = 0;  // device name, thread count
  // Zero-filled on return, so padded buffers start with defined ghosts.
  virtual std::unique_ptr<Array<T>> allocate(std::size_t n) = 0;

  // Chooses the stencil variant for this grid (CUDA auto-tuning times candidates here) and
  // returns its name. Called once before the time loop; stencil() uses the choice.
  virtual std::string prepare(const GridDesc& g) = 0;
  // Sweeps on g take the variant for small grids without timing candidates (CUDA "auto":
  // naive; a named kernel stays as named). For grids whose sweeps are latency-bound
  // (multigrid's coarse levels), where loading and timing every variant costs more than the
  // choice can win.
  virtual void prepare_untimed(const GridDesc& g) { (void)g; }

  // Fills the ghost cells of u from the face conditions; Exchange faces are left untouched.
  virtual void apply_boundary(T* u, const GridDesc& g, const BoundaryFaces& bc) = 0;
  // One sweep over the interior: out = stencil(u) (+ cs*f when f is not null).
  virtual void stencil(const T* u, T* out, const T* f, const GridDesc& g,
                       const StencilCoeffs<T>& c) = 0;
  // apply_boundary(u, g, bc) then stencil(), bit for bit; a backend may instead apply the face
  // rules inside the sweep (CUDA 2.5d-tma), leaving u's ghosts for those faces unwritten.
  virtual void stencil_with_boundary(T* u, T* out, const T* f, const GridDesc& g,
                                     const StencilCoeffs<T>& c, const BoundaryFaces& bc) {
    apply_boundary(u, g, bc);
    stencil(u, out, f, g, c);
  }

  // Sweeps c[0], ..., c[n-1] of *cur in turn, each as stencil_with_boundary (bc's rules, then
  // the sweep; f may be null), alternating between *cur and *other; *cur holds the result on
  // return. A backend may fuse consecutive sweeps into one pass (CUDA: temporal blocking, the
  // same bits), so which buffer ends up holding the result is not given by n's parity.
  virtual void stencil_sweeps(T** cur, T** other, const T* f, const GridDesc& g,
                              const StencilCoeffs<T>* c, int n, const BoundaryFaces& bc) {
    for (int s = 0; s < n; ++s) {
      stencil_with_boundary(*cur, *other, f, g, c[s], bc);
      std::swap(*cur, *other);
    }
  }
  // stencil_sweeps as one pass that reads *cur and writes only *other (the input stays as it
  // was), measuring in it the sum over the interior of stencil(*cur, f, rc)^2 (a residual's
  // squared norm, the value stencil_square_sum gives after the faces `bc` are applied), over
  // the stream axis' planes [p0, p1) (z in 3D, y in 2D; p1 < 0: to the last; a deep-halo pass
  // measures its block, not the margins): returns false, having done nothing, where the
  // backend has no such pass for n sweeps on g. A multigrid cycle starts with it, so that the
  // convergence check of the previous cycle's result costs no pass of its own
  // (solvers/multigrid/iteration.cpp).
  virtual bool stencil_sweeps_with_norm(T** cur, T** other, const T* f, const GridDesc& g,
                                        const StencilCoeffs<T>* c, int n, const BoundaryFaces& bc,
                                        const StencilCoeffs<T>& rc, double* square_sum, int p0,
                                        int p1) {
    (void)cur, (void)other, (void)f, (void)g, (void)c, (void)n, (void)bc, (void)rc;
    (void)square_sum, (void)p0, (void)p1;
    return false;
  }

  // Tells the backend that the values of `field` (an Array of this backend laid out as g; a
  // source term the sweeps will be given) follow `form`; nullptr forgets it. One description
  // per field and grid extents: a field may also be described as the start of a larger grid
  // (a block's field and its deep-halo view on the first rank share a pointer). A device backend
  // may then generate the values inside its sweeps and fused passes instead of reading the
  // field (kernels/stencil/source.hpp): the same values, so the same results bit for bit.
  // Other uses of the field (residuals) read it. Whoever changes the field's values afterwards
  // must forget the form first. Default: ignored.
  virtual void describe_source(const T* field, const GridDesc& g, const SeparableSource<T>* form) {
    (void)field, (void)g, (void)form;
  }
  // A described source's strength changed (a deck table over time): its values become
  // separable_value(offset, scale, plane, column) with the factors it was described with on a
  // grid of g's extents. Returns true having updated the form and the stored field (every
  // interior value as fill_separable_interior computes it, kernels/stencil/separable_fill.hpp;
  // ghosts kept), in order with the backend's other work; false, having done nothing, where the
  // backend keeps no such form for `field`: the caller then refills the field and describes it
  // again. Default: false.
  virtual bool rescale_source(T* field, const GridDesc& g, T offset, T scale) {
    (void)field, (void)g, (void)offset, (void)scale;
    return false;
  }

  // stencil() restricted to the cells of `r` (same arithmetic per point, so any tiling of the
  // interior into ranges gives stencil()'s bits). Returns false, having done nothing, when
  // the backend cannot restrict a sweep: callers then run stencil() on the whole interior.
  virtual bool stencil_region(const T* u, T* out, const T* f, const GridDesc& g,
                              const StencilCoeffs<T>& c, const CellRange& r) {
    (void)u, (void)out, (void)f, (void)g, (void)c, (void)r;
    return false;
  }

  // stencil_with_boundary() restricted to the cells of `r`: bc's rules on the faces of the
  // grid that r reaches, u read from memory across r's other sides and across Exchange faces
  // (apply_boundary() followed by stencil_region(), bit for bit; the backend may apply the
  // rules inside the sweep instead, leaving u's ghosts there unwritten). Returns false where
  // the backend cannot restrict a sweep (u's ghosts may have been filled).
  virtual bool stencil_region_with_boundary(T* u, T* out, const T* f, const GridDesc& g,
                                            const StencilCoeffs<T>& c, const BoundaryFaces& bc,
                                            const CellRange& r) {
    apply_boundary(u, g, bc);
    return stencil_region(u, out, f, g, c, r);
  }
  // True where stencil_region_with_boundary() costs no ghost-fill pass of the whole grid
  // (the rules in the sweep, or a fill of the region's layers), so that a sweep split into
  // regions takes it for each; false: callers fill the ghosts once and take stencil_region().
  virtual bool region_rules_in_sweep() const { return false; }

  // ---- Variable coefficients (kernels/stencil/variable.hpp) ---------------------------------
  // out = the form of c applied to u, on the cells of r (u's ghosts filled first; f may be
  // null). Every backend computes the same bits.
  virtual void stencil_variable(const T* u, T* out, const T* f, const GridDesc& g,
                                const VariableCoeffs<T>& c, const CellRange& r) {
    (void)u, (void)out, (void)f, (void)g, (void)c, (void)r;
    throw BackendError("backend '" + name() + "' has no variable-coefficient sweep");
  }

  // ---- Temporal blocking (several time steps per pass over memory) ------------------------
  // Fused sub-steps per pass the backend prefers for the grid of the last prepare() (its
  // choice for `time_block: auto`); 1 = no temporal blocking (run single steps).
  virtual int max_time_block() const { return 1; }
  // Advances u by `steps` heat steps: each step is apply_boundary(bc) + stencil() (with f)
  // + swap, so the result equals `steps` single steps. `tmp` is scratch of u's size. Returns
  // the buffer holding the result (u or tmp; the other holds an intermediate state). Ghost
  // cells of the result are not filled. The default is that loop; a backend may fuse passes.
  virtual T* stencil_steps(T* u, T* tmp, const T* f, const GridDesc& g, const StencilCoeffs<T>& c,
                           const BoundaryFaces& bc, int steps) {
    for (int s = 0; s < steps; ++s) {
      apply_boundary(u, g, bc);
      stencil(u, tmp, f, g, c);
      std::swap(u, tmp);
    }
    return u;
  }

  // One fused pass of `steps` heat steps (stencil_steps' arithmetic, so its bits) that
  // writes only the planes [p0, p1) of the stream axis (z in 3D, y in 2D) of `out` (!= u);
  // u is not written (no ghost fill either) and out's other planes are left as they are, so
  // that disjoint ranges can run apart and tile a whole pass. Returns false, having done
  // nothing, where `steps` is not one pass of this backend (callers then use stencil_steps);
  // an empty range asks just that. The CPU has no such pass (its stencil_steps is single
  // steps).
  virtual bool stencil_steps_planes(const T* u, T* out, const T* f, const GridDesc& g,
                                    const StencilCoeffs<T>& c, const BoundaryFaces& bc, int steps,
                                    int p0, int p1) {
    (void)u, (void)out, (void)f, (void)g, (void)c, (void)bc, (void)steps, (void)p0, (void)p1;
    return false;
  }

  // Reductions over interior cells, accumulated in double, deterministic.
  virtual double reduce(const T* u, const GridDesc& g, ReduceOp op) = 0;
  virtual double reduce_diff(const T* a, const T* b, const GridDesc& g, ReduceOp op) = 0;
  // Of the Poisson residual r = f + lap u (f may be null); ghosts of u must be filled.
  virtual double reduce_residual(const T* u, const T* f, const GridDesc& g, ReduceOp op) = 0;

  // Anderson acceleration support.
  // out = sum_j coeffs[j] * in[j] over interior cells (ghosts of out untouched); count 0: out = 0
  // (written, nothing read).
  virtual void combine(T* out, const T* const* in, const double* coeffs, int count,
                       const GridDesc& g) {
    (void)out, (void)in, (void)coeffs, (void)count, (void)g;
    throw BackendError("combine() is not implemented by backend " + name());
  }
  // C (na x nb, row-major, on the host) = A^T B for column blocks: column j of A starts at
  // A + j*ld and has n elements (same for B). Accumulated in double.
  virtual void gram(const T* a, int na, const T* b, int nb, std::size_t ld, std::size_t n,
                    double* c_host) {
    (void)a, (void)na, (void)b, (void)nb, (void)ld, (void)n, (void)c_host;
    throw BackendError("gram() is not implemented by backend " + name());
  }

  // ---- Multigrid (kernels/multigrid/) ----------------------------------------------------
  // Grid transfers between a fine grid gf and a coarse grid gc made by halving the axes a
  // with ratio[a] == 2 (fine cells 2I and 2I+1 are the children of coarse cell I; ratio 1
  // keeps the axis: fine I is coarse I). Interior cells only.
  // coarse = the mean of each coarse cell's children.
  virtual void restrict_average(const T* fine, const GridDesc& gf, T* coarse, const GridDesc& gc,
                                const std::array<int, 3>& ratio) {
    (void)fine, (void)gf, (void)coarse, (void)gc, (void)ratio;
    throw BackendError("restrict_average() is not implemented by backend " + name());
  }
  // coarse = the mean of the children of stencil(u, f, c) (a residual restricted, never
  // stored) with u's ghosts those of bc's faces: the bits of apply_boundary(u, gf, bc),
  // stencil() into `scratch` (a field of gf) and restrict_average(), which the default runs. A
  // device backend may fuse them (CUDA: the faces' rules applied as the pass reads u, whose
  // ghosts it may leave as they were). Exchange faces read u's ghosts: fill them first.
  virtual void stencil_restrict(T* u, const T* f, const GridDesc& gf, const StencilCoeffs<T>& c,
                                const BoundaryFaces& bc, T* coarse, const GridDesc& gc,
                                const std::array<int, 3>& ratio, T* scratch) {
    apply_boundary(u, gf, bc);
    stencil(u, scratch, f, gf, c);
    restrict_average(scratch, gf, coarse, gc, ratio);
  }
  // stencil_restrict storing only the coarse planes [p0, p1) of the stream axis (3D: z), each
  // with the whole call's bits, so that disjoint ranges tile it. False, nothing done, where the
  // backend has no such pass for these faces (an empty range asks just that). Default: false.
  virtual bool stencil_restrict_planes(T* u, const T* f, const GridDesc& gf,
                                       const StencilCoeffs<T>& c, const BoundaryFaces& bc,
                                       T* coarse, const GridDesc& gc,
                                       const std::array<int, 3>& ratio, int p0, int p1) {
    (void)u, (void)f, (void)gf, (void)c, (void)bc, (void)coarse, (void)gc, (void)ratio;
    (void)p0, (void)p1;
    return false;
  }
  // sum over the interior of stencil(u, f, c)^2 in double (a residual's squared norm, never
  // stored; u's ghosts filled): the default stores it in `scratch` and takes dot(); a device
  // backend may fuse them (CUDA; its sum's order is then not dot()'s).
  virtual double stencil_square_sum(const T* u, const T* f, const GridDesc& g,
                                    const StencilCoeffs<T>& c, T* scratch) {
    stencil(u, scratch, f, g, c);
    return dot(scratch, scratch, g);
  }
  // fine += P coarse. Constant: each child takes its parent's value. Linear: the parent P
  // plus, per halved axis, (N - P)/4 with N the parent's neighbour on the child's side along
  // that axis (exact for linear fields; reads face neighbours only, never edge or corner
  // ghosts); reads coarse's ghost cells, so fill them first. Constant or Linear only
  // (Cubic is interpolate()'s).
  virtual void prolong_add(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                           const std::array<int, 3>& ratio, Prolongation p) {
    (void)coarse, (void)gc, (void)fine, (void)gf, (void)ratio, (void)p;
    throw BackendError("prolong_add() is not implemented by backend " + name());
  }
  // prolong_add(coarse, gc, *cur, g, ratio, p) and then stencil_sweeps(cur, other, f, g, c, n,
  // bc) as passes that never store the corrected iterate: *cur is read, not written (the
  // iterate moves to *other or back, the pointers swapped as stencil_sweeps leaves them); the
  // same bits. A multigrid visit's post-smoothing (solvers/multigrid/multigrid.cpp). `offset`:
  // g's plane of the stream axis (z) that is the first child of gc's plane 0: a deep-halo pass
  // (g a block's extended grid) corrects its margin planes too, from the coarse field's own
  // margins (values and face ghosts filled there); 0 otherwise. Returns false, having done
  // nothing, where the backend has no such pass for these grids, `p` and n sweeps: callers then
  // run the two. Default: false.
  virtual bool prolong_add_sweeps(const T* coarse, const GridDesc& gc,
                                  const std::array<int, 3>& ratio, Prolongation p, T** cur,
                                  T** other, const T* f, const GridDesc& g,
                                  const StencilCoeffs<T>* c, int n, const BoundaryFaces& bc,
                                  int offset) {
    (void)coarse, (void)gc, (void)ratio, (void)p, (void)cur, (void)other, (void)f, (void)g;
    (void)c, (void)n, (void)bc, (void)offset;
    return false;
  }
  // prolong_add_sweeps' pass that writes only the planes [p0, p1) of the stream axis of `out`
  // (!= u), u and out's other planes left as they are (stencil_steps_planes' contract), so
  // that disjoint ranges tile the pass with its bits. False, nothing done, where the backend
  // has no such pass (an empty range asks just that). Default: false.
  virtual bool prolong_add_sweeps_planes(const T* coarse, const GridDesc& gc,
                                         const std::array<int, 3>& ratio, Prolongation p,
                                         const T* u, T* out, const T* f, const GridDesc& g,
                                         const StencilCoeffs<T>* c, int n, const BoundaryFaces& bc,
                                         int offset, int p0, int p1) {
    (void)coarse, (void)gc, (void)ratio, (void)p, (void)u, (void)out, (void)f, (void)g;
    (void)c, (void)n, (void)bc, (void)offset, (void)p0, (void)p1;
    return false;
  }
  // False where prolong_add_sweeps() never runs a pass of n sweeps on a `dims`-D grid, so that
  // callers need not prepare its input (a deep-halo level's coarse margins). Default: false.
  virtual bool prolongs_in_sweeps(int dims, int n) const {
    (void)dims, (void)n;
    return false;
  }
  // fine = P coarse on the interior of gf (writes, where prolong_add adds): full multigrid's
  // interpolation of a coarse solution. Constant and Linear as prolong_add; Cubic: per
  // halved axis the 4-point Lagrange interpolant at the child's centre (the nodes -2..1 around
  // the parent for the lower child, -1..2 for the upper; shifted inward by one at a wall, so
  // that one ghost layer suffices), tensor product over the halved axes (64 coarse values in
  // 3D): exact for cubics per axis (kernels/multigrid/interpolation.hpp). Reads coarse's face
  // ghosts (fill them first); an edge or corner ghost it needs is taken as the linear
  // extrapolation of the face ghosts next to it (g_a + g_b - inner: no kernel fills edges or
  // corners).
  virtual void interpolate(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                           const std::array<int, 3>& ratio, Prolongation p) {
    (void)coarse, (void)gc, (void)fine, (void)gf, (void)ratio, (void)p;
    throw BackendError("interpolate() is not implemented by backend " + name());
  }
  // x += M r over the n interior cells of a small grid g (cells numbered x fastest): M is a
  // column-major n x n matrix of this backend's memory, each row's sum in double over the
  // columns in order (the coarsest level's direct solve: solvers/multigrid/coarse_direct.hpp).
  // Reads no ghosts; the same bits on every backend.
  virtual void dense_apply_add(const T* m, const T* r, T* x, const GridDesc& g) {
    (void)m, (void)r, (void)x, (void)g;
    throw BackendError("dense_apply_add() is not implemented by backend " + name());
  }
  // sum a*b over the interior, accumulated in double, deterministic.
  virtual double dot(const T* a, const T* b, const GridDesc& g) {
    (void)a, (void)b, (void)g;
    throw BackendError("dot() is not implemented by backend " + name());
  }

  // ---- Mixed precision (kernels/field/) -------------------------------------------------------
  // A double solve whose correction equation a float hierarchy solves (execution.precision:
  // mixed) moves values between the precisions with these two, over n values of padded
  // arrays in order (ghosts included). The float array belongs to a Backend<float> of the
  // same kind on the same device, whose work is ordered with this one's (CUDA: both queue on
  // the legacy default stream).
  // dst = float(scale * src), the product in double, rounded to nearest.
  virtual void to_float(const T* src, float* dst, std::size_t n, double scale = 1.0) {
    (void)src, (void)dst, (void)n, (void)scale;
    throw BackendError("to_float() is not implemented by backend " + name());
  }
  // dst = a dst + b src, in double, rounded to T (a == 0: dst = b src, dst is not read).
  virtual void add_float(T* dst, double a, const float* src, double b, std::size_t n) {
    (void)dst, (void)a, (void)src, (void)b, (void)n;
    throw BackendError("add_float() is not implemented by backend " + name());
  }

  // Waits until the lane's queued work is done.
  virtual void synchronize(Lane lane = Lane::Main) { (void)lane; }
  // Fork/join of the side lane: fork_side() orders the side lane's next work after the main
  // lane's work queued so far; join_side() orders the main lane's next work after the side
  // lane's. Work queued on the side lane between them may run alongside the main lane's.
  virtual void fork_side() {}
  virtual void join_side() {}
  // A point in the backend's work order that the host can wait for without also waiting for
  // the work queued after it (CUDA: an event), e.g. a packed halo while the core sweep that
  // was queued behind it runs. One mark at a time. Default: work is synchronous.
  virtual void mark() {}
  virtual void wait_mark() {}
  // Timing without waiting: stamp() marks the main lane's work queued so far and returns its
  // id (increasing); stamp_done(id) tells whether the backend has passed it; seconds_between(a,
  // b) waits for b and returns the backend's time from a to b (CUDA: events; the most recent
  // kMaxStamps stamps stay readable). Default: the host clock (work is synchronous).
  static constexpr std::size_t kMaxStamps = 256;
  virtual std::size_t stamp() {
    return std::size_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
  }
  virtual bool stamp_done(std::size_t id) {
    (void)id;
    return true;
  }
  virtual double seconds_between(std::size_t a, std::size_t b) { return double(b - a) * 1e-9; }
  // Work ordered across processes without the host (CUDA IPC halos): record_event marks the
  // lane's queued work with `e`; wait_event orders the lane's next work after the latest
  // record of `e`, this process's or, for an event opened from a neighbour's handle, the
  // neighbour's. Device backends only (host memory never goes through CUDA IPC).
  virtual void record_event(const device::IpcEvent& e, Lane lane = Lane::Main) {
    (void)e, (void)lane;
    throw BackendError("record_event() is not implemented by backend " + name());
  }
  virtual void wait_event(const device::IpcEvent& e, Lane lane = Lane::Main) {
    (void)e, (void)lane;
    throw BackendError("wait_event() is not implemented by backend " + name());
  }

  // Runs `work`, or replays what an earlier call with the same *slot recorded of it, as one
  // launch. `work` must queue the same main-lane work every time (the same kernels on the
  // same pointers and values) and nothing else: no host reads, allocations or waits. The
  // first call runs it (lazy set-up happens there), the second records and replays it, later
  // ones replay; work that cannot be recorded (a call that refuses to be recorded, which
  // throws) runs as is, then and every later time. Work queued inside a recording joins it.
  // Returns whether the work was replayed. Default: runs it (records() is false).
  virtual bool records() const { return false; }
  virtual bool replay(std::unique_ptr<Recording>* slot, const std::function<void()>& work) {
    (void)slot;
    work();
    return false;
  }
  // Records `work` for *slot's next call to replay, without running it, where a call with
  // *slot ran it once already (its lazy set-up done) and nothing is recorded yet; work that
  // cannot be recorded is marked so (later calls run it as is). So that the recording, host
  // time, can be made while the device is busy (while_waiting). Returns whether *slot holds a
  // recording now. Default: false.
  virtual bool prerecord(std::unique_ptr<Recording>* slot, const std::function<void()>& work) {
    (void)slot, (void)work;
    return false;
  }
  // `work` runs on the host once, at this backend's next wait for a device result, before it
  // blocks (the device busy with the work queued before it); null forgets it. Default: never.
  virtual void while_waiting(std::function<void()> work) { (void)work; }

  // Copies n values from src to dst, in order with the lane's other work (asynchronous on
  // a device backend). dst may be memory of another device mapped into this process (CUDA
  // IPC: the halo exchange between ranks of one node writes into its neighbour's buffers).
  virtual void copy_values(T* dst, const T* src, std::size_t n, Lane lane = Lane::Main) {
    (void)lane;
    std::copy(src, src + n, dst);
  }

  // Copies a box of extent[0] x extent[1] x extent[2] cells between two strided layouts, in
  // order with the lane's other work: `dst` and `src` point at the box's first cell, x is
  // contiguous, rows are stride_y apart and planes stride_z. Deep halos (several ghost layers
  // exchanged at once for temporal blocking under MPI) pack, unpack and copy blocks with it;
  // a contiguous buffer is the layout {extent[0], extent[0] * extent[1]}.
  virtual void copy_box(T* dst, std::int64_t dst_stride_y, std::int64_t dst_stride_z, const T* src,
                        std::int64_t src_stride_y, std::int64_t src_stride_z,
                        const std::array<int, 3>& extent, Lane lane = Lane::Main) {
    (void)lane;
    for (int k = 0; k < extent[2]; ++k)
      for (int j = 0; j < extent[1]; ++j) {
        const T* s = src + k * src_stride_z + j * src_stride_y;
        std::copy(s, s + extent[0], dst + k * dst_stride_z + j * dst_stride_y);
      }
  }

  // ---- Halo packing (MPI domain decomposition) -------------------------------------------
  // Faces are numbered 0..5 = x-, x+, y-, y+, z-, z+ (a 2D grid has faces 0..3). A face
  // buffer holds face_cells(g, face) values in the backend's memory space (device memory when
  // device_memory() is true), ordered with the lower remaining axis fastest: x faces (j, k)
  // with j fastest, y faces (i, k) with i fastest, z faces (i, j) with i fastest.
  // pack_face copies the interior layer adjacent to `face` (i == 0 for x-, i == nx-1 for
  // x+, ...) into `buffer`; unpack_face writes `buffer` into the ghost layer of `face`
  // (i == -1 for x-, i == nx for x+, ...). Only the face's interior extent is touched (no
  // edges or corners: the stencils are 7-point). Both may run asynchronously on a device
  // backend; synchronize() before the host or MPI reads a packed buffer. The defaults throw
  // BackendError: a backend that can run decomposed overrides both.
  virtual void pack_face(const T* u, const GridDesc& g, int face, T* buffer) {
    (void)u, (void)g, (void)face, (void)buffer;
    throw BackendError("backend '" + name() + "' does not implement halo packing (pack_face)");
  }
  virtual void unpack_face(T* u, const GridDesc& g, int face, const T* buffer) {
    (void)u, (void)g, (void)face, (void)buffer;
    throw BackendError("backend '" + name() + "' does not implement halo unpacking (unpack_face)");
  }
  // True when Arrays and the pointers handed to the kernels live in device memory (CUDA):
  // then MPI needs CUDA-aware support or host staging for halo buffers.
  virtual bool device_memory() const { return false; }

  // This backend among all the process made (1, 2, ...): unlike its address, which a later
  // backend may reuse, never the same for two, so that a halo exchanger tells a new run's
  // backend from the one it set its buffers up for.
  std::uint64_t instance() const { return instance_; }

 private:
  const std::uint64_t instance_ = next_backend_instance();
};

// Cells in one face layer of g (the size of a pack_face buffer); 0 for z faces of a 2D grid.
inline std::size_t face_cells(const GridDesc& g, int face) {
  const std::size_t nz = g.dims == 3 ? std::size_t(g.nz) : 1;
  switch (face) {
    case 0:
    case 1:
      return std::size_t(g.ny) * nz;
    case 2:
    case 3:
      return std::size_t(g.nx) * nz;
    case 4:
    case 5:
      return g.dims == 3 ? std::size_t(g.nx) * std::size_t(g.ny) : 0;
    default:
      return 0;
  }
}

// The cells of g whose stencil reads no ghost cell: one layer in from every face (empty for
// grids of fewer than 3 cells along an axis).
inline CellRange core_range(const GridDesc& g) {
  CellRange r;
  const int n[3] = {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
  for (int a = 0; a < 3; ++a) {
    const bool active = a < g.dims;
    r.lo[a] = active ? 1 : 0;
    r.hi[a] = active ? n[a] - 1 : 1;
    if (r.hi[a] < r.lo[a]) r.hi[a] = r.lo[a];
  }
  return r;
}

// The cells of g whose stencil reads no ghost cell of an Exchange face: one layer in from
// each Exchange face only. Used to overlap the halo exchange with computation once the other
// faces' ghosts are filled (they depend on interior cells alone).
inline CellRange exchange_core_range(const GridDesc& g, const BoundaryFaces& faces) {
  CellRange r;
  const int n[3] = {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
  for (int a = 0; a < 3; ++a) {
    const bool active = a < g.dims;
    r.lo[a] = active && faces[2 * a].type == BoundaryType::Exchange ? 1 : 0;
    r.hi[a] = n[a] - (active && faces[2 * a + 1].type == BoundaryType::Exchange ? 1 : 0);
    if (r.hi[a] < r.lo[a]) r.hi[a] = r.lo[a];
  }
  return r;
}

// The interior minus `core` (a box inside it), as at most 6 disjoint ranges (x slabs whole,
// y slabs without the x layers, z slabs without both).
inline std::vector<CellRange> shell_ranges(const GridDesc& g, const CellRange& core) {
  const int n[3] = {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
  std::vector<CellRange> out;
  CellRange box;  // what is left to cover, shrinking axis by axis
  box.hi = {n[0], n[1], n[2]};
  for (int a = 0; a < g.dims; ++a) {
    CellRange low = box, high = box;
    low.hi[a] = core.lo[a];
    high.lo[a] = core.hi[a];
    if (!low.empty()) out.push_back(low);
    if (!high.empty()) out.push_back(high);
    box.lo[a] = core.lo[a];
    box.hi[a] = core.hi[a];
    if (box.empty()) break;
  }
  return out;
}

// The interior minus core_range(g): the cells whose stencil reads ghosts.
inline std::vector<CellRange> shell_ranges(const GridDesc& g) {
  return shell_ranges(g, core_range(g));
}

// True when a CUDA device can be used by this build on this machine.
bool cuda_device_available();
// The CUDA runtime this build runs with and the driver installed, e.g. "runtime 13.0, driver
// 12.8" ("driver none" without one); "" in a build without CUDA. Creates no context.
std::string cuda_version_info();
// Creates a backend; Auto picks CUDA when a device is available, else CPU.
template <typename T>
std::unique_ptr<Backend<T>> make_backend(BackendKind kind, const BackendOptions& opts);

}  // namespace heatsolve
