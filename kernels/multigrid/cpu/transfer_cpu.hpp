// Multigrid grid transfers and the dot product on host memory (contract: Backend::
// restrict_average, prolong_add, interpolate, dot).
#pragma once

#include <array>

#include "core/grid.hpp"
#include "core/multigrid.hpp"

namespace heatsolve {

template <typename T>
void cpu_restrict_average(const T* fine, const GridDesc& gf, T* coarse, const GridDesc& gc,
                          const std::array<int, 3>& ratio);
template <typename T>
void cpu_prolong_add(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                     const std::array<int, 3>& ratio, Prolongation p);
// fine = P coarse (Backend::interpolate).
template <typename T>
void cpu_interpolate(const T* coarse, const GridDesc& gc, T* fine, const GridDesc& gf,
                     const std::array<int, 3>& ratio, Prolongation p);
// Per-row partials summed in a fixed order: the same bits for any thread count.
template <typename T>
double cpu_dot(const T* a, const T* b, const GridDesc& g);

}  // namespace heatsolve
