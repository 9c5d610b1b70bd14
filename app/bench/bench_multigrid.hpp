// `heatsolve bench --multigrid`: its Poisson deck, and the scaling bench run under MPI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/config.hpp"

namespace heatsolve {

// The bench's Poisson problem on n^3 cells of the unit cube: a Gaussian source, or
// (manufactured) -lap u = 3 pi^2 prod sin(pi x_d), whose solution prod sin(pi x_d) gives the
// discretisation error; Dirichlet walls. `cycle`: v, f or fmg; `precision`: float, double or
// mixed; `overrides`: `--set` assignments applied after (the scaling bench's weak grid).
Config bench_deck(int n, const std::string& precision, const std::string& backend,
                  const std::string& method, double tolerance, std::int64_t max_iterations,
                  const std::string& cycle = "v", bool manufactured = false, bool fused = true,
                  bool replay = true, const std::vector<std::string>& overrides = {});

// `mpirun -np P heatsolve bench --multigrid` (P > 1): one device (rank 0 alone, the other
// ranks waiting) against the P ranks' devices in one run, double precision, 1e-10: multigrid,
// mg-cg and full multigrid on the bench's Poisson problem and 10 Crank-Nicolson steps of heat;
// strong (n^3 in all) and weak (n^3 per rank: n x n x Pn cells on a 1 x 1 x P box, split in
// z); each solve timed after a warm one (kernel loading, tuning), set-up included, the
// fastest of `repeats`. `device`: this rank's GPU (-1: the current one). Rank 0 prints a
// table (or JSON); the return value is the exit code.
int run_multigrid_scaling_bench(int n, const std::string& backend, int device, int repeats,
                                bool json);

}  // namespace heatsolve
