// Fields with margins: a decomposed block's field allocated inside the padded array of its
// deep-halo extended grid (solvers/parallel/deep_halo.hpp), so that a multigrid level smooths
// in fused passes across ranks without copying its fields. Only where the stream axis alone
// is split (z in 3D, y in 2D): the extended grid then has the block's strides, and the block's
// padded array is the extended one's planes from margin_lo on (the block's ghost plane is the
// margin's innermost). Everything else sees an ordinary field of the block.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/backend.hpp"
#include "solvers/parallel/deep_halo.hpp"

namespace heatsolve {

// Elements of the extended array before the block's padded array and after it.
struct Margins {
  std::size_t before = 0, after = 0;
  bool any() const { return before > 0 || after > 0; }
  // These margins hold `need`'s.
  bool covers(const Margins& need) const { return before >= need.before && after >= need.after; }
};

// `elements` of margin (Margins::before or after) as planes of g's stream axis (z in 3D, y in
// 2D), g the block's grid.
inline int margin_planes(std::size_t elements, const GridDesc& g) {
  return int(elements / std::size_t(g.dims == 3 ? g.stride_z() : g.stride_y()));
}

// `geometry`'s margins as memory around a block field; false where an axis other than the
// stream axis has margins (the strides differ) or none has.
bool stream_margins(const DeepHaloGeometry& geometry, Margins* out);
// The margins `depth` cells deep on `domain`'s block; none where stream_margins() does not
// apply or the block is thinner than `depth` along the stream axis.
Margins stream_margins(const Domain& domain, int depth);

// A zero-filled field of n elements (a padded block) with `margins` of memory around it: its
// data() is the block's first element, its copies and size() the block's; margins_of(data())
// answers `margins` while it lives.
template <typename T>
std::unique_ptr<Array<T>> allocate_with_margins(Backend<T>& backend, std::size_t n,
                                                const Margins& margins);
// The margins of the live field whose data() is p (allocate_with_margins); none for others.
Margins margins_of(const void* p);

}  // namespace heatsolve
