// The compiled shapes of temporal blocking (kernel: temporal) as one table of named policies:
// kernels/stencil/cuda/temporal_launch.cu instantiates one pass per row and dispatches to it
// through the same mechanism as the stencil ladder (kernels/cuda/compiled_choice.cuh);
// `heatsolve bench` and the tests list them. Plain C++.
#pragma once

#include <cstddef>
#include <iterator>
#include <string>

namespace heatsolve::cuda {

// The kernel designs (kernels/stencil/cuda/temporal_kernels.cuh): stage rings rotated every
// plane, or partial sums with nothing rotated, their input planes prefetched into registers or
// staged in shared memory by cp.async (docs/kernels.md, "temporal").
enum class TemporalDesign { Rings, PartialSums, StagedPartialSums };

// A compiled shape: k sub-steps per pass; block 32 x by threads; ry rows and vx columns per
// thread; the design; chunk = output planes per block along the stream axis (a launch
// argument: 0 = chosen from the grid).
struct TemporalShape {
  int k = 0, by = 0, ry = 1, vx = 1, chunk = 0;
  TemporalDesign design = TemporalDesign::Rings;
  // Benchmark only (both partial-sums designs): the pass's loads, edge rows, barriers and stores
  // without the arithmetic, so that `heatsolve bench` shows what the memory traffic alone costs.
  // Its output is not a heat step.
  bool memory_only = false;

  // "k4/32x8/ry4/vx2", "k2/32x4/ry4/vx2/partial[/memory]", "k3/32x8/ry4/vx2/staged[/c16]"
  std::string str() const {
    std::string s = 'k' + std::to_string(k) + "/32x" + std::to_string(by) + "/ry" +
                    std::to_string(ry) + "/vx" + std::to_string(vx);
    if (design == TemporalDesign::PartialSums) s += "/partial";
    if (design == TemporalDesign::StagedPartialSums) s += "/staged";
    if (memory_only) s += "/memory";
    if (chunk) s += "/c" + std::to_string(chunk);
    return s;
  }
  // Whether `o` is this compiled instance (chunk and memory_only are launch arguments).
  constexpr bool same_instance(const TemporalShape& o) const {
    return k == o.k && by == o.by && ry == o.ry && vx == o.vx && design == o.design;
  }
};

// One compiled pass, for float, double or both, built with the named setters:
//   temporal(3, TemporalDesign::StagedPartialSums).steps(3).warps_y(8).rows(4).columns(2)
struct TemporalPolicy {
  int dims = 3;
  int value_bytes = 0;  // 0: float and double; 4 / 8: only that sizeof(T)
  TemporalShape shape;
  // The resident blocks per SM that the row's instance measuring its input's residual (a
  // multigrid cycle's first pass) is compiled for (__launch_bounds__), and its instance adding
  // a coarse correction (the post-smoothing pass), which exists only where this is set; 0:
  // ptxas's choice.
  int norm_blocks = 0;

  constexpr bool compiled_for(int bytes) const { return value_bytes == 0 || value_bytes == bytes; }
  constexpr bool runs(int d, int bytes, const TemporalShape& s) const {
    return dims == d && compiled_for(bytes) && shape.same_instance(s);
  }

  // Sub-steps per pass; warps stacked in y (block 32 x by threads); rows and columns per thread.
  constexpr TemporalPolicy steps(int k) const { return with(&TemporalShape::k, k); }
  constexpr TemporalPolicy warps_y(int by) const { return with(&TemporalShape::by, by); }
  constexpr TemporalPolicy rows(int per_thread) const {
    return with(&TemporalShape::ry, per_thread);
  }
  constexpr TemporalPolicy columns(int per_thread) const {
    return with(&TemporalShape::vx, per_thread);
  }
  constexpr TemporalPolicy norm_blocks_per_sm(int blocks) const {
    TemporalPolicy p = *this;
    p.norm_blocks = blocks;
    return p;
  }
  constexpr TemporalPolicy float_only() const { return only(4); }
  constexpr TemporalPolicy double_only() const { return only(8); }

