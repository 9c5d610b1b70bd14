#include "app/version.hpp"

#include <fmt/format.h>

#include "kernels/backend.hpp"

#ifdef HEATSOLVE_HAVE_MPI
#include <mpi.h>
#endif
#ifdef HEATSOLVE_HAVE_HDF5
#include <hdf5.h>
#endif

namespace heatsolve {

std::string mpi_library_version() {
#ifdef HEATSOLVE_HAVE_MPI
  // Callable before MPI_Init and after MPI_Finalize.
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return "unknown";
  std::string s(text, static_cast<std::size_t>(len > 0 ? len : 0));
  if (const auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
#else
  return "";
#endif
}

std::string hdf5_library_version() {
#ifdef HEATSOLVE_HAVE_HDF5
  unsigned major = 0, minor = 0, release = 0;
  if (H5get_libversion(&major, &minor, &release) < 0) return "unknown";
#ifdef H5_HAVE_PARALLEL
  const char* kind = "parallel";
#else
  const char* kind = "serial";
#endif
  return fmt::format("{}.{}.{} ({})", major, minor, release, kind);
#else
  return "";
#endif
}

std::string version_report() {
  const BuildInfo& b = build_info();
  std::string out = fmt::format("heatsolve {}\n", b.version);
  out += fmt::format("commit:   {}\n", b.commit);
  out += fmt::format("compiler: {} (C++17, {})\n", b.compiler, b.build_type);
  if (*b.cuda_compiler)
    out += fmt::format("CUDA:     {}; {}\n", b.cuda_compiler, cuda_version_info());
  else
    out += "CUDA:     not built\n";
  const std::string mpi = mpi_library_version();
  out += fmt::format("MPI:      {}\n", mpi.empty() ? "not built" : mpi);
  const std::string hdf5 = hdf5_library_version();
  out += fmt::format("HDF5:     {}", hdf5.empty() ? "not built" : hdf5);
  return out;
}

}  // namespace heatsolve
