// Small text helpers shared by the XML writers (XDMF, VTK .pvd/.pvti).
#pragma once

#include <string>

namespace heatsolve {

// Shortest of %.15g / %.17g that reads back as the same double.
std::string format_double(double v);
// Escapes the five XML special characters.
std::string xml_escape(const std::string& s);

}  // namespace heatsolve
