// summary.json and residuals.csv: what a finished run reports about itself.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "io/config.hpp"
#include "solvers/solver.hpp"

namespace heatsolve {

nlohmann::json make_summary(const Config& cfg, const RunResult& r, int ranks);
void write_summary(const std::string& directory, const nlohmann::json& summary);
void write_residual_history(const std::string& directory, const RunResult& r);

}  // namespace heatsolve
