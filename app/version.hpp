// Build provenance: which heatsolve this is (version, git commit, compilers) and which
// libraries it runs with (CUDA runtime and driver, MPI, HDF5). `heatsolve --version` prints
// it; summary.json records version and commit (app/summary.hpp).
#pragma once

#include <string>

namespace heatsolve {

struct BuildInfo {
  const char* version;        // the project version, e.g. "0.2.0"
  const char* commit;         // 12 hex digits of the git commit, "-dirty" when tracked files
                              // differed from it at build time; "unknown" outside git
  const char* compiler;       // C++ compiler id and version, e.g. "GNU 12.2.0"
  const char* cuda_compiler;  // CUDA compiler and architectures; "" in a build without CUDA
  const char* build_type;     // CMAKE_BUILD_TYPE
};

// Generated at build time (cmake/version_info.cmake), refreshed whenever HEAD moves.
const BuildInfo& build_info();

// The MPI library's own description (MPI_Get_library_version, first line); "" in a build
// without MPI.
std::string mpi_library_version();
// "1.10.8 (parallel)" for the HDF5 library linked; "" in a build without HDF5.
std::string hdf5_library_version();

// The `--version` text: version, commit, compiler, CUDA (compiler, runtime, driver), MPI and
// HDF5, one per line.
std::string version_report();

}  // namespace heatsolve
