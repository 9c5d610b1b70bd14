// Checkpoints by name: the deck identity they carry, their paths and the "latest" pointer,
// which file a restart reads, and whether it matches the deck. The HDF5 file itself:
// io/checkpoint_file.cpp.
#include "io/checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "io/atomic_file.hpp"
#include "io/run_identity.hpp"

namespace fs = std::filesystem;

namespace heatsolve {

const CheckpointField* CheckpointState::field(const std::string& name) const {
  for (const CheckpointField& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

// ---- Deck identity ------------------------------------------------------------------------

std::string checkpoint_deck_json(const Config& cfg) {
  nlohmann::json j = cfg.deck.is_object() ? cfg.deck : nlohmann::json::object();
  // The output keys that choose dt (output.interval, output.diagnostics.interval: a step lands
  // on each multiple) belong to the computation; the rest of the section does not.
  nlohmann::json timing = nlohmann::json::object();
  if (j.contains("output") && j["output"].is_object()) {
    const nlohmann::json& out = j["output"];
    if (out.contains("interval")) timing["interval"] = out["interval"];
    if (out.contains("diagnostics") && out["diagnostics"].is_object() &&
        out["diagnostics"].contains("interval"))
      timing["diagnostics"]["interval"] = out["diagnostics"]["interval"];
  }
  j.erase("output");
  if (!timing.empty()) j["output"] = timing;
  j.erase("execution");
  if (j.contains("time") && j["time"].is_object()) {
    j["time"].erase("end");
    j["time"].erase("steps");
  }
  if (j.contains("solver") && j["solver"].is_object()) j["solver"].erase("max_iterations");
  return j.dump();  // nlohmann::json objects keep their keys sorted: canonical
}

std::string checkpoint_deck_hash(const Config& cfg) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : checkpoint_deck_json(cfg)) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

std::string checkpoint_path(const std::string& directory, std::int64_t step) {
  return (fs::path(directory.empty() ? "." : directory) / fmt::format("checkpoint_{:08d}.h5", step))
      .string();
}

std::string checkpoint_latest_path(const std::string& directory) {
  return (fs::path(directory.empty() ? "." : directory) / "checkpoint_latest").string();
}

namespace {

// Steps of the `checkpoint_<8+ digits>.h5` files in `directory`, ascending.
std::vector<std::pair<std::int64_t, fs::path>> list_checkpoints(const std::string& directory) {
  static const std::regex name_re("checkpoint_([0-9]{8,})\\.h5");
  std::vector<std::pair<std::int64_t, fs::path>> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory.empty() ? "." : directory, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, name_re)) out.emplace_back(std::stoll(m[1].str()), entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void publish_checkpoint(const std::string& directory, const std::string& path, std::int64_t step) {
  write_file_atomically(checkpoint_latest_path(directory),
                        fs::path(path).filename().string() + "\n");
  const auto all = list_checkpoints(directory);
  std::vector<fs::path> older;
  for (const auto& [s, p] : all)
    if (s <= step) older.push_back(p);
  // `older` ends with the new checkpoint: keep the last kCheckpointsKept.
  for (std::size_t i = 0; i + kCheckpointsKept < older.size(); ++i) {
    std::error_code ec;
    fs::remove(older[i], ec);  // best effort: a leftover old checkpoint is harmless
  }
  fault_point("checkpoint", step);
}

namespace {

// The checkpoint that output.directory's latest-file names (a relative name: in that
// directory), for --restart latest: {the latest-file's path, the named path}. A
// CheckpointMismatch where the latest-file is missing or empty.
std::pair<std::string, fs::path> latest_named(const std::string& directory) {
  const std::string latest = checkpoint_latest_path(directory);
  // There but not a readable file: say why (a symlink loop or to nothing, a directory).
  std::error_code ec;
  if (fs::exists(fs::symlink_status(latest, ec))) {
    const fs::file_status target = fs::status(latest, ec);
    if (!fs::is_regular_file(target))
      throw CheckpointMismatch(fmt::format("--restart latest: cannot read '{}': {}", latest,
                                           ec                         ? ec.message()
                                           : fs::is_directory(target) ? "it is a directory"
                                                                      : "not a regular file"));
  }
  std::ifstream in(latest);
  if (!in)
    throw CheckpointMismatch(fmt::format(
        "--restart latest: no '{}' (output.directory '{}' holds no checkpoint of this deck; "
        "set output.checkpoint_every, or pass a checkpoint file)",
        latest, directory));
  std::string name;
  std::getline(in, name);
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
  if (name.empty())
    throw CheckpointMismatch(fmt::format("--restart latest: '{}' is empty", latest));
  fs::path named(name);
  if (named.is_relative()) named = fs::path(directory.empty() ? "." : directory) / named;
  return {latest, named};
}

}  // namespace

std::string resolve_restart_path(const std::string& arg, const std::string& directory) {
  if (arg != "latest") {
    if (!fs::exists(arg)) throw CheckpointMismatch(fmt::format("checkpoint '{}' not found", arg));
    return arg;
  }
  const auto [latest, p] = latest_named(directory);
  if (!fs::exists(p))
    throw CheckpointMismatch(
        fmt::format("--restart latest: '{}' names '{}', which does not exist", latest, p.string()));
  return p.string();
}

std::vector<std::string> restart_candidates(const std::string& arg, const std::string& directory) {
  if (arg != "latest") return {resolve_restart_path(arg, directory)};
  const auto [latest, named] = latest_named(directory);
  // The step of the named checkpoint bounds the fall-backs (later files belong to a run that
  // was restarted from further back and never got as far again).
  static const std::regex step_re("checkpoint_([0-9]{8,})\\.h5");
  std::smatch m;
  const std::string file = named.filename().string();
  const std::int64_t bound = std::regex_match(file, m, step_re)
                                 ? std::stoll(m[1].str())
                                 : std::numeric_limits<std::int64_t>::max();
  std::vector<std::string> out{named.string()};
  const auto all = list_checkpoints(directory);
  for (auto it = all.rbegin(); it != all.rend(); ++it)
    if (it->first < bound && it->second.filename() != named.filename())
      out.push_back(it->second.string());
  std::error_code ec;
  if (out.size() == 1 && !fs::exists(fs::symlink_status(named, ec)))
    throw CheckpointMismatch(fmt::format("--restart latest: '{}' names '{}', which does not exist",
                                         latest, named.string()));
  return out;
}

void check_checkpoint_matches(const CheckpointState& h, const Config& cfg,
                              const std::string& path) {
  std::vector<std::string> diffs;
  const std::string problem = to_string(cfg.problem);
  if (h.problem != problem)
    diffs.push_back(fmt::format("problem: checkpoint '{}', deck '{}'", h.problem, problem));
  if (h.precision != cfg.precision)
    diffs.push_back(fmt::format("precision: checkpoint '{}', deck '{}'", to_string(h.precision),
                                to_string(cfg.precision)));
  const GridDesc g = cfg.grid();
  const std::array<int, 3> cells{g.nx, g.ny, g.nz};
  if (h.dims != cfg.dimensions || h.cells != cells)
    diffs.push_back(fmt::format("grid: checkpoint {}D {}x{}x{}, deck {}D {}x{}x{}", h.dims,
                                h.cells[0], h.cells[1], h.cells[2], cfg.dimensions, cells[0],
                                cells[1], cells[2]));
  if (cfg.problem == ProblemType::Poisson) {
    const std::string method = to_string(cfg.method);
    if (h.method != method)
      diffs.push_back(fmt::format("solver.method: checkpoint '{}', deck '{}'", h.method, method));
  }
  if (h.deck_hash != checkpoint_deck_hash(cfg)) {
    // Name the differing keys (JSON pointers) from the hashed JSON the checkpoint keeps.
    std::string keys;
    try {
      const nlohmann::json theirs = nlohmann::json::parse(h.deck_hashed);
      const nlohmann::json ours = nlohmann::json::parse(checkpoint_deck_json(cfg));
      for (const auto& op : nlohmann::json::diff(theirs, ours)) {
        const std::string ptr = op["path"].get<std::string>();
        const nlohmann::json::json_pointer jp(ptr);
        const std::string a = theirs.contains(jp) ? theirs.at(jp).dump() : "(absent)";
        const std::string b = ours.contains(jp) ? ours.at(jp).dump() : "(absent)";
        keys += fmt::format("{}{} (checkpoint {}, deck {})", keys.empty() ? "" : "; ", ptr, a, b);
      }
    } catch (const std::exception&) {
    }
    diffs.push_back(fmt::format("deck hash: checkpoint {}, deck {}{}", h.deck_hash,
                                checkpoint_deck_hash(cfg), keys.empty() ? "" : ": " + keys));
  }
  if (h.step < 0) diffs.push_back("step: negative");
  if (diffs.empty()) return;
  std::string msg =
      fmt::format("checkpoint '{}' does not belong to deck '{}':", path, cfg.deck_path);
  for (const std::string& d : diffs) msg += "\n  " + d;
  msg +=
      "\n(only output.* (but the intervals, which choose dt), execution.*, time.end/steps and "
      "solver.max_iterations may change on restart; see docs/batch.md)";
  throw CheckpointMismatch(msg);
}

}  // namespace heatsolve
