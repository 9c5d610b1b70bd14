#include "io/writer_factory.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "io/hdf5_writer.hpp"
#include "io/vtk_writer.hpp"

namespace heatsolve {

namespace {

std::unique_ptr<FieldWriter> make_hdf5(const Config& cfg, const OutputGrid& grid,
                                       const WriterRanks& ranks) {
#ifndef HEATSOLVE_HAVE_HDF5
  (void)cfg, (void)grid, (void)ranks;
  throw std::runtime_error("output format 'hdf5' requested but heatsolve was built without HDF5");
#else
#ifdef HEATSOLVE_HAVE_MPI
  if (ranks.comm != MPI_COMM_NULL) {
#ifndef HEATSOLVE_HAVE_PARALLEL_HDF5
    int rank = 0, size = 1;
    MPI_Comm_rank(ranks.comm, &rank);
    MPI_Comm_size(ranks.comm, &size);
    if (size > 1 && rank == 0)
      fmt::print(stderr,
                 "warning: HDF5 without MPI-IO (serial HDF5 build): every output step is "
                 "gathered to rank 0, which writes it alone\n");
#endif
    return make_hdf5_writer(cfg.output_directory, cfg.name, grid, cfg.precision, ranks.comm,
                            cfg.compression);
  }
#endif
  (void)ranks;  // one process: the serial writer
  return make_hdf5_writer(cfg.output_directory, cfg.name, grid, cfg.precision, cfg.compression);
#endif
}

std::unique_ptr<FieldWriter> make_vtk(const Config& cfg, const OutputGrid& grid,
                                      const WriterRanks& ranks) {
#ifndef HEATSOLVE_HAVE_VTK
  (void)cfg, (void)grid, (void)ranks;
  throw std::runtime_error(
      "output format 'vtk' requested but heatsolve was built without VTK (configure with "
      "VTK_DIR pointing at a VTK 9 or ParaView's VTK, e.g. "
      "/usr/lib/x86_64-linux-gnu/cmake/paraview-5.11/vtk)");
#else
#ifdef HEATSOLVE_HAVE_MPI
  if (ranks.comm != MPI_COMM_NULL)
    return make_vtk_writer(cfg.output_directory, cfg.name, grid, cfg.precision, ranks.comm);
#endif
  (void)ranks;
  return make_vtk_writer(cfg.output_directory, cfg.name, grid, cfg.precision);
#endif
}

}  // namespace

std::vector<std::unique_ptr<FieldWriter>> make_writers(const Config& cfg, const OutputGrid& grid,
                                                       const WriterRanks& ranks) {
  std::vector<std::unique_ptr<FieldWriter>> writers;
  for (const std::string& format : cfg.formats) {
    if (format == "hdf5")
      writers.push_back(make_hdf5(cfg, grid, ranks));
    else if (format == "vtk")
      writers.push_back(make_vtk(cfg, grid, ranks));
    else
      throw std::runtime_error(
          fmt::format("output format '{}' is not available in this build", format));
  }
  return writers;
}

}  // namespace heatsolve
