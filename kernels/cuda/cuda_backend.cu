// The CUDA backend: device arrays, the ghost-fill kernel, the stencil ladder with "auto"
// selection by timing, and the (isolated) reductions.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>
#include <vector>

#include "kernels/cuda/cuda_array.cuh"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/graph_replay.cuh"
#include "kernels/device.hpp"
#include "kernels/field/cuda/field_ops.cuh"
#include "kernels/gemm/cuda/gemm.cuh"
#include "kernels/halo/cuda/halo_pack.hpp"
#include "kernels/multigrid/cuda/dense_apply.cuh"
#include "kernels/multigrid/cuda/transfer.cuh"
#include "kernels/reduction/cuda/reduction.cuh"
#include "kernels/stencil/cuda/ghost_rules.cuh"
#include "kernels/stencil/cuda/stencil_launch.cuh"
#include "kernels/stencil/cuda/temporal_launch.cuh"
#include "kernels/stencil/cuda/variable_stencil.cuh"

namespace heatsolve {

namespace cuda {

// ---- the backend ----------------------------------------------------------------------------
template <typename T>
class CudaBackend final : public Backend<T> {
 public:
  explicit CudaBackend(const BackendOptions& opts)
      : opts_(opts), device_(select_device(opts.device)) {
    // "temporal": fused multi-step passes (temporal_launch.cuh); single steps (remainders,
    // periodic/exchange faces) use the "auto" choice.
    temporal_ = opts.kernel == kKernelTemporal;
    if (opts.kernel != kKernelAuto && !temporal_) {
      fixed_ = parse_stencil_variant(opts.kernel);
      if (!fixed_) {
        std::string names;
        for (const std::string& name : kKernelNames) names += (names.empty() ? "" : ", ") + name;
        throw BackendError("unknown CUDA stencil kernel '" + opts.kernel + "' (" + names + ")");
      }
    }
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    std::ostringstream d;
    d << "CUDA device " << device_ << ": " << prop.name << " (sm_" << prop.major << prop.minor
      << ", " << prop.multiProcessorCount << " SMs, " << (prop.totalGlobalMem >> 20) << " MiB)";
    device_desc_ = d.str();
    // The threads' local memory (their stacks) is otherwise reserved at the first launch of a
    // kernel that needs some, which under lazy module loading can stall a solve's first cycle.
    // Setting the limit reserves it now, before any clock starts.
    std::size_t stack = 0;
    CUDA_CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
    CUDA_CHECK(cudaDeviceSetLimit(cudaLimitStackSize, stack));
  }

  std::string name() const override { return "cuda"; }
  std::string description() const override {
    std::string s = device_desc_ + ", stencil " + opts_.kernel;
    if (!last_choice_.empty()) s += " -> " + last_choice_;
    return s;
  }
  std::unique_ptr<Array<T>> allocate(std::size_t n) override {
    return std::make_unique<CudaArray<T>>(n);
  }

  std::string prepare(const GridDesc& g) override {
    // A sweep with a source term (Jacobi, the multigrid smoother) is tuned on its own: the
    // variants' ranking changes with the extra stream (2.5d-tma reads f outside its staged
    // pipeline).
    choose(g, true);
    const std::string label = choose(g).label;
    // Multigrid's passes that measure their residual or add a correction are not timed: loaded
    // here instead.
    if (g.dims == 3) load_temporal_multigrid_kernels<T>();
    if (!temporal_) return label;
    // A deck's time_block is the k the solver runs (the label says so): its passes are only
    // warmed up here, so that loading the kernels (lazy module loading) stays out of the time
    // loop, as auto's timing does.
    if (opts_.time_block > 0) {
      choose_time_block(g, opts_.time_block);
      time_block_ = opts_.time_block;
    } else {
      time_block_ = choose_time_block(g, std::numeric_limits<int>::max());
    }
    return std::string(kKernelTemporal) + " k=" + std::to_string(time_block_) + " + " + label;
  }

  void prepare_untimed(const GridDesc& g) override {
    if (fixed_) return;  // a named kernel: choose() takes it without timing anyway
    // One thread a cell in independent blocks: on a small grid the pipelined rungs march their
    // planes in a few blocks and wait on each plane's load (docs/kernels.md, "Tuning").
    const StencilVariant best = StencilVariant::Naive;
    const Choice ch{best, resolve_shape<T>(best, g.dims, {0, 0, 0}), stencil_variant_name(best)};
    for (bool with_source : {false, true})
      cache_.emplace(Key{g.dims, g.nx, g.ny, g.dims == 3 ? g.nz : 1, with_source}, ch);
  }

  int max_time_block() const override { return temporal_ ? time_block_ : 1; }

