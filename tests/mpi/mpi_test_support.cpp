#include "tests/mpi/mpi_test_support.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "io/materials.hpp"

namespace heatsolve::mpi_tests {

int g_rank = 0, g_size = 1;
int g_failures = 0, g_checks = 0;
std::string g_workdir;

void log(const std::string& s) {
  if (g_rank == 0) std::printf("%s\n", s.c_str()), std::fflush(stdout);
}

Config base_config(int dims, std::array<int, 3> cells, std::int64_t steps, Precision prec) {
  Config c;
  c.name = "mpi";
  c.problem = ProblemType::Heat;
  c.dimensions = dims;
  c.cells = {cells[0], cells[1], dims == 3 ? cells[2] : 1};
  c.length = {1.0, 0.8, dims == 3 ? 1.2 : 1.0};
  c.origin = {-0.1, 0.2, 0.0};
  c.diffusivity = 0.7;
  // HEATSOLVE_TEST_BACKEND=cuda runs the equivalence runs on the GPU (one per rank, or
  // shared); the kernel is then fixed (HEATSOLVE_TEST_KERNEL, default naive) so that every
  // block size runs the same arithmetic.
  const char* backend = std::getenv("HEATSOLVE_TEST_BACKEND");
  c.backend = backend && std::string(backend) == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  const char* kernel = std::getenv("HEATSOLVE_TEST_KERNEL");
  c.kernel = kernel ? kernel : (c.backend == BackendKind::Cuda ? "naive" : "auto");
  // HEATSOLVE_TEST_HALO=staged|ipc: the GPU halo transport (default auto).
  const char* halo = std::getenv("HEATSOLVE_TEST_HALO");
  if (halo) c.halo = std::string(halo) == "staged" ? HaloMode::Staged : HaloMode::Ipc;
  c.precision = prec;
  c.dt = 0.9 * stable_dt(c.grid(), c.diffusivity);
  c.steps = steps;
  c.end_time = c.dt * double(steps);
  c.initial.type = ShapeType::Gaussian;
  c.initial.value = 0.1;
  c.initial.amplitude = 1.0;
  c.initial.width = 0.15;
  c.initial.center = {0.3, 0.5, 0.6};
  c.formats.clear();
  c.output_every = steps / 3;
  return c;
}

BoundaryFaces faces(std::initializer_list<FaceBC> list) {
  BoundaryFaces f{};
  int i = 0;
  for (const FaceBC& b : list) f[i++] = b;
  for (; i < 6; ++i) f[i] = FaceBC{BoundaryType::Dirichlet, 0.0};
  return f;
}

void add_materials(Config& c) {
  Materials& m = c.material;
  m.physical = true;
  m.conductivity = 2.0;
  m.density = 1.0;
  m.specific_heat = 1.5;
  c.diffusivity = m.conductivity / m.heat_capacity();
  MaterialRegion sphere;
  sphere.region.kind = RegionKind::Sphere;
  sphere.region.center = {0.3, 0.6, 0.6};
  sphere.region.radius = 0.25;
  sphere.conductivity = 40.0;
  sphere.density = 2.0;
  MaterialRegion box;
  box.region.kind = RegionKind::Box;
  box.region.lower = {0.5, 0.2, 0.0};
  box.region.upper = {0.9, 0.5, 1.2};
  box.conductivity = 0.1;
  m.regions = {sphere, box};
}

std::vector<std::array<int, 3>> decompositions(const Config& c, int size) {
  std::vector<std::array<int, 3>> out;
  for (int px = 1; px <= size; ++px)
    for (int py = 1; py <= size; ++py) {
      const int rest = size / (px * py);
      if (size % (px * py) != 0) continue;
      if (c.dimensions == 2 && rest != 1) continue;
      const int pz = c.dimensions == 3 ? rest : 1;
      if (px > c.cells[0] || py > c.cells[1] || (c.dimensions == 3 && pz > c.cells[2])) continue;
      out.push_back({px, py, pz});
    }
  out.push_back({0, 0, 0});
  return out;
}

std::vector<std::array<int, 3>> spread(const std::vector<std::array<int, 3>>& all, std::size_t n) {
  if (all.size() <= n) return all;
  std::vector<std::array<int, 3>> out;
  const std::size_t explicit_ones = all.size() - 1;
  for (std::size_t i = 0; i + 1 < n; ++i) out.push_back(all[i * explicit_ones / (n - 1)]);
  out.push_back(all.back());
  return out;
}

std::vector<double> gather_global(const CaptureWriter::Step& s, const Config& c, MPI_Comm comm) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  int meta[7] = {s.block.offset[0], s.block.offset[1], s.block.offset[2], s.block.count[0],
                 s.block.count[1],  s.block.count[2],  int(s.data.size())};
  std::vector<int> metas(7 * size);
  MPI_Gather(meta, 7, MPI_INT, metas.data(), 7, MPI_INT, 0, comm);
  std::vector<int> counts(size), displs(size);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = metas[7 * r + 6];
    displs[r] = total;
    total += counts[r];
  }
  std::vector<double> all(rank == 0 ? total : 0);
  MPI_Gatherv(s.data.data(), int(s.data.size()), MPI_DOUBLE, all.data(), counts.data(),
              displs.data(), MPI_DOUBLE, 0, comm);
  if (rank != 0) return {};
  const int nx = c.cells[0], ny = c.cells[1];
  const int nz = c.dimensions == 3 ? c.cells[2] : 1;
  std::vector<double> global(std::size_t(nx) * ny * nz, std::nan(""));
  for (int r = 0; r < size; ++r) {
    const int* m = &metas[7 * r];
    std::size_t n = displs[r];
    for (int k = 0; k < m[5]; ++k)
      for (int j = 0; j < m[4]; ++j)
        for (int i = 0; i < m[3]; ++i)
          global[(std::size_t(m[2] + k) * ny + (m[1] + j)) * nx + (m[0] + i)] = all[n++];
  }
  return global;
}

bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b, std::string* where) {
  if (a.size() != b.size()) {
    *where = fmt::format("size {} vs {}", a.size(), b.size());
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) {
      *where = fmt::format("first difference at {}: {:.17g} vs {:.17g}", i, a[i], b[i]);
      return false;
    }
  return true;
}

RunResult run_any(const Config& cfg, RunContext& ctx, std::vector<FieldWriter*> writers) {
  return run_simulation(cfg, ctx, std::move(writers));
}

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double d = 0, m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::abs(a[i] - b[i]));
    m = std::max(m, std::abs(b[i]));
  }
  return m > 0 ? d / m : d;
}

}  // namespace heatsolve::mpi_tests
