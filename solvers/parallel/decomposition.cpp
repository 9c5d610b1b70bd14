#include "solvers/parallel/decomposition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

namespace heatsolve {

namespace {

const char* const kAxisName[3] = {"x", "y", "z"};

std::array<int, 3> cells_of(const GridDesc& g) {
  return {g.nx, g.ny, g.dims == 3 ? g.nz : 1};
}

// Prime factors of n, largest first.
std::vector<int> prime_factors(int n) {
  std::vector<int> f;
  for (int p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      f.push_back(p);
      n /= p;
    }
  if (n > 1) f.push_back(n);
  std::sort(f.rbegin(), f.rend());
  return f;
}

}  // namespace

AxisSplit split_axis(int n, int p, int coord) {
  const int base = n / p, extra = n % p;
  AxisSplit s;
  s.count = base + (coord < extra ? 1 : 0);
  s.offset = coord * base + std::min(coord, extra);
  return s;
}

std::string decomposition_string(const std::array<int, 3>& procs, int dims) {
  return dims == 3 ? fmt::format("{}x{}x{}", procs[0], procs[1], procs[2])
                   : fmt::format("{}x{}", procs[0], procs[1]);
}

void check_decomposition(const GridDesc& global, const std::array<int, 3>& procs, int size) {
  const std::array<int, 3> cells = cells_of(global);
  const std::string what = decomposition_string(procs, global.dims);
  for (int a = 0; a < 3; ++a)
    if (procs[a] < 1)
      throw DecompositionError(
          fmt::format("execution.decomposition {}: every axis needs at least one rank", what));
  if (global.dims == 2 && procs[2] != 1)
    throw DecompositionError(
        fmt::format("execution.decomposition {}: a 2D grid cannot be split along z", what));
  const long product = long(procs[0]) * procs[1] * procs[2];
  if (product != size)
    throw DecompositionError(fmt::format(
        "execution.decomposition {} needs {} MPI ranks but the job has {}; launch {} ranks or "
        "set execution.decomposition: auto",
        what, product, size, product));
  for (int a = 0; a < global.dims; ++a)
    if (procs[a] > cells[a])
      throw DecompositionError(fmt::format(
          "decomposition {} puts {} ranks along {} but the grid has only {} cells there; every "
          "rank needs at least one cell (use fewer ranks or set execution.decomposition)",
          what, procs[a], kAxisName[a], cells[a]));
}

std::array<int, 3> balanced_factors(int size, int dims) {
  // As MPI_Dims_create: prime factors, largest first, each multiplied into the currently
  // smallest slot; returned non-increasing.
  std::array<int, 3> f{1, 1, 1};
  for (int pf : prime_factors(size)) {
    int smallest = 0;
    for (int i = 1; i < dims; ++i)
      if (f[i] < f[smallest]) smallest = i;
    f[smallest] *= pf;
  }
  std::sort(f.begin(), f.begin() + dims, std::greater<int>());
  return f;
}

std::array<int, 3> choose_decomposition(const GridDesc& global, const std::array<int, 3>& requested,
                                        int size, const std::array<int, 3>& factors) {
  if (size < 1) throw DecompositionError("decomposition: rank count must be positive");
  const bool is_auto = requested[0] == 0 && requested[1] == 0 && requested[2] == 0;
  if (!is_auto) {
    std::array<int, 3> p = requested;
    if (global.dims == 2 && p[2] == 0) p[2] = 1;
    check_decomposition(global, p, size);
    return p;
  }
  // Balanced factors (MPI_Dims_create's, or the same rule without MPI), the largest on the
  // axis with the most cells; ties go to the slowest axis (contiguous faces, cheaper packing).
  std::array<int, 3> f = factors;
  if (f[0] * f[1] * f[2] != size) f = balanced_factors(size, global.dims);
  std::sort(f.begin(), f.begin() + global.dims, std::greater<int>());
  const std::array<int, 3> cells = cells_of(global);
  std::array<int, 3> order{0, 1, 2};
  std::stable_sort(order.begin(), order.begin() + global.dims, [&](int a, int b) {
    return cells[a] > cells[b] || (cells[a] == cells[b] && a > b);
  });
  std::array<int, 3> p{1, 1, 1};
  for (int i = 0; i < global.dims; ++i) p[order[i]] = f[i];
  bool fits = true;
  for (int a = 0; a < global.dims; ++a) fits = fits && p[a] <= cells[a];
  if (!fits) {
    // Thin grids: prime factors one at a time, each to the axis with most cells per rank.
    p = {1, 1, 1};
    for (int pf : prime_factors(size)) {
      int best = -1;
      double best_cells = -1;
      for (int a = global.dims - 1; a >= 0; --a) {
        if (long(p[a]) * pf > cells[a]) continue;
        const double per_rank = double(cells[a]) / p[a];
        if (per_rank > best_cells) {
          best_cells = per_rank;
          best = a;
        }
      }
      if (best < 0)
        throw DecompositionError(fmt::format(
            "cannot split a {} grid over {} MPI ranks: too few cells for that many ranks",
            global.dims == 3 ? fmt::format("{}x{}x{}", cells[0], cells[1], cells[2])
                             : fmt::format("{}x{}", cells[0], cells[1]),
            size));
      p[best] *= pf;
    }
  }
  check_decomposition(global, p, size);
  return p;
}

Domain block_domain(const GridDesc& global, const BoundaryFaces& faces,
                    const std::array<int, 3>& procs, const std::array<int, 3>& coords, int rank) {
  const std::array<int, 3> cells = cells_of(global);
  Domain d;
  d.global = global;
  d.local = global;  // same dims and spacing (copied, not recomputed: bitwise equal)
  d.rank = rank;
  d.size = procs[0] * procs[1] * procs[2];
  std::array<int, 3> n{1, 1, 1};
  for (int a = 0; a < 3; ++a) {
    if (a < global.dims) {
      const AxisSplit s = split_axis(cells[a], procs[a], coords[a]);
      d.block.offset[a] = s.offset;
      d.block.count[a] = s.count;
      n[a] = s.count;
    } else {
      d.block.offset[a] = 0;
      d.block.count[a] = 1;
    }
  }
  d.local.nx = n[0];
  d.local.ny = n[1];
  d.local.nz = global.dims == 3 ? n[2] : 1;
  d.faces = faces;
  for (int a = 0; a < global.dims; ++a) {
    if (procs[a] == 1) continue;  // whole axis local: physical or local periodic fill
    const bool periodic = faces[2 * a].type == BoundaryType::Periodic;
    const bool at_low = coords[a] == 0, at_high = coords[a] == procs[a] - 1;
    if (!at_low || periodic) d.faces[2 * a] = FaceBC{BoundaryType::Exchange, 0.0};
    if (!at_high || periodic) d.faces[2 * a + 1] = FaceBC{BoundaryType::Exchange, 0.0};
  }
  return d;
}

#ifdef HEATSOLVE_HAVE_MPI

namespace {
void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw std::runtime_error(fmt::format("{} failed: {}", what, std::string(msg, len)));
  }
}
}  // namespace

