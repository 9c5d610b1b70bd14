// The stored values of a separable source (kernels/stencil/source.hpp) on the host: the one loop
// behind the solvers' fill_separable and the CPU backend's rescale_source, so that a field
// refilled in place holds the bits a fresh fill would. Host only (OpenMP).
#pragma once

#include <cstdint>

#include "core/grid.hpp"
#include "kernels/stencil/source.hpp"

namespace heatsolve {

// padded[idx] = separable_value(offset, scale, plane[idx - (k + 1) ss], column[k]) at every
// interior cell idx in plane k of the stream axis (z in 3D, y in 2D; ss its stride); ghosts
// are left as they are.
template <typename T>
void fill_separable_interior(T* padded, const GridDesc& g, T offset, T scale, const T* plane,
                             const T* column) {
  const std::int64_t ss = g.dims == 3 ? g.stride_z() : g.stride_y();
  const int nz = g.dims == 3 ? g.nz : 1;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const std::int64_t idx = g.index(i, j, k);
        const int p = g.dims == 3 ? k : j;  // along the stream axis
        padded[idx] = separable_value(offset, scale, plane[idx - (p + 1) * ss], column[p]);
      }
}

}  // namespace heatsolve
