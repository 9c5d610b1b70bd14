// The coarsest level of a multigrid hierarchy solved exactly, without the host: x += M r,
// with M = A^-1, or for a singular A (constants in its null space) M = P (A + c 1 1^T)^-1 P,
// P the projection onto zero mean: M r then solves A e = r - mean(r) with mean(e) = 0, what
// conjugate gradients with mean removal converge to. M is built once, in double on the host,
// from A's columns probed through the operator itself (any faces, coefficients and shift),
// and applied by one Backend::dense_apply_add. A cycle's coarsest solve is then a residual
// and one small launch with nothing read back, where conjugate gradients took two dot
// products read by the host per iteration (HYPRE and AMReX solve their bottom levels
// directly for the same reason).
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <vector>

#include "solvers/operator/helmholtz.hpp"

namespace heatsolve {

template <typename T>
class DirectCoarseSolver {
 public:
  // Levels of at most this many cells are solved directly: M holds n^2 values (0.5 MiB in
  // double) and its set-up costs O(n^3) (a few milliseconds at the bound). Typical coarsest
  // levels have 8 (2x2x2) to 125 (5x5x5) cells.
  static constexpr std::size_t kMaxCells = 256;
  // Whether `op`'s level is solved directly: small, one rank's whole grid, no exchange.
  static bool suits(const HelmholtzOperator<T>& op);

  // `singular`: A's null space holds the constants (Multigrid::singular()).
  DirectCoarseSolver(const HelmholtzOperator<T>& op, bool singular);

  // x += M r over the interior (ghosts untouched), queued on the backend.
  void solve_add(const T* r, T* x) const;

 private:
  Backend<T>& backend_;
  GridDesc grid_;
  std::unique_ptr<Array<T>> m_;  // column-major n x n
};

// A coarsest operator that is singular beyond the constants to rounding (e.g. a shift far
// below the Laplacian's scale): no inverse to store. Multigrid falls back to CG then.
struct SingularCoarseLevel : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace coarse_direct {
// A's columns (column-major n x n, interior cells x fastest), probed by applying the operator
// (zero face values) to sums of unit vectors whose rows do not overlap.
template <typename T>
std::vector<double> probe_matrix(const HelmholtzOperator<T>& op);
// M as above from A (column-major, n x n); SingularCoarseLevel where A is singular beyond
// the constants.
std::vector<double> solution_matrix(std::vector<double> a, std::size_t n, bool singular);
}  // namespace coarse_direct

}  // namespace heatsolve
