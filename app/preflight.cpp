#include "app/preflight.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "app/mpi_session.hpp"
#include "kernels/backend.hpp"
#include "kernels/device.hpp"
#include "solvers/parallel/decomposition.hpp"
#include "solvers/parallel/margins.hpp"
#include "solvers/registry.hpp"
#ifdef HEATSOLVE_HAVE_MPI
#include <mpi.h>
#endif

namespace heatsolve {

namespace {

// Ranks per axis: the deck's execution.decomposition when it is complete and matches `ranks`,
// else a balanced split (each prime factor goes to the axis with the most cells per rank),
// close to what MPI_Dims_create chooses. Only the per-rank block size matters here.
std::array<int, 3> ranks_per_axis(const Config& cfg, int ranks) {
  const int dims = cfg.dimensions;
  std::array<int, 3> p{1, 1, 1};
  const auto& d = cfg.decomposition;
  if (d[0] > 0 && d[1] > 0 && (dims == 2 || d[2] > 0) &&
      static_cast<long long>(d[0]) * d[1] * (dims == 3 ? d[2] : 1) == ranks)
    return {d[0], d[1], dims == 3 ? d[2] : 1};
  std::vector<int> factors;
  int r = std::max(1, ranks);
  for (int f = 2; f * f <= r; ++f)
    while (r % f == 0) factors.push_back(f), r /= f;
  if (r > 1) factors.push_back(r);
  std::sort(factors.rbegin(), factors.rend());
  for (int f : factors) {
    int best = 0;
    for (int a = 1; a < dims; ++a)
      if (double(cfg.cells[a]) / p[a] > double(cfg.cells[best]) / p[best]) best = a;
    p[best] *= f;
  }
  return p;
}

bool hdf5_gathers(const Config& cfg, int ranks) {
  if (ranks <= 1 || std::find(cfg.formats.begin(), cfg.formats.end(), "hdf5") == cfg.formats.end())
    return false;
#ifdef HEATSOLVE_HAVE_PARALLEL_HDF5
  const char* gather = std::getenv("HEATSOLVE_HDF5_GATHER");
  return gather != nullptr && *gather != '\0' && std::string(gather) != "0";
#else
  return true;
#endif
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

}  // namespace

std::string format_bytes(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) bytes /= 1024, ++u;
  if (u == 0) return fmt::format("{:.0f} B", bytes);
  return fmt::format("{:.{}f} {}", bytes, bytes < 10 ? 2 : bytes < 100 ? 1 : 0, units[u]);
}

bool runs_on_device(const Config& cfg) {
  if (cfg.backend == BackendKind::Cpu) return false;
  if (cfg.backend == BackendKind::Cuda) return true;
  return cuda_device_available();
}

MemoryEstimate estimate_memory(const Config& cfg, int ranks) {
  return estimate_memory(cfg, ranks, runs_on_device(cfg));
}

MemoryEstimate estimate_memory(const Config& cfg, int ranks, bool on_device) {
  const std::array<int, 3> p = ranks_per_axis(cfg, ranks);
  double padded = 1, interior = 1;  // per rank
  for (int d = 0; d < cfg.dimensions; ++d) {
    const double n = std::ceil(double(cfg.cells[d]) / p[d]);
    padded *= n + 2;
    interior *= n;
  }
  const double value = cfg.precision == Precision::Float ? 4.0 : 8.0;
  const double field = padded * value;

  // The run's fields and the solver's own (solvers/registry.hpp).
  GridDesc local = cfg.grid();
  local.nx = int(std::ceil(double(cfg.cells[0]) / p[0]));
  local.ny = int(std::ceil(double(cfg.cells[1]) / p[1]));
  if (cfg.dimensions == 3) local.nz = int(std::ceil(double(cfg.cells[2]) / p[2]));
  // Split along the stream axis alone, every field carries the deep-smoothing margins
  // (solvers/parallel/margins.hpp): those of a rank with neighbours on both sides where there
  // is one, the most a rank holds.
  std::array<int, 3> coords{0, 0, 0};
  const int stream = cfg.dimensions == 3 ? 2 : 1;
  coords[stream] = std::min(1, p[stream] - 1);
  const Margins margins = ranks > 1
                              ? stream_margins(block_domain(cfg.grid(), cfg.boundary, p, coords, 0),
                                               cfg.multigrid.margin_depth())
                              : Margins{};
  const double stored = (padded + double(margins.before + margins.after)) * value;
  const Footprint fp = run_footprint(cfg, local, ranks > 1);
  const double fields = fp.fields;
  const std::string& what = fp.what;
  const double gram = fp.host_bytes;
  const std::string field_text =
      fmt::format("{:.4g} fields of {} ({})", fields, format_bytes(stored), what);
  // Host staging: the initial/source fill and output copy (padded) plus the interior copy.
  const double staging = field + interior * value;
  const double gather = hdf5_gathers(cfg, ranks)
                            ? double(cfg.grid().interior_size()) * value  // rank 0 only
                            : 0.0;

  MemoryEstimate e;
  std::string host = fmt::format("output staging {}", format_bytes(staging));
  if (gram > 0) host += fmt::format(" + solver {}", format_bytes(gram));
  if (gather > 0) host += fmt::format(" + HDF5 gather buffer {} on rank 0", format_bytes(gather));
  if (on_device) {
    e.device_bytes = fields * stored + fp.device_bytes;
    e.device_detail = field_text;
    if (fp.device_bytes > 0)
      e.device_detail += fmt::format(" + {} ({})", format_bytes(fp.device_bytes), fp.device_what);
    e.host_bytes = staging + gram + gather;
    e.host_detail = host;
  } else {
    e.host_bytes = fields * stored + staging + gram + gather;
    e.host_detail = field_text + " + " + host;
  }
  return e;
}

std::optional<std::uint64_t> host_memory_available() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key, unit;
    std::uint64_t kib = 0;
    if (fields >> key >> kib >> unit && key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> device_memory_available(int device) {
  return device::free_memory(device);
}

std::string memory_preflight(const Config& cfg, int ranks) {
  if (env_flag("HEATSOLVE_SKIP_MEMORY_CHECK")) return "";
  const bool on_device = runs_on_device(cfg);
  const MemoryEstimate need = estimate_memory(cfg, ranks, on_device);

  // What one rank may use: the node's MemAvailable shared by the node's ranks; the device's
  // free memory shared by the ranks that use that device. Unknown = unlimited.
  constexpr double kUnknown = std::numeric_limits<double>::infinity();
  int local_ranks = 1;
  int device = -1;
#ifdef HEATSOLVE_HAVE_MPI
  const bool collective = mpi_active() && world_size() > 1;
  if (collective) {
    MPI_Comm node = MPI_COMM_NULL;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank(), MPI_INFO_NULL,
                            &node) == MPI_SUCCESS &&
        node != MPI_COMM_NULL) {
      MPI_Comm_size(node, &local_ranks);
      MPI_Comm_free(&node);
    }
  }
#endif
  int sharing_device = local_ranks;
  if (on_device && ranks > 1) {
    const int count = device::count();
    device = gpu_for_this_rank(count);
    if (count > 0) sharing_device = (local_ranks + count - 1) / count;
  }
  const auto host = host_memory_available();
  const auto dev = on_device ? device_memory_available(device) : std::nullopt;
  double avail[2] = {host ? double(*host) / local_ranks : kUnknown,
                     dev ? double(*dev) / std::max(1, sharing_device) : kUnknown};
#ifdef HEATSOLVE_HAVE_MPI
  if (collective) MPI_Allreduce(MPI_IN_PLACE, avail, 2, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
#endif

  const std::string per_rank = ranks > 1 ? " per rank" : "";
  const std::string hint =
      "; use more ranks, a smaller grid or precision: float, or set "
      "HEATSOLVE_SKIP_MEMORY_CHECK=1 to try anyway";
  if (need.host_bytes > avail[0])
    return fmt::format(
        "not enough memory: this run needs about {} of host memory{} ({}), but only {} is "
        "available{} (MemAvailable in /proc/meminfo{}){}",
        format_bytes(need.host_bytes), per_rank, need.host_detail, format_bytes(avail[0]), per_rank,
        local_ranks > 1 || ranks > 1 ? ", shared by the ranks of a node" : "", hint);
  if (need.device_bytes > avail[1])
    return fmt::format(
        "not enough GPU memory: this run needs about {} of device memory{} ({}), but only {} "
        "is free{} (cudaMemGetInfo){}",
        format_bytes(need.device_bytes), per_rank, need.device_detail, format_bytes(avail[1]),
        per_rank, hint);
  return "";
}

}  // namespace heatsolve
