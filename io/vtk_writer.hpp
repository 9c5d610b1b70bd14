// VTK XML time-series writer (ParaView-ready), built only with HEATSOLVE_HAVE_VTK.
//
// Files (serial run), all under `<directory>`:
//   <name>.pvd                             collection: one <DataSet timestep="t" file="..."/>
//                                          per output step, in step order (a Poisson series:
//                                          timestep = the iteration)
//   <name>_vti/<name>_<%08d step>.vti      vtkImageData, cell data <field> (OutputGrid::field():
//                                          `temperature`, Poisson `solution`) (Float32 or
//                                          Float64 per Precision), appended raw binary,
//                                          ZLib-compressed, UInt64 headers
//   <name>_vti/<name>_cell_fields.vti      the run's constant cell fields (write_cell_fields():
//                                          `conductivity`, `heat_capacity` of a deck with
//                                          materials), Float64, written once; not in the .pvd
//                                          (open it beside the series: the same cells)
// The compressor can be changed with the environment variable HEATSOLVE_VTK_COMPRESSION =
// zlib (default) | lz4 | lzma | none, optionally with a level 1-9 ("zlib:1", "lzma:9"): zlib
// costs time on large grids, lz4 is several times faster, none fastest and largest.
// The image's origin is the lower corner of the first cell and its spacing the cell size, so
// its cells are exactly the cells of the HDF5/XDMF series (3DCoRectMesh / 2DCoRectMesh with
// cell-centred `temperature`). A 2D grid is an image one point thick in z (extent z 0..0).
//
// Parallel run (make_vtk_writer with a communicator of more than one rank): every rank writes
// its block as a piece `<name>_vti/<name>_<%08d step>_<%04d rank>.vti` whose extent is the
// block's extent in global point indices, and rank 0 writes
// `<name>_vti/<name>_<%08d step>.pvti` (one <Piece> per non-empty block), which the .pvd
// then references; the cell fields likewise as `<name>_cell_fields_<%04d rank>.vti` pieces
// and `<name>_cell_fields.pvti`.
//
// Atomicity: every .vti/.pvti is written under `<final>.tmp.<pid>` and renamed once complete;
// the .pvd is rewritten whole (temp + rename) after every step, so an interrupted run always
// leaves a valid series of the steps completed so far. finalize() only marks the writer done
// (the files are already final). Every failure throws std::runtime_error naming the file.
//
// A step written twice (the same step number) replaces the earlier entry.
#pragma once

#include <memory>
#include <string>

#ifdef HEATSOLVE_HAVE_MPI
#include <mpi.h>
#endif

#include "io/field_writer.hpp"

namespace heatsolve {

// Serial writer: write() must receive blocks that cover the whole grid. Creates `directory`
// and `<directory>/<name>_vti` if needed. Defined only when built with VTK
// (HEATSOLVE_HAVE_VTK); callers guard their use with that macro.
std::unique_ptr<FieldWriter> make_vtk_writer(const std::string& directory, const std::string& name,
                                             const OutputGrid& grid, Precision precision);

#ifdef HEATSOLVE_HAVE_MPI
// Parallel writer over `comm` (collective: every rank constructs it, calls write() for every
// output step with its own block, and finalize()). Each rank writes its own piece; rank 0
// writes the .pvti and the .pvd. A 1-rank communicator behaves as the serial writer (plain
// .vti files). The blocks of all ranks must tile the grid.
std::unique_ptr<FieldWriter> make_vtk_writer(const std::string& directory, const std::string& name,
                                             const OutputGrid& grid, Precision precision,
                                             MPI_Comm comm);
#endif

}  // namespace heatsolve
