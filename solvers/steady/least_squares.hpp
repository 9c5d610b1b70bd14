// The small dense solve inside Anderson acceleration, on the host.
#pragma once

#include <vector>

namespace heatsolve {

// Given the row-major (n x n) Gram matrix of the columns [dF_0 .. dF_{n-2}, f], returns
// gamma (size mk) minimising ||f - sum_j gamma_j dF_j|| over the first mk difference
// columns, from Tikhonov-regularised normal equations (relative shift 1e-12 of the largest
// diagonal entry) solved by Cholesky. Columns whose pivots vanish get gamma_j = 0.
std::vector<double> solve_anderson_least_squares(const std::vector<double>& gram, int n, int mk);

}  // namespace heatsolve
