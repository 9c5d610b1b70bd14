#include "solvers/multigrid/agglomeration.hpp"

#include <array>
#include <stdexcept>
#include <type_traits>

#include "solvers/multigrid/multigrid.hpp"
#include "solvers/solver.hpp"

namespace heatsolve {

namespace {

double max_over_ranks(const RunContext& ctx, double v) {
  return ctx.reducer ? ctx.reducer->max(v) : v;
}

#ifdef HEATSOLVE_HAVE_MPI
template <typename T>
std::unique_ptr<Agglomeration<T>> make_agglomeration(const RunContext& ctx, BackendKind kind,
                                                     const BoundaryFaces& global_faces,
                                                     const GridDesc& global_coarse) {
  const MPI_Comm comm = ctx.comm;
  if (comm == MPI_COMM_NULL)
    throw std::logic_error("decomposed multigrid run without RunContext::comm");
  const Domain& domain = ctx.domain;
  const int size = domain.size;
  const int rank = domain.rank;
  // Every rank's block of the coarse grid; the plan checked that each halves evenly.
  const GridDesc& gf = domain.global;
  const std::array<int, 3> ratio{gf.nx / global_coarse.nx, gf.ny / global_coarse.ny,
                                 gf.dims == 3 ? gf.nz / global_coarse.nz : 1};
  std::array<int, 6> mine{};
  for (int a = 0; a < 3; ++a) {
    mine[a] = domain.block.offset[a] / ratio[a];
    mine[3 + a] = domain.block.count[a] / ratio[a];
  }
  std::vector<int> all(6 * std::size_t(size));
  MPI_Allgather(mine.data(), 6, MPI_INT, all.data(), 6, MPI_INT, comm);
  auto agg = std::make_unique<Agglomeration<T>>();
  agg->global_coarse = global_coarse;
  agg->root = rank == 0;
  if (agg->root) {
    BackendOptions opts = ctx.backend_options;
    opts.agree_timings = nullptr;
    agg->backend = make_backend<T>(kind, opts);
  }
  for (int f = 0; f < 6; ++f)
    agg->global_zero_faces[f] = {global_faces[f].type, 0.0, global_faces[f].coeff};
  const MPI_Datatype type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
  // Blocks travel as their padded local arrays (one ghost layer); rank 0 copies each into or
  // out of the global padded array. Coarse levels are small: simplicity over bandwidth.
  const auto local_grid = [all, global_coarse](int r) {
    GridDesc g = global_coarse;
    g.nx = all[6 * r + 3];
    g.ny = all[6 * r + 4];
    g.nz = global_coarse.dims == 3 ? all[6 * r + 5] : 1;
    return g;
  };
  // face_axis >= 0 (into the global grid only): the upper face along that axis too, for the
  // blocks at the global grid's upper end.
  const auto copy_block = [all, global_coarse, local_grid](int r, auto* local, auto* global,
                                                           bool to_global, int face_axis = -1) {
    const GridDesc lg = local_grid(r);
    const GridDesc& gg = global_coarse;
    const bool d3 = gg.dims == 3;
    const int o[3] = {all[6 * r], all[6 * r + 1], d3 ? all[6 * r + 2] : 0};
    // Interior only into the global grid; interior plus one ghost layer out of it.
    const int lo = to_global ? 0 : -1;
    const int n[3] = {lg.nx, lg.ny, lg.nz};
    const int gn[3] = {gg.nx, gg.ny, gg.nz};
    int up[3] = {0, 0, 0};
    if (face_axis >= 0 && o[face_axis] + n[face_axis] == gn[face_axis]) up[face_axis] = 1;
    for (int k = d3 ? lo : 0; k < (d3 ? lg.nz - lo + up[2] : 1); ++k)
      for (int j = lo; j < lg.ny - lo + up[1]; ++j)
        for (int i = lo; i < lg.nx - lo + up[0]; ++i) {
          auto& l = local[lg.index(i, j, k)];
          auto& g = global[gg.index(o[0] + i, o[1] + j, o[2] + k)];
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
  auto buffer = std::make_shared<std::vector<T>>(agg->root ? std::size_t(total) : 0);
  agg->gather = [=](const std::vector<T>& local, std::vector<T>& global) {
    MPI_Gatherv(local.data(), int(local.size()), type, buffer->data(), counts.data(), displs.data(),
                type, 0, comm);
    if (rank != 0) return;
    for (int r = 0; r < size; ++r) copy_block(r, buffer->data() + displs[r], global.data(), true);
  };
  agg->gather_faces = [=](const std::vector<T>& local, std::vector<T>& global, int axis) {
    std::vector<T> staged(rank == 0 ? std::size_t(total) : 0);
    MPI_Gatherv(local.data(), int(local.size()), type, staged.data(), counts.data(), displs.data(),
                type, 0, comm);
    if (rank != 0) return;
    for (int r = 0; r < size; ++r)
      copy_block(r, staged.data() + displs[r], global.data(), true, axis);
  };
  agg->gather_double = [=](const std::vector<double>& local, std::vector<double>& global) {
    std::vector<double> staged(rank == 0 ? std::size_t(total) : 0);
    MPI_Gatherv(local.data(), int(local.size()), MPI_DOUBLE, staged.data(), counts.data(),
                displs.data(), MPI_DOUBLE, 0, comm);
    if (rank != 0) return;
    for (int r = 0; r < size; ++r) copy_block(r, staged.data() + displs[r], global.data(), true);
  };
  agg->scatter = [=](const std::vector<T>& global, std::vector<T>& local) {
    if (rank == 0)
      for (int r = 0; r < size; ++r)
        copy_block(r, buffer->data() + displs[r], const_cast<T*>(global.data()), false);
    MPI_Scatterv(buffer->data(), counts.data(), displs.data(), type, local.data(),
                 int(local.size()), type, 0, comm);
  };
  return agg;
}
#endif

}  // namespace

template <typename T>
std::unique_ptr<Agglomeration<T>> plan_agglomeration(const RunContext& ctx, BackendKind kind,
                                                     const BoundaryFaces& global_faces) {
  const Domain& domain = ctx.domain;
  if (domain.size <= 1) return nullptr;
  // The first coarse level is distributed when every rank's block halves evenly along the
  // axes the global grid halves (same decision on every rank); otherwise the finest residual
  // itself is gathered (ratio 1).
  std::array<int, 3> ratio{};
  GridDesc gc = coarsen(domain.global, &ratio);
  bool even = true;
  for (int a = 0; a < domain.local.dims; ++a)
    even =
        even && (domain.block.offset[a] % ratio[a] == 0 && domain.block.count[a] % ratio[a] == 0);
  if (max_over_ranks(ctx, even ? 0.0 : 1.0) > 0) gc = domain.global;
#ifdef HEATSOLVE_HAVE_MPI
  return make_agglomeration<T>(ctx, kind, global_faces, gc);
#else
  (void)kind, (void)global_faces;
  throw std::logic_error("decomposed multigrid run in a build without MPI");
#endif
}

template std::unique_ptr<Agglomeration<float>> plan_agglomeration<float>(const RunContext&,
                                                                         BackendKind,
                                                                         const BoundaryFaces&);
template std::unique_ptr<Agglomeration<double>> plan_agglomeration<double>(const RunContext&,
                                                                           BackendKind,
                                                                           const BoundaryFaces&);

}  // namespace heatsolve