  // Passes of the largest compiled k <= the steps left (remainder: single steps). Faces
  // other than Dirichlet/Neumann: single steps throughout.
  T* stencil_steps(T* u, T* tmp, const T* f, const GridDesc& g, const StencilCoeffs<T>& c,
                   const BoundaryFaces& bc, int steps) override {
    if (!temporal_ || !temporal_supported(g, bc))
      return Backend<T>::stencil_steps(u, tmp, f, g, c, bc, steps);
    while (steps > 0) {
      int k = 1;
      for (int kk : temporal_steps<T>(g.dims))
        if (kk <= steps) {
          k = kk;
          break;
        }
      if (k > 1) {
        launch_temporal<T>(temporal_default_shape<T>(g.dims, k), u, tmp, source_ref(f, g), g, c, bc,
                           stream_);
      } else {
        apply_boundary(u, g, bc);
        stencil(u, tmp, f, g, c);
      }
      std::swap(u, tmp);
      steps -= k;
    }
    return u;
  }

  // Consecutive sweeps fused into passes of the largest compiled k that fits (their own
  // coefficients per sub-step: a Chebyshev smoother's weights), whatever the kernel option:
  // a pass gives the bits of its single sweeps. Faces other than Dirichlet/Neumann, and grids
  // below opts_.fuse_min_cells: single sweeps (on grids of at most opts_.block_sweep_max_cells,
  // all of them in one block's launch).
  // Whether n sweeps on g may run as fused passes.
  bool fuses(const GridDesc& g, int n, const BoundaryFaces& bc) const {
    return n >= 2 && g.interior_size() >= opts_.fuse_min_cells && temporal_supported(g, bc);
  }
  static PassCoeffs<T> pass_coeffs(const StencilCoeffs<T>* c, int k) {
    PassCoeffs<T> pass;
    for (int i = 0; i < k; ++i) pass.step[i] = c[i];
    return pass;
  }

  void stencil_sweeps(T** cur, T** other, const T* f, const GridDesc& g, const StencilCoeffs<T>* c,
                      int n, const BoundaryFaces& bc) override {
    if (!fuses(g, n, bc)) {
      // HEATSOLVE_NO_BLOCK_SWEEPS=1: one launch a sweep (to measure what the block saves).
      static const bool off = std::getenv("HEATSOLVE_NO_BLOCK_SWEEPS") != nullptr;
      if (n >= 2 && !off && sweeps_fit_block(g, bc, opts_.block_sweep_max_cells))
        return launch_sweeps_in_block<T>(cur, other, source_ref(f, g), g, c, n, bc, stream_);
      return Backend<T>::stencil_sweeps(cur, other, f, g, c, n, bc);
    }
    for (int s = 0; s < n;) {
      int k = 1;
      for (int kk : temporal_steps<T>(g.dims))
        if (kk <= n - s) {
          k = kk;
          break;
        }
      if (k > 1) {
        launch_temporal<T>(temporal_default_shape<T>(g.dims, k), *cur, *other, source_ref(f, g), g,
                           pass_coeffs(c + s, k), bc, stream_);
      } else {
        stencil_with_boundary(*cur, *other, f, g, c[s], bc);
      }
      std::swap(*cur, *other);
      s += k;
    }
  }

  bool stencil_sweeps_with_norm(T** cur, T** other, const T* f, const GridDesc& g,
                                const StencilCoeffs<T>* c, int n, const BoundaryFaces& bc,
                                const StencilCoeffs<T>& rc, double* square_sum, int p0,
                                int p1) override {
    const std::vector<int>& ks = temporal_steps<T>(g.dims);
    if (!fuses(g, n, bc) || std::find(ks.begin(), ks.end(), n) == ks.end()) return false;
    const TemporalShape shape = temporal_default_shape<T>(g.dims, n);
    if (!temporal_norm_compiled<T>(shape, g.dims)) return false;
    *square_sum =
        launch_temporal_norm<T>(shape, *cur, *other, source_ref(f, g), g, pass_coeffs(c, n), bc, rc,
                                reduce_ws_, stream_, PlaneRange{p0, p1});
    std::swap(*cur, *other);
    return true;
  }

