// Cartesian domain decomposition over MPI: which block of the global grid each rank owns,
// who its neighbours are, and how its faces are closed (physical condition on the global
// boundary, Exchange where a peer owns the adjacent cells, periodic wrap included).
//
// Split rule per axis: n cells over p ranks, the first n % p ranks (by Cartesian coordinate)
// get n / p + 1 cells, the others n / p. A periodic axis with p == 1 keeps the local
// periodic ghost fill; with p > 1 both its ends become Exchange faces.
#pragma once

#include <array>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/mpi_comm.hpp"
#include "solvers/parallel/domain.hpp"

#ifdef HEATSOLVE_HAVE_MPI
#include <mpi.h>
#endif

namespace heatsolve {

// A decomposition that cannot be used with this grid / rank count (deck-level problem:
// identical on every rank, reported once with exit code 2).
struct DecompositionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Cells [offset, offset + count) of axis coordinate `coord` when n cells go to p ranks.
struct AxisSplit {
  int offset = 0, count = 0;
};
AxisSplit split_axis(int n, int p, int coord);

// Checks `procs` (ranks per axis; procs[2] == 1 in 2D) against the grid and the rank count;
// throws DecompositionError naming the problem.
void check_decomposition(const GridDesc& global, const std::array<int, 3>& procs, int size);

// Balanced factorisation of `size` into `dims` factors, non-increasing (the rule of
// MPI_Dims_create, computed without MPI).
std::array<int, 3> balanced_factors(int size, int dims);

// The ranks-per-axis grid for `size` ranks: `requested` when it is non-zero (validated),
// else automatic: the balanced `factors` (MPI_Dims_create's; balanced_factors() when they
// are not given) with the largest factor on the axis with the most cells (ties: slowest
// axis). Grids too thin for that fall back to a per-prime-factor split. Pure: no MPI.
std::array<int, 3> choose_decomposition(const GridDesc& global, const std::array<int, 3>& requested,
                                        int size, const std::array<int, 3>& factors = {0, 0, 0});

// The Domain of the rank at Cartesian coordinates `coords` in a `procs` grid (pure, no MPI).
// `faces` are the global physical conditions.
Domain block_domain(const GridDesc& global, const BoundaryFaces& faces,
                    const std::array<int, 3>& procs, const std::array<int, 3>& coords, int rank);

// "2x2x1" (3D) or "2x2" (2D).
std::string decomposition_string(const std::array<int, 3>& procs, int dims);

#ifdef HEATSOLVE_HAVE_MPI

inline constexpr int kNoNeighbour = MPI_PROC_NULL;

// The MPI side: owns the Cartesian communicator (MPI_Cart_create with the periodic axes;
// reorder off so that Cartesian ranks equal `comm` ranks). Collective over `comm`.
class CartesianDecomposition {
 public:
  CartesianDecomposition(MPI_Comm comm, const GridDesc& global, const BoundaryFaces& faces,
                         const std::array<int, 3>& requested);
  CartesianDecomposition(const CartesianDecomposition&) = delete;
  CartesianDecomposition& operator=(const CartesianDecomposition&) = delete;

  const Domain& domain() const { return domain_; }
  // The Cartesian communicator (halo exchange, reductions).
  MPI_Comm comm() const { return cart_.get(); }
  // The communicator the decomposition was built from: same ranks in the same order, no
  // topology. Give this one to MPI-IO (the HDF5/VTK writers): Open MPI 4.1's OMPIO groups
  // aggregators by Cartesian coordinates on topology communicators and then intermittently
  // corrupts collective HDF5 writes (open-mpi/ompi#12718; seen here on ext4 with 4 ranks).
  MPI_Comm io_comm() const { return parent_; }
  const std::array<int, 3>& procs() const { return procs_; }
  const std::array<int, 3>& coords() const { return coords_; }
  // Rank (in comm()) owning the cells beyond `face`, or kNoNeighbour. Set exactly for the
  // faces that domain().faces marks Exchange.
  int neighbour(int face) const { return neighbours_[face]; }
  std::string describe() const { return decomposition_string(procs_, domain_.global.dims); }

 private:
  MPI_Comm parent_ = MPI_COMM_NULL;
  OwnedComm cart_;
  Domain domain_;
  std::array<int, 3> procs_{1, 1, 1}, coords_{0, 0, 0};
  std::array<int, 6> neighbours_{kNoNeighbour, kNoNeighbour, kNoNeighbour,
                                 kNoNeighbour, kNoNeighbour, kNoNeighbour};
};

// The neighbour ranks of `domain`'s block on a communicator made by CartesianDecomposition
// (its axis order): kNoNeighbour except for the faces that domain.faces marks Exchange.
std::array<int, 6> cartesian_neighbours(MPI_Comm cart, const Domain& domain);

// Combines partial reductions over `comm`. Sums are deterministic for a fixed rank count:
// the partials are gathered (MPI_Allgather) and added in rank order on every rank, so every
// rank gets the same bits whatever the MPI library's reduction algorithm.
class MpiReducer final : public Reducer {
 public:
  explicit MpiReducer(MPI_Comm comm);
  double sum(double local) const override;
  double max(double local) const override;
  void sum_each(std::vector<double>& values) const override;

 private:
  MPI_Comm comm_;
  int size_ = 1;
};

// BackendOptions::agree_timings for the ranks of `comm` (collective): each candidate's time
// becomes its maximum over them, so that every rank picks the variant fastest on the slowest.
std::function<void(std::vector<double>&)> agree_on_slowest(MPI_Comm comm);

#endif  // HEATSOLVE_HAVE_MPI

}  // namespace heatsolve
