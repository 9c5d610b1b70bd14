// A source term's separable form. Every deck shape (uniform, box, Gaussian, sine) is a
// product of one factor per axis, so its values are
//   f = offset + scale * (plane * column)
// with `plane` the cell's in-plane factor and `column` its factor along the stream axis (z in
// 3D, y in 2D), each product rounded in T (no FMA): separable_value(). A device backend told
// of it (Backend::describe_source) may generate f inside its sweeps instead of reading the
// stored field: the same values, so the same bits, without the third memory stream.
#pragma once

#include <cstdint>
#include <vector>

#include "core/grid.hpp"

namespace heatsolve {

template <typename T>
struct SeparableSource {
  T offset = 0, scale = 0;
  // One padded plane of the grid's layout (stride_z() values in 3D, stride_y() in 2D): the
  // in-plane factor of interior cell (i, j) at g.index(i, j, 0) - stride of the stream axis;
  // ghosts 0.
  std::vector<T> plane;
  std::vector<T> column;  // the stream factor of interior plane k at [k]
};

// Each product rounded: the host build targets x86-64 without FMA instructions, so nothing is
// contracted here; the device computes it with __fmul_rn / __fadd_rn.
template <typename T>
inline T separable_value(T offset, T scale, T plane, T column) {
  const T product = plane * column;
  const T scaled = scale * product;
  return offset + scaled;
}

// A sweep's source term as the kernels take it: the stored values (`field`, laid out as u), or,
// where `plane` is set (device pointers to a SeparableSource's factors; `field` is then kept
// too), the same values generated in the sweep:
//   f = separable_value(offset, scale, plane[idx - (k + 1) ss], column[k])
// for the cell at index idx in plane k of the stream axis (ss: that axis' stride). Neither
// set: no source. A stored field converts to one.
template <typename T>
struct SourceRef {
  const T* field = nullptr;
  const T* plane = nullptr;
  const T* column = nullptr;
  T offset = 0, scale = 0;
  std::int64_t ss = 0;
  SourceRef() = default;
  SourceRef(const T* f) : field(f) {}  // NOLINT(google-explicit-constructor)
  HS_HOST_DEVICE bool present() const { return field != nullptr || plane != nullptr; }
  // The term of a view that starts `lo` planes further along the stream axis.
  SourceRef from_plane(int lo, std::int64_t stride) const {
    SourceRef r = *this;
    if (field) r.field = field + lo * stride;
    if (column) r.column = column + lo;
    return r;
  }
};

}  // namespace heatsolve