  bool prolongs_in_sweeps(int dims, int n) const override {
    const std::vector<int>& ks = temporal_steps<T>(dims);
    return dims == 3 && std::find(ks.begin(), ks.end(), n) != ks.end() &&
           temporal_prolong_compiled<T>(temporal_default_shape<T>(dims, n), dims);
  }
  // One pass of k = n sweeps where the row a multigrid smoother runs has the instance (linear
  // prolongation, every axis halved); any other case: false.
  bool prolong_add_sweeps(const T* coarse, const GridDesc& gc, const std::array<int, 3>& ratio,
                          Prolongation p, T** cur, T** other, const T* f, const GridDesc& g,
                          const StencilCoeffs<T>* c, int n, const BoundaryFaces& bc,
                          int offset) override {
    if (p != Prolongation::Linear || ratio != std::array<int, 3>{2, 2, 2} ||
        !prolongs_in_sweeps(g.dims, n) || !fuses(g, n, bc) || !prolonged_grids_fit(g, gc, offset))
      return false;
    launch_temporal_prolonged<T>(temporal_default_shape<T>(g.dims, n), coarse, gc, *cur, *other,
                                 source_ref(f, g), g, pass_coeffs(c, n), bc, offset, stream_);
    std::swap(*cur, *other);
    return true;
  }
  bool prolong_add_sweeps_planes(const T* coarse, const GridDesc& gc,
                                 const std::array<int, 3>& ratio, Prolongation p, const T* u,
                                 T* out, const T* f, const GridDesc& g, const StencilCoeffs<T>* c,
                                 int n, const BoundaryFaces& bc, int offset, int p0,
                                 int p1) override {
    if (p != Prolongation::Linear || ratio != std::array<int, 3>{2, 2, 2} ||
        !prolongs_in_sweeps(g.dims, n) || !fuses(g, n, bc) || !prolonged_grids_fit(g, gc, offset))
      return false;
    if (p1 > p0)
      launch_temporal_prolonged<T>(temporal_default_shape<T>(g.dims, n), coarse, gc, u, out,
                                   source_ref(f, g), g, pass_coeffs(c, n), bc, offset, stream_,
                                   PlaneRange{p0, p1});
    return true;
  }

  // One launch of the compiled k = steps over the planes' chunks (the shape stencil_steps
  // takes for a pass of `steps`).
  bool stencil_steps_planes(const T* u, T* out, const T* f, const GridDesc& g,
                            const StencilCoeffs<T>& c, const BoundaryFaces& bc, int steps, int p0,
                            int p1) override {
    const std::vector<int>& ks = temporal_steps<T>(g.dims);
    if (!temporal_ || !temporal_supported(g, bc) ||
        std::find(ks.begin(), ks.end(), steps) == ks.end())
      return false;
    launch_temporal<T>(temporal_default_shape<T>(g.dims, steps), u, out, source_ref(f, g), g, c, bc,
                       stream_, PlaneRange{p0, p1});
    return true;
  }

  void apply_boundary(T* u, const GridDesc& g, const BoundaryFaces& bc) override {
    launch_apply_boundary<T>(u, g, bc, stream_);
  }

  void stencil(const T* u, T* out, const T* f, const GridDesc& g,
               const StencilCoeffs<T>& c) override {
    const Choice& ch = choose(g, f != nullptr);
    launch_stencil<T>(ch.variant, ch.shape, u, out, source_ref(f, g), g, c, stream_);
  }