 private:
  constexpr TemporalPolicy with(int TemporalShape::*field, int value) const {
    TemporalPolicy p = *this;
    p.shape.*field = value;
    return p;
  }
  constexpr TemporalPolicy only(int bytes) const {
    TemporalPolicy p = *this;
    p.value_bytes = bytes;
    return p;
  }
};

constexpr TemporalPolicy temporal(int dims, TemporalDesign design) {
  TemporalPolicy p;
  p.dims = dims;
  p.shape.design = design;
  return p;
}

namespace temporal_policy_rows {
using D = TemporalDesign;

// The first row per (dims, k, precision) is that k's default. The stage rings cost 2 K RY VX
// values per thread (ptxas -v: 64-138 registers in float, 124-172 in double).
inline constexpr TemporalPolicy kRows[] = {
    // 3D float k = 2: partial sums, 32x4 ry4 vx2 (96 registers, 5 blocks of 128 threads per
    // SM): faster than the rings 32x8 below and than taller partial-sums blocks. 3D double
    // k = 2: the rings 32x4 stays the default; the partial-sums shape is within the
    // run-to-run spread of it (listed for bench and tests).
    temporal(3, D::PartialSums).steps(2).warps_y(4).rows(4).columns(2).float_only(),
    temporal(3, D::Rings).steps(2).warps_y(4).rows(4).columns(2).double_only(),
    // 3D float k = 3: staged partial sums, 32x8 ry4 vx2 (128 registers, 2 blocks of 256
    // threads per SM), the fastest 3D float pass (docs/performance.md). A k = 2 pass runs at
    // its memory traffic's rate (the memory-only twin); a third step per pass moves a third
    // less per step for more halo arithmetic, which the taller tile pays for (58 x 26
    // useful cells of 64 x 32). The same tile with register input is slower (not compiled).
    temporal(3, D::StagedPartialSums).steps(3).warps_y(8).rows(4).columns(2).float_only(),
    temporal(3, D::PartialSums).steps(2).warps_y(4).rows(4).columns(2).double_only(),
    // Rings, 3D. k = 2: 8 cells per thread (ry4 vx2) share the per-iteration work (loads,
    // stores, halo rows, barrier) that dominates the instruction count (ncu). Float 32x8
    // (128 registers, 2 blocks of 256 threads per SM). Double: 32x4 (168 registers: 3
    // blocks of 128 threads per SM, where 32x8 fits one): the extra warps outweigh its
    // smaller tiles (60 x 12 useful cells).
    temporal(3, D::Rings).steps(2).warps_y(8).rows(4).columns(2),
    temporal(3, D::Rings).steps(2).warps_y(16).rows(2).columns(2).float_only(),
    temporal(3, D::Rings).steps(2).warps_y(8).rows(4).columns(1),
    // 3D double k = 3: the multigrid smoother's three Chebyshev sweeps in one pass
    // (Backend::stencil_sweeps); rings 32x8 ry4 vx1, 26 x 26 useful cells of 32 x 32. The
    // pass that also measures the residual took 144 registers (ptxas -v), one block per SM
    // against the plain pass's two (128): held to two blocks, as the plain pass.
    temporal(3, D::Rings)
        .steps(3)
        .warps_y(8)
        .rows(4)
        .columns(1)
        .double_only()
        .norm_blocks_per_sm(2),
    // 3D float k = 4: staged partial sums, 32x8 ry4 vx2 (192 registers, one block of 256
    // threads per SM): faster than the rings 32x16 that follows.
    temporal(3, D::StagedPartialSums).steps(4).warps_y(8).rows(4).columns(2).float_only(),
    temporal(3, D::Rings).steps(4).warps_y(16).rows(2).columns(2).float_only(),
    temporal(3, D::Rings).steps(4).warps_y(16).rows(2).columns(1),
    temporal(3, D::Rings).steps(4).warps_y(8).rows(4).columns(1).float_only(),
    temporal(3, D::Rings).steps(8).warps_y(16).rows(2).columns(2).float_only(),
    temporal(3, D::Rings).steps(8).warps_y(16).rows(2).columns(1),
    // 2D (warps are independent x tiles)
    temporal(2, D::Rings).steps(2).warps_y(4).rows(1).columns(4),
    temporal(2, D::Rings).steps(4).warps_y(4).rows(1).columns(4).float_only(),
    temporal(2, D::Rings).steps(4).warps_y(4).rows(1).columns(2),
    temporal(2, D::Rings).steps(8).warps_y(4).rows(1).columns(2),
};
}  // namespace temporal_policy_rows

inline constexpr const auto& kTemporalPolicies = temporal_policy_rows::kRows;
inline constexpr std::size_t kTemporalPolicyCount = std::size(temporal_policy_rows::kRows);

}  // namespace heatsolve::cuda
