// summary.json and residuals.csv: what a finished run reports about itself.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/config.hpp"
#include "solvers/solver.hpp"

namespace heatsolve {

nlohmann::json make_summary(const Config& cfg, const RunResult& r, int ranks);

// Where a run's results came from, taken when the run starts (rank 0): which heatsolve
// (app/version.hpp), which deck, on which host, when.
struct RunProvenance {
  std::string deck_sha256;             // SHA-256 of the deck file's bytes (as sha256sum)
  std::vector<std::string> overrides;  // the --set options, in order
  // SHA-256 of the deck the run used (after the overrides), as compact JSON with sorted keys:
  // equal for two runs of one deck given the same overrides.
  std::string effective_deck_sha256;
  std::string host;
  std::string start_time;  // ISO 8601, UTC, e.g. 2025-03-01T14:02:11Z
};
RunProvenance collect_provenance(const std::string& deck_file,
                                 const std::vector<std::string>& overrides, const Config& cfg);
// Adds version, commit, deck_sha256, deck_overrides, effective_deck_sha256, host, start_time.
void add_provenance(nlohmann::json& summary, const RunProvenance& p);
void write_summary(const std::string& directory, const nlohmann::json& summary);
void write_residual_history(const std::string& directory, const RunResult& r);

}  // namespace heatsolve