  // Keeps a device copy of the form's factors; sweeps given `field` on a grid of g's extents
  // then generate it (source_ref). HEATSOLVE_CUDA_STORED_SOURCE=1 keeps reading the field (to
  // compare the two in one benchmark).
  void describe_source(const T* field, const GridDesc& g, const SeparableSource<T>* form) override {
    generated_.erase(std::remove_if(generated_.begin(), generated_.end(),
                                    [&](const Generated& x) {
                                      return x.field == field && same_extents(x.g, g);
                                    }),
                     generated_.end());
    static const bool stored = std::getenv("HEATSOLVE_CUDA_STORED_SOURCE") != nullptr;
    if (!form || !field || stored) return;
    Generated x;
    x.field = field;
    x.g = g;
    x.plane = CudaBuffer<T>(form->plane.size());
    x.column = CudaBuffer<T>(form->column.size());
    CUDA_CHECK(cudaMemcpy(x.plane.get(), form->plane.data(), form->plane.size() * sizeof(T),
                          cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(x.column.get(), form->column.data(), form->column.size() * sizeof(T),
                          cudaMemcpyHostToDevice));
    x.offset = form->offset;
    x.scale = form->scale;
    generated_.push_back(std::move(x));
  }

  // The sweeps generate the new values; the stored field is refilled too (on the stream, from
  // the same factors), for whatever reads it.
  bool rescale_source(T* field, const GridDesc& g, T offset, T scale) override {
    for (Generated& x : generated_) {
      if (x.field != field || !same_extents(x.g, g)) continue;
      x.offset = offset;
      x.scale = scale;
      launch_fill_separable<T>(field, g, offset, scale, x.plane.get(), x.column.get(), stream_);
      return true;
    }
    return false;
  }

  // The ghost-fill pass costs about 15 % of a 512^3 float 2.5d-tma step (scattered x-face
  // sectors); 2.5d-tma applies the rules on its staged tiles instead, and naive (small grids:
  // multigrid's coarse levels, where the fill is a launch of its own) per neighbour.
  void stencil_with_boundary(T* u, T* out, const T* f, const GridDesc& g, const StencilCoeffs<T>& c,
                             const BoundaryFaces& bc) override {
    const Choice& ch = choose(g, f != nullptr);
    step_with_boundary(ch.variant, ch.shape, u, out, source_ref(f, g), g, c, bc);
  }

  // A slab of whole outer-axis layers (z in 3D, y in 2D) is itself a padded grid: shift the
  // pointers, shrink the outer extent and run the whole grid's variant on that view (same
  // per-point arithmetic, so slabs tile to stencil()'s bits). Other ranges: not supported,
  // the caller then sweeps the whole interior.
  void stencil_variable(const T* u, T* out, const T* f, const GridDesc& g,
                        const VariableCoeffs<T>& c, const CellRange& r) override {
    launch_stencil_variable<T>(u, out, f, g, c, r, stream_);
  }

  bool stencil_region(const T* u, T* out, const T* f, const GridDesc& g, const StencilCoeffs<T>& c,
                      const CellRange& r) override {
    const bool three_d = g.dims == 3;
    if (r.lo[0] != 0 || r.hi[0] != g.nx) return false;
    if (three_d && (r.lo[1] != 0 || r.hi[1] != g.ny)) return false;
    if (r.empty()) return true;
    const Choice& ch = choose(g, f != nullptr);  // tuned for the whole grid; views never are
    GridDesc view = g;
    std::int64_t shift = 0;
    if (three_d) {
      view.nz = r.hi[2] - r.lo[2];
      shift = r.lo[2] * g.stride_z();
    } else {
      view.ny = r.hi[1] - r.lo[1];
      shift = r.lo[1] * g.stride_y();
    }
    launch_stencil<T>(ch.variant, ch.shape, u + shift, out + shift,
                      source_ref(f, g).from_plane(three_d ? r.lo[2] : r.lo[1],
                                                  three_d ? g.stride_z() : g.stride_y()),
                      view, c, stream_);
    return true;
  }

  // The same slab view with the face rules: along the slab's axis, a side inside the grid
  // reads the next layer from memory (Exchange); the grid's own faces keep bc's rules, which
  // naive and 2.5d-tma apply in the sweep (no ghost-fill pass) and the other variants in a
  // ghost fill of the view's layers.
  bool stencil_region_with_boundary(T* u, T* out, const T* f, const GridDesc& g,
                                    const StencilCoeffs<T>& c, const BoundaryFaces& bc,
                                    const CellRange& r) override {
    const bool three_d = g.dims == 3;
    if (r.lo[0] != 0 || r.hi[0] != g.nx) return false;
    if (three_d && (r.lo[1] != 0 || r.hi[1] != g.ny)) return false;
    if (r.empty()) return true;
    const Choice& ch = choose(g, f != nullptr);  // tuned for the whole grid; views never are
    const int ax = three_d ? 2 : 1;
    const int n = three_d ? g.nz : g.ny;
    const std::int64_t stride = three_d ? g.stride_z() : g.stride_y();
    GridDesc view = g;
    (three_d ? view.nz : view.ny) = r.hi[ax] - r.lo[ax];
    BoundaryFaces rules = bc;
    if (r.lo[ax] > 0) rules[2 * ax] = FaceBC{BoundaryType::Exchange, 0.0};
    if (r.hi[ax] < n) rules[2 * ax + 1] = FaceBC{BoundaryType::Exchange, 0.0};
    const std::int64_t shift = r.lo[ax] * stride;
    step_with_boundary(ch.variant, ch.shape, u + shift, out + shift,
                       source_ref(f, g).from_plane(r.lo[ax], stride), view, c, rules);
    return true;
  }

  bool region_rules_in_sweep() const override { return true; }

  // Norms through the reduction ladder's fastest (modern) rung: deterministic, double
  // accumulation, one double copied back.
  double reduce(const T* u, const GridDesc& g, ReduceOp op) override {
    return reduce_interior<T>(op, u, g, stream_, &reduce_ws_);
  }
  double reduce_diff(const T* a, const T* b, const GridDesc& g, ReduceOp op) override {
    return reduce_diff_interior<T>(op, a, b, g, stream_, &reduce_ws_);
  }
  double reduce_residual(const T* u, const T* f, const GridDesc& g, ReduceOp op) override {
    return reduce_residual_interior<T>(op, u, f, g, stream_, &reduce_ws_);
  }

  void combine(T* out, const T* const* in, const double* coeffs, int count,
               const GridDesc& g) override {
    launch_combine<T>(out, in, coeffs, count, g, stream_);
  }
  // Anderson's Gram matrix: the tall-skinny A^T B kernel over column-major history.
  void gram(const T* a, int na, const T* b, int nb, std::size_t ld, std::size_t n,
            double* c_host) override {
    gram_tall_skinny_strided<T>(a, na, b, nb, ld, n, c_host, stream_, &gram_ws_);
  }

  // Multigrid transfers (kernels/multigrid/cuda) and the dot product (modern reduction rung).
  void restrict_average(const T* fine, const GridDesc& gf, T* coarse, const GridDesc& gc,
                        const std::array<int, 3>& ratio) override {
    launch_restrict_average<T>(fine, gf, coarse, gc, ratio, stream_);
  }
  double stencil_square_sum(const T* u, const T* f, const GridDesc& g, const StencilCoeffs<T>& c,
                            T* scratch) override {
    (void)scratch;
    return stencil_square_sum_interior<T>(u, source_ref(f, g), g, c, stream_, &reduce_ws_);
  }
  void stencil_restrict(T* u, const T* f, const GridDesc& gf, const StencilCoeffs<T>& c,
                        const BoundaryFaces& bc, T* coarse, const GridDesc& gc,
                        const std::array<int, 3>& ratio, T* scratch) override {
    (void)scratch;
    // The kernel applies the faces' rules as it reads u; periodic faces are filled first.
    AffineGhostRules<T> rules = affine_ghost_rules<T>(gf, bc);
    if (rules.periodic != 0) {
      apply_boundary(u, gf, bc);
      rules.periodic = 0;
    }
    launch_stencil_restrict<T>(u, source_ref(f, gf), gf, c, rules, coarse, gc, ratio, stream_);
  }
  bool stencil_restrict_planes(T* u, const T* f, const GridDesc& gf, const StencilCoeffs<T>& c,
                               const BoundaryFaces& bc, T* coarse, const GridDesc& gc,
                               const std::array<int, 3>& ratio, int p0, int p1) override {
    // Periodic faces would need u's ghosts filled once, before the first range.
    const AffineGhostRules<T> rules = affine_ghost_rules<T>(gf, bc);
    if (gf.dims != 3 || rules.periodic != 0) return false;
    if (p1 > p0)
      launch_stencil_restrict<T>(u, source_ref(f, gf), gf, c, rules, coarse, gc, ratio, stream_, p0,
                                 p1);
    return true;
  }
  void prolong_add(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                   const std::array<int, 3>& ratio, Prolongation p) override {
    launch_prolong_add<T>(coarse, gc, fine, gf, ratio, p, stream_);
  }
  void interpolate(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                   const std::array<int, 3>& ratio, Prolongation p) override {
    launch_interpolate<T>(coarse, gc, fine, gf, ratio, p, stream_);
  }
  void dense_apply_add(const T* m, const T* r, T* x, const GridDesc& g) override {
    launch_dense_apply_add<T>(m, r, x, g, stream_);
  }
  double dot(const T* a, const T* b, const GridDesc& g) override {
    return dot_interior<T>(a, b, g, stream_, &reduce_ws_);
  }
  // Mixed precision (kernels/field/cuda): on the main stream, which the float backend of a
  // mixed solve shares (the legacy default stream).
  void to_float(const T* src, float* dst, std::size_t n, double scale = 1.0) override {
    launch_to_float<T>(src, dst, n, scale, stream_);
  }
  void add_float(T* dst, double a, const float* src, double b, std::size_t n) override {
    launch_add_float<T>(dst, a, src, b, n, stream_);
  }

  void synchronize(Lane lane = Lane::Main) override {
    CUDA_CHECK(cudaStreamSynchronize(lane_stream(lane)));
  }
  void fork_side() override {
    if (!side_) side_ = std::make_unique<SideLane>();
    CUDA_CHECK(cudaEventRecord(side_->fork.get(), stream_));
    CUDA_CHECK(cudaStreamWaitEvent(side_->stream.get(), side_->fork.get(), 0));
  }
  void join_side() override {
    if (!side_) return;
    CUDA_CHECK(cudaEventRecord(side_->join.get(), side_->stream.get()));
    CUDA_CHECK(cudaStreamWaitEvent(stream_, side_->join.get(), 0));
  }
  void mark() override {
    if (!mark_) mark_ = std::make_unique<CudaEvent>();
    CUDA_CHECK(cudaEventRecord(mark_->get(), stream_));
  }
  void wait_mark() override {
    if (mark_) CUDA_CHECK(cudaEventSynchronize(mark_->get()));
  }
  std::size_t stamp() override {
    if (stamps_.empty())
      for (std::size_t i = 0; i < Backend<T>::kMaxStamps; ++i)
        stamps_.push_back(std::make_unique<CudaEvent>(cudaEventDefault));
    CUDA_CHECK(cudaEventRecord(stamps_[next_stamp_ % stamps_.size()]->get(), stream_));
    return next_stamp_++;
  }
  bool stamp_done(std::size_t id) override {
    const cudaError_t e = cudaEventQuery(stamp_event(id));
    if (e == cudaErrorNotReady) return false;
    CUDA_CHECK(e);
    return true;
  }
  double seconds_between(std::size_t a, std::size_t b) override {
    CUDA_CHECK(cudaEventSynchronize(stamp_event(b)));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, stamp_event(a), stamp_event(b)));
    return 1e-3 * double(ms);
  }
  void record_event(const device::IpcEvent& e, Lane lane = Lane::Main) override {
    CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(e.native()), lane_stream(lane)));
  }
  void wait_event(const device::IpcEvent& e, Lane lane = Lane::Main) override {
    CUDA_CHECK(cudaStreamWaitEvent(lane_stream(lane), static_cast<cudaEvent_t>(e.native()), 0));
  }
  bool records() const override { return true; }
  bool replay(std::unique_ptr<Recording>* slot, const std::function<void()>& work) override {
    return replayer_.replay(slot, work);
  }
  bool prerecord(std::unique_ptr<Recording>* slot, const std::function<void()>& work) override {
    return replayer_.prerecord(slot, work);
  }
  void while_waiting(std::function<void()> work) override {
    reduce_ws_.before_wait(std::move(work));
  }

  void copy_values(T* dst, const T* src, std::size_t n, Lane lane = Lane::Main) override {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDefault, lane_stream(lane)));
  }

  // MPI halo faces, packed/unpacked on the device (kernels/halo/cuda/halo_pack.cu).
  void pack_face(const T* u, const GridDesc& g, int face, T* buffer) override {
    cuda_pack_face<T>(u, g, face, buffer, stream_);
  }
  void unpack_face(T* u, const GridDesc& g, int face, const T* buffer) override {
    cuda_unpack_face<T>(u, g, face, buffer, stream_);
  }
  void copy_box(T* dst, std::int64_t dst_stride_y, std::int64_t dst_stride_z, const T* src,
                std::int64_t src_stride_y, std::int64_t src_stride_z,
                const std::array<int, 3>& extent, Lane lane = Lane::Main) override {
    cuda_copy_box<T>(dst, dst_stride_y, dst_stride_z, src, src_stride_y, src_stride_z,
                     extent.data(), lane_stream(lane));
  }
  bool device_memory() const override { return true; }

 private:
  struct Choice {
    StencilVariant variant;
    StencilShape shape;
    std::string label;
  };
  using Key = std::tuple<int, int, int, int, bool>;  // dims, nx, ny, nz, with a source

  // One heat step's sweep with variant v: the face rules inside the sweep where v applies
  // them, else the ghost fill and the plain sweep.
  void step_with_boundary(StencilVariant v, const StencilShape& shape, T* u, T* out,
                          const SourceRef<T>& f, const GridDesc& g, const StencilCoeffs<T>& c,
                          const BoundaryFaces& bc) {
    if (stencil_applies_rules(v, bc)) {
      launch_stencil<T>(v, shape, u, out, f, g, c, stream_, &bc);
    } else {
      apply_boundary(u, g, bc);
      launch_stencil<T>(v, shape, u, out, f, g, c, stream_);
    }
  }

  const Choice& choose(const GridDesc& g, bool with_source = false) {
    const Key key{g.dims, g.nx, g.ny, g.dims == 3 ? g.nz : 1, with_source && !fixed_};
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      Choice ch = fixed_ ? Choice{*fixed_, resolve_shape<T>(*fixed_, g.dims, opts_.block),
                                  stencil_variant_name(*fixed_)}
                         : tune(g, with_source);
      it = cache_.emplace(key, std::move(ch)).first;
    }
    last_choice_ = it->second.label;
    return it->second;
  }

  // "auto": time every variant (default shape, or the requested block where it is compiled)
  // for a few sweeps on this grid, on random data, and keep the fastest.
  Choice tune(const GridDesc& g, bool with_source) {
    const std::size_t n = g.padded_size();
    CudaBuffer<T> a(n), b(n), src(with_source ? n : 1);
    fill_random_device<T>(a.get(), n, 12345, -1.0, 1.0, stream_);
    fill_random_device<T>(b.get(), n, 54321, -1.0, 1.0, stream_);
    if (with_source) fill_random_device<T>(src.get(), n, 999, -1.0, 1.0, stream_);
    const SourceRef<T> f = with_source ? timing_source(src.get(), g) : SourceRef<T>{};
    StencilCoeffs<T> c;
    c.center = T(0.4);
    c.cx = c.cy = c.cz = T(0.1);
    BoundaryFaces tuning_faces{};  // Dirichlet 0 on every face
    std::vector<Choice> candidates;
    std::vector<double> times;
    for (StencilVariant v : kAllStencilVariants) {
      if (!stencil_variant_supported(v)) continue;  // the same on every rank (same devices)
      StencilShape shape;
      try {
        shape = resolve_shape<T>(v, g.dims, opts_.block);
      } catch (const BackendError&) {
        shape = resolve_shape<T>(v, g.dims, {0, 0, 0});
      }
      // What a heat step costs with this variant (Backend::stencil_with_boundary, Dirichlet
      // faces): the sweep with the rules inside where the variant applies them, else the
      // ghost fill plus the sweep (the fill is 15 % of a 512^3 step: 2.5d-tma and
      // 2.5d-register tie within 1 % on the sweep alone in 3D double).
      const auto step = [&](int s) {
        step_with_boundary(v, shape, s % 2 ? b.get() : a.get(), s % 2 ? a.get() : b.get(), f, g, c,
                           tuning_faces);
      };
      candidates.push_back(Choice{v, shape, stencil_variant_name(v)});
      times.push_back(time_ms(2, 6, step));
    }
    if (opts_.agree_timings) opts_.agree_timings(times);
    const auto best = std::min_element(times.begin(), times.end()) - times.begin();
    return candidates[best];
  }

  // `time_block: auto`: times single steps of the chosen variant and passes of every compiled
  // k up to max_k on random data (Dirichlet faces; with a source where the run has one) and
  // returns the k (1 = single steps) of least time per step.
  int choose_time_block(const GridDesc& g, int max_k) {
    const std::size_t n = g.padded_size();
    CudaBuffer<T> a(n), b(n), fsrc(opts_.source ? n : 0);
    fill_random_device<T>(a.get(), n, 777, -1.0, 1.0, stream_);
    fill_random_device<T>(b.get(), n, 778, -1.0, 1.0, stream_);
    if (opts_.source) fill_random_device<T>(fsrc.get(), n, 779, -1.0, 1.0, stream_);
    const SourceRef<T> f = opts_.source ? timing_source(fsrc.get(), g) : SourceRef<T>{};
    StencilCoeffs<T> c;
    c.center = T(0.4);
    c.cx = c.cy = c.cz = T(0.1);
    c.source = T(0.1);
    BoundaryFaces bc{};
    const Choice& ch = choose(g, opts_.source);
    int best_k = 1;
    float best = std::numeric_limits<float>::max();
    std::vector<int> ks{1};
    for (int k : temporal_steps<T>(g.dims))
      if (k <= max_k) ks.push_back(k);
    for (int k : ks) {
      auto pass = [&](int s) {
        T* in = s % 2 ? b.get() : a.get();
        T* out = s % 2 ? a.get() : b.get();
        if (k == 1)
          launch_stencil<T>(ch.variant, ch.shape, in, out, f, g, c, stream_);
        else
          launch_temporal<T>(temporal_default_shape<T>(g.dims, k), in, out, f, g, c, bc, stream_);
      };
      const int passes = std::max(2, 8 / k);
      const float ms = time_ms(2, passes, pass) / float(passes * k);
      if (ms < best) {
        best = ms;
        best_k = k;
      }
    }
    return best_k;
  }

  // Milliseconds of run(0 .. timed-1) on the stream, after run(0 .. warm-1) untimed.
  template <class Run>
  float time_ms(int warm, int timed, Run&& run) {
    const CudaEvent begin(cudaEventDefault), end(cudaEventDefault);
    for (int s = 0; s < warm; ++s) run(s);
    CUDA_CHECK(cudaEventRecord(begin.get(), stream_));
    for (int s = 0; s < timed; ++s) run(s);
    CUDA_CHECK(cudaEventRecord(end.get(), stream_));
    CUDA_CHECK(cudaEventSynchronize(end.get()));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, begin.get(), end.get()));
    return ms;
  }

  BackendOptions opts_;
  // A described source (describe_source): the field it stands for, its grid, its factors.
  struct Generated {
    const T* field = nullptr;
    GridDesc g;
    CudaBuffer<T> plane, column;
    T offset = 0, scale = 0;
  };
  std::vector<Generated> generated_;
  // The kernels' view of source f on g: generated where f was described for a grid of g's
  // extents, else the stored field (nullptr: none).
  SourceRef<T> source_ref(const T* f, const GridDesc& g) const {
    SourceRef<T> r(f);
    for (const Generated& x : generated_)
      if (f && x.field == f && same_extents(x.g, g)) generate(x, g, &r);
    return r;
  }
  // What a tuning sweep on g times for a source: a random field, generated like the run's own
  // source where one is described for g's extents (so the run's path is the one timed).
  SourceRef<T> timing_source(const T* random_field, const GridDesc& g) const {
    SourceRef<T> r(random_field);
    for (const Generated& x : generated_)
      if (same_extents(x.g, g)) generate(x, g, &r);
    return r;
  }
  // device::make_current, first thing: the workspaces below allocate on the current device.
  static int select_device(int device) {
    const int current = device::make_current(device);
    if (current < 0)
      throw BackendError("CUDA device " + std::to_string(device) + " cannot be used (" +
                         std::to_string(device::count()) + " visible)");
    return current;
  }
  static bool same_extents(const GridDesc& a, const GridDesc& b) {
    return a.dims == b.dims && a.nx == b.nx && a.ny == b.ny && (a.dims == 2 || a.nz == b.nz);
  }
  static void generate(const Generated& x, const GridDesc& g, SourceRef<T>* r) {
    r->plane = x.plane.get();
    r->column = x.column.get();
    r->offset = x.offset;
    r->scale = x.scale;
    r->ss = g.dims == 3 ? g.stride_z() : g.stride_y();
  }
  bool temporal_ = false;
  int time_block_ = 1;
  std::optional<StencilVariant> fixed_;
  int device_ = 0;
  std::string device_desc_;
  std::map<Key, Choice> cache_;
  std::string last_choice_;
  ReductionWorkspace reduce_ws_;  // allocated once, grows on demand
  TallSkinnyWorkspace gram_ws_;
  cudaStream_t stream_ = nullptr;  // the legacy default stream: ordered with cudaMemcpy
  // mark() / wait_mark(): an event without timing (cheaper to record and wait for).
  class CudaEvent {
   public:
    explicit CudaEvent(unsigned flags = cudaEventDisableTiming) {
      CUDA_CHECK(cudaEventCreateWithFlags(&e_, flags));
    }
    ~CudaEvent() { cudaEventDestroy(e_); }
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;
    cudaEvent_t get() const { return e_; }

   private:
    cudaEvent_t e_ = nullptr;
  };
  std::unique_ptr<CudaEvent> mark_;
  // stamp(): a ring of timing events, created at the first stamp.
  std::vector<std::unique_ptr<CudaEvent>> stamps_;
  std::size_t next_stamp_ = 0;
  cudaEvent_t stamp_event(std::size_t id) const {
    if (id >= next_stamp_ || next_stamp_ - id > stamps_.size())
      throw BackendError("stamp " + std::to_string(id) + " is no longer readable");
    return stamps_[id % stamps_.size()]->get();
  }
  // The side lane: a stream that does not synchronize with the legacy default stream (a
  // blocking one would, and serialize the exchange with the pass it should overlap), ordered
  // against the main lane by the fork/join events only.
  class CudaStream {
   public:
    CudaStream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
    ~CudaStream() { cudaStreamDestroy(s_); }
    CudaStream(const CudaStream&) = delete;
    CudaStream& operator=(const CudaStream&) = delete;
    cudaStream_t get() const { return s_; }

   private:
    cudaStream_t s_ = nullptr;
  };
  struct SideLane {
    CudaStream stream;
    CudaEvent fork, join;
  };
  std::unique_ptr<SideLane> side_;    // created at the first fork_side()
  GraphReplayer replayer_{&stream_};  // replay(): swaps stream_ while it records
  // Work for the side lane goes to the main stream until a fork created it (same order).
  cudaStream_t lane_stream(Lane lane) const {
    return lane == Lane::Side && side_ ? side_->stream.get() : stream_;
  }
};

}  // namespace cuda

template <typename T>
std::unique_ptr<Backend<T>> make_cuda_backend(const BackendOptions& opts) {
  return std::make_unique<cuda::CudaBackend<T>>(opts);
}

template std::unique_ptr<Backend<float>> make_cuda_backend<float>(const BackendOptions&);
template std::unique_ptr<Backend<double>> make_cuda_backend<double>(const BackendOptions&);

}  // namespace heatsolve
