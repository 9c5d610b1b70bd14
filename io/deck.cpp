// Deck parsing and validation, in three stages:
//   1. YAML text -> DeckNode tree in which every node and key remembers where it came from
//      (deck file or a --set override), so errors can point at it (io/deck/yaml_tree.cpp);
//   2. --set overrides edit that tree (io/deck/yaml_tree.cpp);
//   3. section readers turn the tree into a Config, throwing DeckError at the offending node
//      (io/deck/grid.cpp, sources.cpp, boundary.cpp, solver.cpp, execution.cpp, output.cpp,
//      on the scalar conversions of io/deck/values.cpp; io/deck/reader.hpp declares what they
//      share). This file runs the stages: build_config calls the readers in order, then aligns
//      the time step to output times and refuses unsolvable steady problems.
// Config's default member values are the deck's defaults: an absent key leaves them alone.
#include "io/deck.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <utility>

#include "io/deck/reader.hpp"
#include "io/source_balance.hpp"

namespace heatsolve {

namespace {

std::string format_what(const std::string& file, int line, int column, const std::string& message) {
  if (line <= 0) return fmt::format("{}: {}", file, message);
  if (column <= 0) return fmt::format("{}:{}: {}", file, line, message);
  return fmt::format("{}:{}:{}: {}", file, line, column, message);
}

}  // namespace

DeckError::DeckError(std::string file, int line, int column, std::string message)
    : std::runtime_error(format_what(file, line, column, message)),
      file_(std::move(file)),
      line_(line),
      column_(column),
      message_(std::move(message)) {}

namespace {

using namespace deck_reader;

// ---- Sections -------------------------------------------------------------------------------

const std::vector<std::string> kRootKeys{"name",      "problem", "grid",      "material",
                                         "materials", "time",    "initial",   "boundary",
                                         "source",    "solver",  "execution", "output"};

// ---- Output at fixed simulated times ------------------------------------------------------

// A time the run must land on: output.interval, output.diagnostics.interval, time.end.
struct TimeMark {
  double t = 0;
  const DeckNode* node = nullptr;
  std::string what;
};

// p/q with q <= kMaxDenominator equal to r within 1e-12 relative (continued fractions: the
// first convergent close enough), if there is one. Times written as decimals (0.3, 0.7, 1)
// have such ratios; unrelated ones (0.3 and 1/pi) have none, where a looser test would find
// a large q and shrink dt by as much without a word.
constexpr std::int64_t kMaxDenominator = 1000;
std::optional<std::pair<std::int64_t, std::int64_t>> as_fraction(double r) {
  if (!(r > 0 && r < 1e12)) return std::nullopt;
  std::int64_t p0 = 0, q0 = 1, p1 = 1, q1 = 0;
  double x = r;
  for (int k = 0; k < 64; ++k) {
    const double a = std::floor(x);
    const auto ai = static_cast<std::int64_t>(a);
    const std::int64_t p2 = ai * p1 + p0, q2 = ai * q1 + q0;
    if (q2 > kMaxDenominator) break;
    if (std::abs(r - double(p2) / double(q2)) <= 1e-12 * r) return std::make_pair(p2, q2);
    p0 = p1, q0 = q1, p1 = p2, q1 = q2;
    const double frac = x - a;
    if (frac < 1e-12) break;
    x = 1.0 / frac;
  }
  return std::nullopt;
}

// Output at fixed simulated times (docs/deck.md "Output at fixed times"): dt becomes the
// largest value not above the resolved one that divides every mark into whole steps, so that
// a step lands on each multiple of each interval (and on time.end). time.end: steps = end/dt;
// time.steps: end = steps * dt. Intervals become step counts.
void align_time_step(const DeckNode& root, Config& cfg) {
  if (cfg.problem != ProblemType::Heat) return;
  if (cfg.output_interval <= 0 && cfg.diagnostics.interval <= 0) return;
  const DeckNode* output = root.find("output");
  const DeckNode* time = root.find("time");
  std::vector<TimeMark> marks;
  if (cfg.output_interval > 0)
    marks.push_back({cfg.output_interval, output->find("interval"), "output.interval"});
  if (cfg.diagnostics.interval > 0)
    marks.push_back({cfg.diagnostics.interval, output->find("diagnostics")->find("interval"),
                     "output.diagnostics.interval"});
  const DeckNode* end = time ? time->find("end") : nullptr;
  if (end && cfg.end_time > 0) marks.push_back({cfg.end_time, end, "time.end"});
  double d = marks[0].t;  // every mark so far is a whole multiple of d
  for (std::size_t i = 1; i < marks.size(); ++i) {
    const auto f = as_fraction(marks[i].t / d);
    if (!f)
      fail(marks[i].node->loc,
           fmt::format("{}: {:g} and {} = {:g} have no common time step (their ratio is no "
                       "fraction p/q with q <= {}): steps could not land on both; choose times "
                       "whose ratio is such a fraction",
                       marks[i].what, marks[i].t, marks[0].what, marks[0].t, kMaxDenominator));
    d /= double(f->second);
  }
  const double m = std::max(1.0, std::ceil(d / cfg.dt - 1e-9));
  const double dt = d / m;
  const auto steps_of = [&](double t, const TimeMark& mark) {
    const double n = std::round(t / dt);
    if (!(n <= 1e15))
      fail(mark.node->loc, fmt::format("{}: {:g} needs {:g} steps of dt = {:g} (more than 1e15)",
                                       mark.what, t, n, dt));
    return static_cast<std::int64_t>(n);
  };
  cfg.dt = dt;
  if (end) {
    cfg.steps = cfg.end_time > 0 ? steps_of(cfg.end_time, marks.back()) : 0;
  } else {
    cfg.end_time = double(cfg.steps) * cfg.dt;
  }
  for (const TimeMark& mark : marks) {
    if (mark.what == "output.interval") cfg.output_interval_steps = steps_of(mark.t, mark);
    if (mark.what == "output.diagnostics.interval")
      cfg.diagnostics.interval_steps = steps_of(mark.t, mark);
  }
}

// ---- Singular steady problems ----------------------------------------------------------------

// A Poisson deck without a face that fixes the level (no dirichlet face, no convective face
// with h > 0) has a solution only when its source balances the inflow through the faces
// (io/source_balance.hpp): refused unless solver.singular asks for the compatible part.
void check_singular(const DeckNode& root, const Config& cfg) {
  if (cfg.problem != ProblemType::Poisson || cfg.singular != SingularPolicy::Refuse) return;
  const SourceBalance b = source_balance(cfg);
  if (!b.singular || b.balanced()) return;
  // At the source when it has a net part, else at the first face that lets heat in.
  const DeckNode* at = b.source != 0 ? root.find("source") : nullptr;
  std::string key = "source";
  if (!at) {
    const DeckNode* boundary = root.find("boundary");
    for (int f = 0; f < 2 * cfg.dimensions && boundary && !at; ++f) {
      const FaceBC& face = cfg.boundary[std::size_t(f)];
      if ((face.type != BoundaryType::Neumann && face.type != BoundaryType::HeatFlux) ||
          face.value == 0)
        continue;
      at = boundary->find(kFaceNames[std::size_t(f)]);
      key = "boundary." + kFaceNames[std::size_t(f)];
      if (!at) at = boundary->find("all"), key = "boundary.all";
    }
  }
  const Location& loc = at ? at->loc : root.loc;
  fail(loc, fmt::format(
                "{}: this Poisson problem has no dirichlet face (nor a convective face with "
                "h > 0), so it has a solution only when the source balances the heat flowing in "
                "through the faces, and here it does not: sum of f dV = {:.6g}, inflow through "
                "the faces = {:.6g}, imbalance {:.3g} (more than {:g} of their magnitude "
                "{:.3g}). Balance them, make a face dirichlet, or set solver.singular: "
                "compatible-mean to solve the balanced part (the mean imbalance removed from the "
                "source; the solution of zero mean)",
                key, b.source, b.inflow, b.imbalance(), SourceBalance::kTolerance, b.magnitude));
}

// Runs `read` on the section when the deck has it; an absent section keeps Config's defaults.
template <typename Read>
void section(const MapView& top, const std::string& key, Config& cfg, Read read) {
  if (const DeckNode* n = top.get(key)) read(*n, cfg);
}

Config build_config(const DeckNode& root, const DeckFeatures& features) {
  Config cfg;
  const MapView top(root, "", kRootKeys);
  read_name(top, cfg);
  cfg.output_directory = "out/" + cfg.name;
  cfg.initial.type = ShapeType::Uniform;
  read_problem(top.require("problem"), cfg);
  read_grid(top.require("grid"), cfg);
  section(top, "material", cfg, read_material);
  if (const DeckNode* m = top.get("materials"); m && features.max_region_cells > 0) {
    const auto cells = static_cast<std::int64_t>(cfg.grid().interior_size());
    if (cells > features.max_region_cells)
      fail(m->loc, fmt::format("materials: {} cells are more than this reader checks regions on "
                               "({})",
                               cells, features.max_region_cells));
  }
  section(top, "materials", cfg, read_materials);
  // Before time: the stability limit of materials by region depends on periodic faces.
  section(top, "boundary", cfg, read_boundary);
  if (cfg.problem == ProblemType::Heat && !top.get("time"))
    fail(top.loc(), "missing required key 'time' (a heat problem needs time.end or time.steps)");
  section(top, "time", cfg, read_time);
  if (const DeckNode* n = top.get("initial")) {
    cfg.initial = read_shape(*n, "initial", cfg, ShapeUse::Initial);
    check_box_has_cells(*n, "initial", cfg.initial, cfg);
  }
  section(top, "source", cfg, read_sources);
  section(top, "solver", cfg, read_solver);
  if (cfg.problem == ProblemType::Heat && cfg.scheme != TimeScheme::Explicit && !top.get("solver"))
    cfg.method = SolverMethod::Multigrid;  // implicit steps are solved by multigrid
  check_singular(root, cfg);
  if (const DeckNode* n = top.get("execution")) read_execution(*n, cfg, features);
  if (const DeckNode* n = top.get("output")) read_output(*n, cfg, features);
  align_time_step(root, cfg);
  return cfg;
}

// The parsed deck root: must be a mapping; an empty document is an empty mapping.
DeckNode parse_root(const std::string& text, const std::string& source_name) {
  DeckNode root = parse_yaml(text, file_locator(source_name));
  if (root.kind == Kind::Null) return empty_map(Location{source_name, 1, 1, {}});
  if (root.kind != Kind::Map) expected(root, "the deck", "a mapping of sections");
  return root;
}

}  // namespace

DeckFeatures DeckFeatures::of_this_build() {
  DeckFeatures f;
#ifdef HEATSOLVE_HAVE_CATALYST
  f.catalyst = true;
#endif
#ifdef HEATSOLVE_HAVE_ZFP
  f.zfp = true;
#endif
  return f;
}

Config parse_deck(const std::string& text, const std::string& source_name,
                  const std::vector<std::string>& overrides, const DeckFeatures& features) {
  DeckNode root = parse_root(text, source_name);
  for (std::size_t i = 0; i < overrides.size(); ++i)
    apply_override(root, overrides[i], static_cast<int>(i) + 1);
  Config cfg = build_config(root, features);
  cfg.deck_path = source_name;
  cfg.deck = to_json(root);
  return cfg;
}

namespace {

// Only a regular file is read: a FIFO would block `validate` and `run` until someone writes
// to it, a device never ends.
void check_regular_deck_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw DeckError(path, 0, 0, fmt::format("cannot read deck: {}", std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw DeckError(path, 0, 0, "cannot read deck: it is a directory");
  if (!S_ISREG(st.st_mode))
    throw DeckError(path, 0, 0,
                    fmt::format("cannot read deck: not a regular file (a {}); give the deck as a "
                                "file",
                                S_ISFIFO(st.st_mode)   ? "FIFO or pipe"
                                : S_ISCHR(st.st_mode)  ? "character device"
                                : S_ISBLK(st.st_mode)  ? "block device"
                                : S_ISSOCK(st.st_mode) ? "socket"
                                                       : "special file"));
}

}  // namespace

Config load_deck(const std::string& path, const std::vector<std::string>& overrides,
                 const DeckFeatures& features) {
  check_regular_deck_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DeckError(path, 0, 0, fmt::format("cannot read deck: {}", std::strerror(errno)));
  // Decks are a few hundred bytes; a huge file is the wrong file (a result, a binary).
  constexpr std::size_t kMaxDeckBytes = std::size_t{1} << 20;
  std::string text(kMaxDeckBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw DeckError(path, 0, 0, "cannot read deck: read error");
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxDeckBytes)
    throw DeckError(path, 0, 0, "cannot read deck: larger than 1 MiB (is this the right file?)");
  return parse_deck(text, path, overrides, features);
}

}  // namespace heatsolve
