#include "solvers/multigrid/agglomeration.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "solvers/multigrid/multigrid.hpp"
#include "solvers/solver.hpp"
#ifdef HEATSOLVE_HAVE_MPI
#include "solvers/parallel/decomposition.hpp"
#include "solvers/parallel/halo_exchange.hpp"
#include "solvers/parallel/ipc_allgather.hpp"
#include "solvers/parallel/margins.hpp"
#endif

namespace heatsolve {

namespace {

#ifdef HEATSOLVE_HAVE_MPI
// A distributed level's blocks are at least this many cells along every axis (smaller ones
// would exchange halos for almost no work).
constexpr int kMinBlockCells = 4;
// A gathered level of at most this many cells is solved by every rank (allgather); larger
// ones (the finest level, when blocks do not halve) by rank 0 alone, which keeps one copy.
constexpr double kRedundantCells = double(1 << 21);
// Tags of the distributed levels' exchangers: kLevelTagBase + kLevelTagStride * level + face
// (the run's exchanger: 0-5, deep halos: 100-105, IPC handshakes: 1000 and up).
constexpr int kLevelTagBase = 200;
constexpr int kLevelTagStride = 8;
constexpr int kMaxDistributedLevels = (1000 - kLevelTagBase) / kLevelTagStride - 1;

int extent(const GridDesc& g, int a) {
  return a == 0 ? g.nx : a == 1 ? g.ny : g.nz;
}

// The block of the next coarser level (ratio per axis) of a block that halves evenly.
Domain coarser_domain(const Domain& d, const GridDesc& global_coarse,
                      const std::array<int, 3>& ratio) {
  Domain c = d;
  c.global = global_coarse;
  c.local = global_coarse;
  for (int a = 0; a < 3; ++a) {
    c.block.offset[a] = d.block.offset[a] / ratio[a];
    c.block.count[a] = d.block.count[a] / ratio[a];
  }
  c.local.nx = c.block.count[0];
  c.local.ny = c.block.count[1];
  c.local.nz = global_coarse.dims == 3 ? c.block.count[2] : 1;
  return c;
}

bool halves_evenly(const Domain& d, const std::array<int, 3>& ratio) {
  bool even = ratio != std::array<int, 3>{1, 1, 1};
  for (int a = 0; a < d.global.dims; ++a)
    even = even && d.block.offset[a] % ratio[a] == 0 && d.block.count[a] % ratio[a] == 0;
  return even;
}

// Gathered-level sizes of `agglomerate_below: auto`: where the gathered level goes between
// the GPUs of one node (IpcAllgather: device memory, every rank on the node, blocks split
// along the last axis only) gathering 64^3 is the faster cycle (docs/performance.md, 2 and 4
// H100s); elsewhere each cycle's gather goes through host memory, and 32^3 keeps it small.
constexpr long long kAgglomerateDevice = 128LL * 128 * 128;
constexpr long long kAgglomerateHost = 64LL * 64 * 64;

// Whether this rank's gathered level can go device to device (collective; the ranks then
// agree: a rank whose backend is not on a device answers for all).
bool device_gather_possible(const RunContext& ctx, bool device_memory) {
  const bool one_node = all_on_one_node(ctx.comm);  // every rank calls it
  return one_node && device_memory && slab_block(ctx.domain.global, ctx.domain.block);
}

template <typename T>
std::unique_ptr<Agglomeration<T>> make_agglomeration(const RunContext& ctx, const Config& cfg,
                                                     bool device_memory) {
  const MPI_Comm comm = ctx.comm;
  if (comm == MPI_COMM_NULL)
    throw std::logic_error("decomposed multigrid run without RunContext::comm");
  const Reducer* reducer = ctx.reducer;
  const auto all = [reducer](bool mine) {  // true on every rank
    return !reducer || reducer->max(mine ? 0.0 : 1.0) == 0;
  };
  const int size = ctx.domain.size;
  const int rank = ctx.domain.rank;
  auto agg = std::make_unique<Agglomeration<T>>();
  if (reducer) agg->global_sum = [reducer](double v) { return reducer->sum(v); };
  agg->overlap = cfg.overlap;
  agg->agglomerate_below = cfg.multigrid.agglomerate_below != kAgglomerateAuto
                               ? cfg.multigrid.agglomerate_below
                           : all(device_gather_possible(ctx, device_memory)) ? kAgglomerateDevice
                                                                             : kAgglomerateHost;
  const std::array<int, 6> peers = cartesian_neighbours(comm, ctx.domain);
  const bool variable = !cfg.material.uniform();
  std::shared_ptr<Backend<double>> host;  // the set-up exchange of double fields
  if (variable) host = make_backend<double>(BackendKind::Cpu, BackendOptions{});

  // Walk down the global hierarchy while the blocks halve evenly and the levels are large;
  // the first level that is not distributed is gathered (the last distributed one itself when
  // its blocks do not halve).
  Domain level = ctx.domain;
  for (;;) {
    std::array<int, 3> ratio{};
    const GridDesc coarse = coarsen(level.global, &ratio);
    if (!all(halves_evenly(level, ratio))) {
      agg->global_coarse = level.global;
      agg->block = level.block;
      agg->ratio = {1, 1, 1};
      break;
    }
    const Domain next = coarser_domain(level, coarse, ratio);
    std::array<int, 3> next_ratio{};
    coarsen(coarse, &next_ratio);
    int thinnest = extent(next.local, 0);
    for (int a = 1; a < coarse.dims; ++a) thinnest = std::min(thinnest, extent(next.local, a));
    const bool distribute =
        double(coarse.interior_size()) >= double(agg->agglomerate_below) &&
        next_ratio != std::array<int, 3>{1, 1, 1} &&  // the coarsest level is solved whole
        int(agg->levels.size()) < kMaxDistributedLevels;
    if (!distribute || !all(thinnest >= kMinBlockCells)) {
      agg->global_coarse = coarse;
      agg->block = next.block;
      agg->ratio = ratio;
      break;
    }
    DistributedLevel<T> dl;
    dl.domain = next;
    dl.ratio = ratio;
    const int tag = kLevelTagBase + kLevelTagStride * int(agg->levels.size() + 1);
    dl.exchanger = std::make_unique<MpiHaloExchanger<T>>(comm, peers, next, cfg.halo, tag);
    if (variable) {
      auto ex = std::make_shared<MpiHaloExchanger<double>>(comm, peers, next, HaloMode::Auto, tag);
      dl.exchange_double = [ex, host](std::vector<double>& v) { ex->exchange(*host, v.data()); };
    }
    agg->levels.push_back(std::move(dl));
    level = next;
  }

  // Margins for deep smoothing on all ranks or on none (the exchange is collective). The
  // hierarchy queues all its work on the main lane: its exchanges may be ordered on the
  // devices, so that the GPUs do not drain at each of them.
  const int depth = cfg.multigrid.margin_depth();
  const auto deep = [&](const Domain& d, int planes) -> std::unique_ptr<DeepHaloExchanger<T>> {
    if (!all(stream_margins(d, planes).any())) return nullptr;
    return MpiHaloExchanger<T>(comm, peers, d, cfg.halo, 0)
        .make_deep(planes, ExchangeOrdering::Device);
  };
  agg->deep.push_back(deep(ctx.domain, depth));
  // On a device a distributed level's post-smoothing pass adds the next level's correction to
  // its margins too, reading M / 2 + 1 of that level's margin planes (M: its own); a coarse
  // level whose margins are deeper than its post-smoothing's sweeps by that many still holds
  // them valid after its own pass (Multigrid::fill_correction), so it hands its correction
  // over without an exchange. Even depths keep each child's parity; where a block is too thin
  // for them, the deck's depth.
  const MultigridSettings& ms = cfg.multigrid;
  const bool deeper = all(device_memory) && ctx.domain.global.dims == 3 && ms.fused &&
                      ms.post_sweeps > 0 && ms.prolongation == Prolongation::Linear;
  int above = depth;         // the finer level's margin depth
  bool above_passes = true;  // whether the finer level's post-smoothing is one deep pass
  for (const DistributedLevel<T>& dl : agg->levels) {
    const bool small = ms.coarse_sweeps > 0 && is_small_level(dl.domain.global);
    int planes = depth;
    if (deeper && above_passes && !small && dl.ratio == std::array<int, 3>{2, 2, 2})
      planes = std::max(depth, (ms.post_sweeps + above / 2 + 1 + 1) / 2 * 2);
    std::unique_ptr<DeepHaloExchanger<T>> ex = planes > depth ? deep(dl.domain, planes) : nullptr;
    if (!ex) planes = depth, ex = deep(dl.domain, depth);
    agg->deep.push_back(std::move(ex));
    above = planes;
    above_passes = !small;
  }

  const GridDesc& gc = agg->global_coarse;
  // HEATSOLVE_TEST_MG_ROOT=1: rank 0 solves whatever the size (tests of that path).
  const char* root_only = std::getenv("HEATSOLVE_TEST_MG_ROOT");
  agg->redundant = double(gc.interior_size()) <= kRedundantCells &&
                   !(root_only && std::string(root_only) == "1");
  agg->root = agg->redundant || rank == 0;
  if (rank == 0 && !agg->redundant) {
    BackendOptions opts = ctx.backend_options;
    opts.agree_timings = nullptr;
    agg->backend = make_backend<T>(cfg.backend, opts);
  }
  for (int f = 0; f < 6; ++f)
    agg->global_zero_faces[f] = {cfg.boundary[f].type, 0.0, cfg.boundary[f].coeff};

  // Every rank's block of the gathered level.
  std::array<int, 6> mine{};
  for (int a = 0; a < 3; ++a) {
    mine[a] = agg->block.offset[a];
    mine[3 + a] = agg->block.count[a];
  }
  std::vector<int> blocks(6 * std::size_t(size));
  MPI_Allgather(mine.data(), 6, MPI_INT, blocks.data(), 6, MPI_INT, comm);
  const MPI_Datatype type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
  // Blocks travel as their padded local arrays (one ghost layer); the solving ranks copy each
  // into or out of the global padded array. Gathered levels are small: simplicity over
  // bandwidth.
  const auto local_grid = [blocks, gc](int r) {
    GridDesc g = gc;
    g.nx = blocks[6 * r + 3];
    g.ny = blocks[6 * r + 4];
    g.nz = gc.dims == 3 ? blocks[6 * r + 5] : 1;
    return g;
  };
  const auto copy_block = [blocks, gc, local_grid](int r, auto* local, auto* global,
                                                   bool to_global) {
    const GridDesc lg = local_grid(r);
    const bool d3 = gc.dims == 3;
    const int o[3] = {blocks[6 * r], blocks[6 * r + 1], d3 ? blocks[6 * r + 2] : 0};
    // Interior only into the global grid; interior plus one ghost layer out of it.
    const int lo = to_global ? 0 : -1;
    for (int k = d3 ? lo : 0; k < (d3 ? lg.nz - lo : 1); ++k)
      for (int j = lo; j < lg.ny - lo; ++j)
        for (int i = lo; i < lg.nx - lo; ++i) {
          auto& l = local[lg.index(i, j, k)];
          auto& g = global[gc.index(o[0] + i, o[1] + j, o[2] + k)];
          if (to_global)
            g = l;
          else
            l = g;
        }
  };
  std::vector<int> counts(size), displs(size);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = int(local_grid(r).padded_size());
    displs[r] = total;
    total += counts[r];
  }
  const bool redundant = agg->redundant;
  // The blocks staged in host memory on the solving ranks, sized at first use: where the
  // gathered level travels device to device they are never used, and first touching the
  // pages cost 1-3 ms of a 2-GPU set-up.
  auto buffer = std::make_shared<std::vector<T>>();
  const std::size_t staged_size = agg->root ? std::size_t(total) : 0;
  const auto staging = [buffer, staged_size]() -> std::vector<T>& {
    if (buffer->size() != staged_size) buffer->resize(staged_size);
    return *buffer;
  };
  // Into `staged` on the solving ranks, then each block into `global`.
  const auto collect = [=](const auto& local, auto& staged, auto& global, MPI_Datatype t) {
    if (redundant)
      MPI_Allgatherv(local.data(), int(local.size()), t, staged.data(), counts.data(),
                     displs.data(), t, comm);
    else
      MPI_Gatherv(local.data(), int(local.size()), t, staged.data(), counts.data(), displs.data(),
                  t, 0, comm);
    if (!redundant && rank != 0) return;
    for (int r = 0; r < size; ++r) copy_block(r, staged.data() + displs[r], global.data(), true);
  };
  agg->gather = [=](const std::vector<T>& local, std::vector<T>& global) {
    collect(local, staging(), global, type);
  };
  agg->gather_double = [=](const std::vector<double>& local, std::vector<double>& global) {
    std::vector<double> staged(redundant || rank == 0 ? std::size_t(total) : 0);
    collect(local, staged, global, MPI_DOUBLE);
  };
  if (redundant)
    agg->make_device_gather = [comm, gc, block = agg->block](Backend<T>& backend) {
      return std::unique_ptr<BlockGather<T>>(IpcAllgather<T>::create(comm, backend, gc, block));
    };
  agg->scatter = [=](const std::vector<T>& global, std::vector<T>& local) {
    if (redundant) throw std::logic_error("agglomeration: a redundant solve scatters nothing");
    std::vector<T>& staged = staging();
    if (rank == 0)
      for (int r = 0; r < size; ++r)
        copy_block(r, staged.data() + displs[r], const_cast<T*>(global.data()), false);
    MPI_Scatterv(staged.data(), counts.data(), displs.data(), type, local.data(), int(local.size()),
                 type, 0, comm);
  };
  return agg;
}
#endif

}  // namespace

template <typename T>
std::unique_ptr<Agglomeration<T>> plan_agglomeration(const RunContext& ctx, const Config& cfg,
                                                     bool device_memory) {
  if (ctx.domain.size <= 1) return nullptr;
#ifdef HEATSOLVE_HAVE_MPI
  return make_agglomeration<T>(ctx, cfg, device_memory);
#else
  (void)cfg, (void)device_memory;
  throw std::logic_error("decomposed multigrid run in a build without MPI");
#endif
}

template std::unique_ptr<Agglomeration<float>> plan_agglomeration<float>(const RunContext&,
                                                                         const Config&, bool);
template std::unique_ptr<Agglomeration<double>> plan_agglomeration<double>(const RunContext&,
                                                                           const Config&, bool);

}  // namespace heatsolve
