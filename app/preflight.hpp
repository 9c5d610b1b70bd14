// Memory preflight: before anything is allocated, computed or written, estimate what a run
// needs per rank (host and GPU memory) and refuse a run that cannot fit, with both numbers
// in the message (docs/robustness.md). HEATSOLVE_SKIP_MEMORY_CHECK=1 skips the check.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "io/config.hpp"

namespace heatsolve {

// Bytes per rank. Doubles, not integers: absurd decks exceed 2^64 bytes.
struct MemoryEstimate {
  double host_bytes = 0;
  double device_bytes = 0;                 // 0 when the fields live in host memory (CPU backend)
  std::string host_detail, device_detail;  // what was counted, for the message
};

// Whether the run will keep its fields on a GPU (backend cuda, or auto with a device present).
bool runs_on_device(const Config& cfg);

// Per rank, for `ranks` ranks: the padded fields u, v (+ f with a source) and the solver's
// own (the registry's footprint: Anderson history and Gram matrix, multigrid hierarchy, CG
// vectors, deep halos...), host staging for output (a padded copy and the interior), and the
// rank-0 gather buffer when the HDF5 writer gathers.
MemoryEstimate estimate_memory(const Config& cfg, int ranks);
MemoryEstimate estimate_memory(const Config& cfg, int ranks, bool on_device);

// MemAvailable from /proc/meminfo; nullopt when it cannot be read.
std::optional<std::uint64_t> host_memory_available();
// Free memory of CUDA device `device` (-1: the current one; otherwise it becomes the current
// device); nullopt without CUDA or a device.
std::optional<std::uint64_t> device_memory_available(int device);

// "" when the run fits (or nothing is known about the available memory, or the check is
// disabled), else a message giving the need and what is available. Collective under MPI:
// every rank must call it and every rank gets the same answer.
std::string memory_preflight(const Config& cfg, int ranks);

// "1.50 GiB", "8.00 TiB", ...
std::string format_bytes(double bytes);

}  // namespace heatsolve
