// The coarse levels of a decomposed multigrid: the first coarse level stays distributed
// (each rank restricts its own block) when every block halves evenly, and is then gathered
// onto rank 0, which solves the coarser levels alone and scatters the correction back.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "kernels/backend.hpp"

namespace heatsolve {

struct RunContext;  // solvers/solver.hpp

// Moves the first coarse level of a decomposed grid to rank 0 and its correction back.
// gather: each rank's local coarse interior (padded, local grid) -> the global coarse grid
// (padded) on rank 0. scatter: rank 0's global coarse field (with ghosts filled) -> each
// rank's local block including one ghost layer. Host arrays.
template <typename T>
struct Agglomeration {
  GridDesc global_coarse;             // the whole first coarse level
  BoundaryFaces global_zero_faces{};  // the global grid's face types, zero values
  // Rank 0: a backend of its own for the coarse levels, so that tuning their kernels (CUDA
  // "auto") does not wait for the other ranks to agree on timings they never take.
  std::unique_ptr<Backend<T>> backend;
  bool root = false;  // this rank solves the coarse levels
  std::function<void(const std::vector<T>& local, std::vector<T>& global)> gather;
  // gather() of a face array along `axis` (kernels/stencil/variable.hpp: each cell's lower
  // face), with the upper boundary faces the blocks at the grid's upper end hold in their
  // ghost layer. Collective, at set-up.
  std::function<void(const std::vector<T>& local, std::vector<T>& global, int axis)> gather_faces;
  // gather() of a double field whatever T is (coefficients at set-up, as exact as serial).
  std::function<void(const std::vector<double>& local, std::vector<double>& global)> gather_double;
  std::function<void(const std::vector<T>& global, std::vector<T>& local)> scatter;
};

// The agglomeration of a run on several ranks (collective over ctx.comm); null for one rank.
// `global_faces`: the deck's faces (their types close the global coarse grid).
template <typename T>
std::unique_ptr<Agglomeration<T>> plan_agglomeration(const RunContext& ctx, BackendKind kind,
                                                     const BoundaryFaces& global_faces);

}  // namespace heatsolve
