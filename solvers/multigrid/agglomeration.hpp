// The coarse levels of a decomposed multigrid. Coarse levels stay distributed (each rank
// restricts, smooths and prolongs its own block, exchanging one-cell halos with the same
// neighbours as the finest level) while every block halves evenly and the level is large
// (MultigridSettings::agglomerate_below); the first level past that is gathered, and the
// ranks solve it and everything coarser as one grid: every rank redundantly after an
// allgather (no scatter) when it is small, rank 0 alone (gather, then scatter the correction
// with one ghost layer) when it is not (blocks that do not halve at the finest level).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/backend.hpp"
#include "solvers/parallel/block_gather.hpp"
#include "solvers/parallel/deep_halo.hpp"  // HaloExchanger (its make_deep needs the type)

namespace heatsolve {

struct RunContext;  // solvers/solver.hpp
struct Config;      // io/config.hpp

// One distributed coarse level (levels 1, 2, ... of the hierarchy; level 0 is the run's
// decomposition).
template <typename T>
struct DistributedLevel {
  Domain domain;               // the level's blocks: global grid, this rank's block, faces
  std::array<int, 3> ratio{};  // from the next finer level
  // One-cell halos of the level's blocks (the decomposition's transports: staged, CUDA IPC,
  // cuda-aware), between the decomposition's neighbours.
  std::unique_ptr<HaloExchanger<T>> exchanger;
  // Set-up of variable coefficients: fills the Exchange ghosts of a double field of the
  // level's block (host memory: the coarsened resistances' ghost ring). Collective.
  std::function<void(std::vector<double>&)> exchange_double;
};

// The coarse levels of a decomposed grid (collective set-up, per-cycle transfers).
// gather: each rank's block of the gathered level (padded, local grid) -> the whole level
// (padded) on the solving ranks. scatter (rank 0 solving only): rank 0's whole level (ghosts
// filled) -> each rank's block including one ghost layer. Host arrays.
template <typename T>
struct Agglomeration {
  std::vector<DistributedLevel<T>> levels;  // the distributed coarse levels, finest first
  // Deep smoothing (solvers/parallel/margins.hpp), per distributed level from the finest (the
  // run's decomposition, then `levels`): the exchanger of margins
  // MultigridSettings::margin_depth() deep, or null on every rank where some rank's block
  // cannot carry them (another axis split, a block too thin).
  std::vector<std::unique_ptr<DeepHaloExchanger<T>>> deep;
  std::function<double(double)> global_sum;  // sums over the ranks (their fields' spaces)
  // The gathered level: the whole grid, this rank's block of it and the ratio from the last
  // distributed level ({1,1,1}: the last distributed level is itself gathered, because its
  // blocks do not halve evenly).
  GridDesc global_coarse;
  Block block;
  std::array<int, 3> ratio{1, 1, 1};
  BoundaryFaces global_zero_faces{};  // the global grid's face types, zero values
  long long agglomerate_below = 0;    // the deck's threshold, `auto` resolved
  bool overlap = false;    // execution.overlap: sweeps of distributed levels overlap their halos
  bool redundant = false;  // every rank solves the gathered levels (allgather, no scatter)
  bool root = false;       // this rank solves them (every rank when redundant)
  // Rank 0 solving alone: a backend of its own for the coarse levels, so that tuning their
  // kernels (CUDA "auto") does not wait for the other ranks to agree on timings they never
  // take. Redundant solves tune on the run's backend, all ranks agreeing.
  std::unique_ptr<Backend<T>> backend;
  std::function<void(const std::vector<T>& local, std::vector<T>& global)> gather;
  // gather() of a double field whatever T is (coefficients at set-up, as exact as serial).
  std::function<void(const std::vector<double>& local, std::vector<double>& global)> gather_double;
  std::function<void(const std::vector<T>& global, std::vector<T>& local)> scatter;
  // Redundant solves: makes the gather of the gathered level's right side device to device
  // (IpcAllgather: GPUs of one node, slab blocks). Collective; null on every rank where it
  // cannot be made, and then gather() serves.
  std::function<std::unique_ptr<BlockGather<T>>(Backend<T>&)> make_device_gather;
};

// The coarse levels of a run on several ranks (collective over ctx.comm); null for one rank.
// The deck's faces close the global coarse grids; cfg.multigrid.agglomerate_below and
// cfg.halo decide where levels are gathered and how their halos travel. `device_memory`: the
// hierarchy's backend keeps its fields on a GPU (Backend::device_memory()).
template <typename T>
std::unique_ptr<Agglomeration<T>> plan_agglomeration(const RunContext& ctx, const Config& cfg,
                                                     bool device_memory);

}  // namespace heatsolve
