// Grid descriptor shared by every kernel: a cell-centred structured grid stored with one
// ghost cell on each side of every active dimension (x fastest).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#define HS_HOST_DEVICE __host__ __device__
#else
#define HS_HOST_DEVICE
#endif

namespace heatsolve {

struct GridDesc {
  int dims = 3;                // 2 or 3
  int nx = 1, ny = 1, nz = 1;  // interior cells; nz == 1 in 2D
  double hx = 1, hy = 1, hz = 1;

  // Padded extents: 2D grids have no ghost layer in z.
  HS_HOST_DEVICE int px() const { return nx + 2; }
  HS_HOST_DEVICE int py() const { return ny + 2; }
  HS_HOST_DEVICE int pz() const { return dims == 3 ? nz + 2 : 1; }
  HS_HOST_DEVICE std::int64_t stride_y() const { return px(); }
  HS_HOST_DEVICE std::int64_t stride_z() const { return static_cast<std::int64_t>(px()) * py(); }
  // Offset of interior cell (0,0,0) in the padded array.
  HS_HOST_DEVICE std::int64_t interior_offset() const {
    return 1 + stride_y() + (dims == 3 ? stride_z() : 0);
  }
  // Linear index of cell (i, j, k); i in [-1, nx], j in [-1, ny], k in [-1, nz] (3D) or 0 (2D).
  HS_HOST_DEVICE std::int64_t index(int i, int j, int k) const {
    return interior_offset() + i + stride_y() * j + stride_z() * k;
  }
  // Linear index of the c-th interior cell, cells numbered x fastest, then y, then z.
  HS_HOST_DEVICE std::int64_t interior_index(std::int64_t c) const {
    const std::int64_t row = c / nx;
    return index(int(c - row * nx), int(row % ny), int(row / ny));
  }
  HS_HOST_DEVICE std::size_t padded_size() const {
    return static_cast<std::size_t>(px()) * py() * pz();
  }
  HS_HOST_DEVICE std::size_t interior_size() const {
    return static_cast<std::size_t>(nx) * ny * (dims == 3 ? nz : 1);
  }
};

// Largest stable explicit step: 1 / (2 alpha sum_d 1/h_d^2).
inline double stable_dt(const GridDesc& g, double alpha) {
  double s = 1.0 / (g.hx * g.hx) + 1.0 / (g.hy * g.hy);
  if (g.dims == 3) s += 1.0 / (g.hz * g.hz);
  return 1.0 / (2.0 * alpha * s);
}

}  // namespace heatsolve
