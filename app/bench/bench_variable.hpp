// `heatsolve bench`: the variable-coefficient sweep (materials by region,
// kernels/stencil/variable.hpp) on any backend, against its own roofline: the bytes it must
// move per point (every coefficient array read once, the result written once) over the copy
// bandwidth the caller measured.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/execution.hpp"

namespace heatsolve {

struct VariableBenchRow {
  std::string form;          // "explicit step", "jacobi sweep"
  int values_per_point = 0;  // arrays read + written
  double ms_per_step = 0, gpoints_per_s = 0, effective_gbs = 0;
  double roofline_gpoints_per_s = 0, x_roofline = 0;  // copy_gbs / bytes per point; achieved / it
};

// Ghost fill + sweep of each form on a size^dims grid of `precision` ("float" | "double").
std::vector<VariableBenchRow> bench_variable(BackendKind backend, int size, int dims,
                                             const std::string& precision, double copy_gbs);

// The rows as a table (after a stencil table) or as JSON.
void print_variable_rows(const std::vector<VariableBenchRow>& rows);
nlohmann::json variable_rows_json(const std::vector<VariableBenchRow>& rows);

}  // namespace heatsolve
