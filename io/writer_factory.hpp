// The field writers of a run in one place: one per output.formats entry, in that order (HDF5 +
// XDMF, VTK XML), serial or collective over a communicator, and what a build without one of
// them says. Callers need no #if for the formats or for MPI.
#pragma once

#include <memory>
#include <vector>

#ifdef HEATSOLVE_HAVE_MPI
#include <mpi.h>
#endif

#include "io/config.hpp"
#include "io/field_writer.hpp"

namespace heatsolve {

// Who writes one series: this process alone (the default: the serial writers), or every rank
// of `comm` together (the collective writers: each rank writes its own block).
struct WriterRanks {
#ifdef HEATSOLVE_HAVE_MPI
  MPI_Comm comm = MPI_COMM_NULL;  // MPI_COMM_NULL: this process alone
#endif
};

// The writers cfg.formats asks for, on `grid` (output_grid(cfg)), writing into
// cfg.output_directory. Collective when `ranks` names a communicator: every rank of it calls
// this. Throws std::runtime_error for a format this build lacks.
std::vector<std::unique_ptr<FieldWriter>> make_writers(const Config& cfg, const OutputGrid& grid,
                                                       const WriterRanks& ranks = {});

}  // namespace heatsolve