CartesianDecomposition::CartesianDecomposition(MPI_Comm comm, const GridDesc& global,
                                               const BoundaryFaces& faces,
                                               const std::array<int, 3>& requested)
    : parent_(comm) {
  int size = 1, rank = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  std::array<int, 3> factors{1, 1, 1};
  int f[3] = {0, 0, 0};
  check_mpi(MPI_Dims_create(size, global.dims, f), "MPI_Dims_create");
  for (int i = 0; i < global.dims; ++i) factors[i] = f[i];
  procs_ = choose_decomposition(global, requested, size, factors);
  const int nd = global.dims;
  // MPI's Cartesian order is row-major (last dimension fastest); we pass the axes reversed
  // (z, y, x) so that consecutive ranks are neighbours along x, like the memory layout.
  int dims[3], periods[3];
  for (int i = 0; i < nd; ++i) {
    const int a = nd - 1 - i;
    dims[i] = procs_[a];
    periods[i] = faces[2 * a].type == BoundaryType::Periodic ? 1 : 0;
  }
  check_mpi(MPI_Cart_create(comm, nd, dims, periods, /*reorder=*/0, cart_.out()),
            "MPI_Cart_create");
  int cart_rank = 0, c[3] = {0, 0, 0};
  check_mpi(MPI_Comm_rank(cart_.get(), &cart_rank), "MPI_Comm_rank");
  check_mpi(MPI_Cart_coords(cart_.get(), cart_rank, nd, c), "MPI_Cart_coords");
  for (int i = 0; i < nd; ++i) coords_[nd - 1 - i] = c[i];
  domain_ = block_domain(global, faces, procs_, coords_, cart_rank);
  neighbours_ = cartesian_neighbours(cart_.get(), domain_);
}

std::array<int, 6> cartesian_neighbours(MPI_Comm cart, const Domain& domain) {
  std::array<int, 6> out{kNoNeighbour, kNoNeighbour, kNoNeighbour,
                         kNoNeighbour, kNoNeighbour, kNoNeighbour};
  const int nd = domain.global.dims;
  for (int i = 0; i < nd; ++i) {
    const int a = nd - 1 - i;  // MPI's dimension i is axis a (see the constructor)
    int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
    check_mpi(MPI_Cart_shift(cart, i, 1, &lo, &hi), "MPI_Cart_shift");
    if (domain.faces[2 * a].type == BoundaryType::Exchange) out[2 * a] = lo;
    if (domain.faces[2 * a + 1].type == BoundaryType::Exchange) out[2 * a + 1] = hi;
  }
  return out;
}

MpiReducer::MpiReducer(MPI_Comm comm) : comm_(comm) {
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

double MpiReducer::sum(double local) const {
  if (size_ == 1) return local;
  std::vector<double> parts(size_);
  check_mpi(MPI_Allgather(&local, 1, MPI_DOUBLE, parts.data(), 1, MPI_DOUBLE, comm_),
            "MPI_Allgather (reduction)");
  double total = 0;
  for (double p : parts) total += p;  // rank order: the same bits on every rank
  return total;
}

void MpiReducer::sum_each(std::vector<double>& values) const {
  if (size_ == 1 || values.empty()) return;
  const int n = int(values.size());
  std::vector<double> parts(std::size_t(size_) * values.size());
  check_mpi(MPI_Allgather(values.data(), n, MPI_DOUBLE, parts.data(), n, MPI_DOUBLE, comm_),
            "MPI_Allgather (reductions)");
  for (int i = 0; i < n; ++i) {
    double total = 0;
    for (int r = 0; r < size_; ++r) total += parts[std::size_t(r) * n + i];  // as sum()
    values[i] = total;
  }
}

double MpiReducer::max(double local) const {
  if (size_ == 1) return local;
  double out = local;
  check_mpi(MPI_Allreduce(&local, &out, 1, MPI_DOUBLE, MPI_MAX, comm_), "MPI_Allreduce (max)");
  return out;
}

std::function<void(std::vector<double>&)> agree_on_slowest(MPI_Comm comm) {
  return [comm](std::vector<double>& t) {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, t.data(), int(t.size()), MPI_DOUBLE, MPI_MAX, comm),
              "MPI_Allreduce (kernel tuning: the candidates' times)");
  };
}

#endif  // HEATSOLVE_HAVE_MPI

}  // namespace heatsolve
