#include "app/info.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <CLI/CLI.hpp>

#include "app/exit_codes.hpp"
#include "app/version.hpp"
#include "io/catalyst_adaptor.hpp"
#include "io/hdf5_writer.hpp"
#include "kernels/backend.hpp"

namespace heatsolve {

namespace {
const char* on_off(bool b) {
  return b ? "yes" : "no";
}
}  // namespace

int info_command() {
#ifdef HEATSOLVE_HAVE_CUDA
  constexpr bool cuda = true;
#else
  constexpr bool cuda = false;
#endif
#ifdef HEATSOLVE_HAVE_MPI
  constexpr bool mpi = true;
#else
  constexpr bool mpi = false;
#endif
#ifdef HEATSOLVE_HAVE_HDF5
  constexpr bool hdf5 = true;
#else
  constexpr bool hdf5 = false;
#endif
#ifdef HEATSOLVE_HAVE_PARALLEL_HDF5
  constexpr bool phdf5 = true;
#else
  constexpr bool phdf5 = false;
#endif
#ifdef HEATSOLVE_HAVE_VTK
  constexpr bool vtk = true;
#else
  constexpr bool vtk = false;
#endif
  const BuildInfo& b = build_info();
  fmt::print("heatsolve {} (commit {})\n", b.version, b.commit);
  fmt::print("  CUDA backend:     {}\n", on_off(cuda));
  fmt::print("  MPI:              {}\n", on_off(mpi));
  fmt::print("  HDF5 output:      {} (parallel: {})\n", on_off(hdf5), on_off(phdf5));
  fmt::print("  HDF5 compression: deflate {}, zfp {}\n",
             on_off(hdf5 && hdf5_compression_available(CompressionType::Deflate)),
             on_off(hdf5_compression_available(CompressionType::Zfp)));
  fmt::print("  VTK output:       {}\n", on_off(vtk));
  fmt::print("  Catalyst in situ: {}\n", on_off(catalyst_available()));
  fmt::print("  OpenMP threads:   {}\n", omp_get_max_threads());
  if (cuda_device_available()) {
    auto backend = make_backend<float>(BackendKind::Cuda, {});
    fmt::print("  GPU:              {}\n", backend->description());
  } else {
    fmt::print("  GPU:              none (runs use the CPU backend)\n");
  }
  return exit_code::kSuccess;
}

}  // namespace heatsolve
