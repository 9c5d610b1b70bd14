#include "app/summary.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <ctime>
#include <fstream>
#include <iterator>

#include "app/sha256.hpp"
#include "app/version.hpp"
#include "io/atomic_file.hpp"
#include "io/materials.hpp"

namespace heatsolve {

nlohmann::json make_summary(const Config& cfg, const RunResult& r, int ranks) {
  nlohmann::json j;
  j["name"] = cfg.name;
  j["deck_file"] = cfg.deck_path;
  j["deck"] = cfg.deck;
  j["problem"] = to_string(cfg.problem);
  j["dimensions"] = cfg.dimensions;
  j["cells"] = cfg.cells;
  j["backend"] = r.backend;
  j["backend_description"] = r.backend_description;
  j["kernel"] = r.kernel;
  j["precision"] = to_string(r.precision);
  j["materials"] = describe_materials(cfg);
  j["ranks"] = ranks;
  if (!r.halo_transport.empty()) j["halo_transport"] = r.halo_transport;
  if (r.halo_depth > 0) j["halo_depth"] = r.halo_depth;
  if (r.halo_depth > 0) j["halo_setup_seconds"] = r.halo_setup_seconds;
  if (r.time_block_trial_ms[0] >= 0)
    j["time_block_trial"] = {{"single_step_ms", r.time_block_trial_ms[0]},
                             {"fused_step_ms", r.time_block_trial_ms[1]}};
  if (cfg.problem == ProblemType::Heat) {
    j["steps"] = r.steps;
    j["dt"] = cfg.dt;
    j["final_time"] = r.final_time;
    j["scheme"] = to_string(cfg.scheme);
  } else {
    j["iterations"] = r.steps;
    j["converged"] = r.converged;
    j["tolerance"] = cfg.tolerance;
  }
  if (!r.multigrid.is_null()) j["multigrid"] = r.multigrid;
  if (!r.catalyst.is_null()) j["catalyst"] = r.catalyst;
  j["final_residual"] = r.final_residual;
  j["total_heat"] = r.total_heat;
  j["wall_seconds"] = r.wall_seconds;
  j["points_per_second"] = r.points_per_second;
  nlohmann::json hist = nlohmann::json::array();
  for (const auto& [step, value] : r.residual_history) hist.push_back({step, value});
  j["residual_history"] = hist;
  j["files"] = r.files;
  return j;
}

RunProvenance collect_provenance(const std::string& deck_file,
                                 const std::vector<std::string>& overrides, const Config& cfg) {
  RunProvenance p;
  std::ifstream in(deck_file, std::ios::binary);
  std::string bytes;
  if (in) bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  p.deck_sha256 = in ? sha256_hex(bytes) : "unavailable";  // read at validation: rarely gone
  p.overrides = overrides;
  p.effective_deck_sha256 = sha256_hex(cfg.deck.dump());
  char host[HOST_NAME_MAX + 1] = {};
  p.host = ::gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  char stamp[32] = {};
  if (::gmtime_r(&now, &utc) && std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc))
    p.start_time = stamp;
  return p;
}

void add_provenance(nlohmann::json& summary, const RunProvenance& p) {
  const BuildInfo& b = build_info();
  summary["version"] = b.version;
  summary["commit"] = b.commit;
  summary["deck_sha256"] = p.deck_sha256;
  summary["deck_overrides"] = p.overrides;
  summary["effective_deck_sha256"] = p.effective_deck_sha256;
  summary["host"] = p.host;
  summary["start_time"] = p.start_time;
}

void write_summary(const std::string& directory, const nlohmann::json& summary) {
  write_file_atomically(directory + "/summary.json", summary.dump(2) + "\n");
}

void write_residual_history(const std::string& directory, const RunResult& r) {
  std::string csv = "step,residual\n";
  for (const auto& [step, value] : r.residual_history)
    csv += fmt::format("{},{:.17g}\n", step, value);
  write_file_atomically(directory + "/residuals.csv", csv);
}

}  // namespace heatsolve
