// The XDMF 3 text that describes an HDF5 series (io/xdmf_text.hpp); the HDF5 writer
// (io/hdf5_writer.cpp) writes it next to the series.
#include "io/xdmf_text.hpp"

#ifdef HEATSOLVE_HAVE_HDF5

#include <sstream>

#include "io/hdf5_series.hpp"
#include "io/xml_text.hpp"

namespace heatsolve {

using h5series::kCellFieldsGroup;
using h5series::step_group;

std::string xdmf_series_text(const std::string& name, const OutputGrid& grid,
                             Precision value_precision, const std::map<std::int64_t, double>& steps,
                             const std::vector<std::string>& cell_fields) {
  // 2D grids are described as 3D meshes one point thick in z: ParaView (5.11) maps an XDMF
  // 2DCoRectMesh onto the y-z plane, this puts them in the x-y plane where they belong. The
  // attribute keeps the dataset's 2-D shape (ny nx); the cell count matches either way.
  const int n = grid.dims == 3 ? 3 : 2;
  std::string points, cells, origin, spacing;
  if (n == 2) {
    points = "1 ";
    origin = format_double(grid.origin[2]) + " ";
    spacing = format_double(grid.spacing[2]) + " ";
  }
  for (int a = n - 1; a >= 0; --a) {  // XDMF lists axes slowest first: z y x
    const char* sep = a == 0 ? "" : " ";
    points += std::to_string(grid.cells[a] + 1) + sep;
    cells += std::to_string(grid.cells[a]) + sep;
    origin += format_double(grid.origin[a]) + sep;
    spacing += format_double(grid.spacing[a]) + sep;
  }
  const std::string h5_name = xml_escape(name + ".h5");
  const char* precision = value_precision == Precision::Float ? "4" : "8";
  std::ostringstream x;
  x << "<?xml version=\"1.0\" ?>\n"
    << "<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
    << "<Xdmf Version=\"3.0\" xmlns:xi=\"http://www.w3.org/2001/XInclude\">\n"
    << "  <Domain>\n"
    << "    <Grid Name=\"" << xml_escape(name)
    << "\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
  if (grid.steady())
    x << "      <!-- A steady solve: each Time Value is the iteration number, not a time -->\n";
  for (const auto& [step, time] : steps) {
    const std::string group = step_group(step);
    x << "      <Grid Name=\"step" << group.substr(group.rfind('/') + 1)
      << "\" GridType=\"Uniform\">\n"
      << "        <Time Value=\"" << format_double(time) << "\"/>\n"
      << "        <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"" << points << "\"/>\n"
      << "        <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
      << "          <DataItem Name=\"Origin\" Dimensions=\"3\" NumberType=\"Float\" "
         "Precision=\"8\" Format=\"XML\">"
      << origin << "</DataItem>\n"
      << "          <DataItem Name=\"Spacing\" Dimensions=\"3"
      << "\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">" << spacing << "</DataItem>\n"
      << "        </Geometry>\n"
      << "        <Attribute Name=\"" << grid.field()
      << "\" AttributeType=\"Scalar\" Center=\"Cell\">\n"
      << "          <DataItem Dimensions=\"" << cells << "\" NumberType=\"Float\" Precision=\""
      << precision << "\" Format=\"HDF\">" << h5_name << ":" << group << "/" << grid.field()
      << "</DataItem>\n"
      << "        </Attribute>\n";
    for (const std::string& f : cell_fields) {  // the one dataset, in every step
      x << "        <Attribute Name=\"" << xml_escape(f)
        << "\" AttributeType=\"Scalar\" Center=\"Cell\">\n"
        << "          <DataItem Dimensions=\"" << cells
        << "\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">" << h5_name << ":"
        << kCellFieldsGroup << "/" << xml_escape(f) << "</DataItem>\n"
        << "        </Attribute>\n";
    }
    x << "      </Grid>\n";
  }
  x << "    </Grid>\n"
    << "  </Domain>\n"
    << "</Xdmf>\n";
  return x.str();
}

}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_HDF5
