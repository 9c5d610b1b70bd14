// What a solver keeps in memory beyond the run's fields (u, v and the source), for the memory
// preflight (app/preflight.cpp asks the registry, solvers/registry.hpp).
#pragma once

#include <string>

namespace heatsolve {

struct Footprint {
  double fields = 0;      // padded fields of this rank's block, in the run's precision
  std::string what;       // what they are ("Anderson history 12, ...")
  double host_bytes = 0;  // host memory beyond the output staging (a Gram matrix)
  // Device memory beyond the fields that only a device backend allocates (full multigrid's
  // interpolation scratch), and what it is.
  double device_bytes = 0;
  std::string device_what;
  void add(double n, const std::string& name) {
    fields += n;
    if (!what.empty()) what += ", ";
    what += name;
  }
};

}  // namespace heatsolve
