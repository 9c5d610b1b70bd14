// Internal to io/hdf5_writer.cpp: the XDMF 3 text (<name>.xdmf) that describes an HDF5 series
// for ParaView/VisIt (the format: io/hdf5_writer.hpp).
#pragma once

#ifdef HEATSOLVE_HAVE_HDF5

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/field_writer.hpp"

namespace heatsolve {

// The .xdmf text of the series `name`.h5 (stored in `value_precision`): one grid per entry of
// `steps` (step -> the Time it lists), each with the step's field and the `cell_fields`.
std::string xdmf_series_text(const std::string& name, const OutputGrid& grid,
                             Precision value_precision, const std::map<std::int64_t, double>& steps,
                             const std::vector<std::string>& cell_fields);

}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_HDF5
