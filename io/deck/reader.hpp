// Internal to the deck parser (io/deck.cpp, io/deck/*.cpp; not included elsewhere): the deck
// tree, its errors and scalar conversions, and the section readers that turn it into a Config.
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/mark.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/config.hpp"
#include "io/deck.hpp"

namespace heatsolve::deck_reader {

// ---- Locations and errors -------------------------------------------------------------

constexpr const char* kOverrideSource = "--set";

// Where a node came from. For --set overrides: source "--set", line = 1-based index of the
// override, column = 1-based column within that override's text.
struct Location {
  std::string source;
  int line = 0, column = 0;   // 1-based; 0 = unknown
  std::string override_text;  // the --set argument, when the node came from one
};

[[noreturn]] void fail(const Location& at, const std::string& message);

// ---- The deck tree ----------------------------------------------------------------------

struct DeckNode {
  enum class Kind { Null, Scalar, Sequence, Map };
  Kind kind = Kind::Null;
  std::string scalar;
  bool quoted = false;             // scalar was quoted (or tagged): always a string
  std::vector<DeckNode> items;     // sequence elements, or map values
  std::vector<std::string> keys;   // map keys, parallel to items
  std::vector<Location> key_locs;  // map key locations, parallel to items
  Location loc;

  std::optional<std::size_t> index_of(const std::string& key) const {
    const auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) return std::nullopt;
    return static_cast<std::size_t>(it - keys.begin());
  }
  const DeckNode* find(const std::string& key) const {
    const auto i = index_of(key);
    return i ? &items[*i] : nullptr;
  }
  DeckNode* find(const std::string& key) {
    const auto i = index_of(key);
    return i ? &items[*i] : nullptr;
  }
  DeckNode& insert(const std::string& key, const Location& key_loc, DeckNode value) {
    keys.push_back(key);
    key_locs.push_back(key_loc);
    items.push_back(std::move(value));
    return items.back();
  }
  void erase(std::size_t i) {
    keys.erase(keys.begin() + i);
    key_locs.erase(key_locs.begin() + i);
    items.erase(items.begin() + i);
  }
};
using Kind = DeckNode::Kind;

DeckNode empty_map(const Location& loc);

// ---- Small text helpers (io/deck/values.cpp) ----------------------------------------------

std::string join(const std::vector<std::string>& items);
std::string lower(std::string s);
// " (did you mean 'x'?)" for the closest candidate when it is close enough, else "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

// ---- YAML -> DeckNode, --set overrides, JSON echo (io/deck/yaml_tree.cpp) -----------------

using Locator = std::function<Location(const YAML::Mark&)>;

DeckNode parse_yaml(const std::string& text, const Locator& locate);
Locator file_locator(const std::string& source);
// Applies "key.path=value": value is YAML; an empty or null value removes the key.
void apply_override(DeckNode& root, const std::string& text, int index);
nlohmann::json to_json(const DeckNode& n);

// ---- Scalar conversion (io/deck/values.cpp) -----------------------------------------------

std::string describe(const DeckNode& n);
[[noreturn]] void expected(const DeckNode& n, const std::string& what, const std::string& kind);
bool is_plain(const DeckNode& n);
bool is_auto(const DeckNode& n);
std::optional<double> parse_double(const std::string& s);
std::optional<std::int64_t> parse_integer(const std::string& s);
std::optional<bool> parse_bool(const std::string& s);
double number(const DeckNode& n, const std::string& what);
double positive_number(const DeckNode& n, const std::string& what);
double nonnegative_number(const DeckNode& n, const std::string& what);
// A number in (0, 1].
double fraction(const DeckNode& n, const std::string& what);
std::int64_t integer(const DeckNode& n, const std::string& what, std::int64_t min,
                     std::int64_t max = std::numeric_limits<std::int64_t>::max());
std::int64_t positive_integer(const DeckNode& n, const std::string& what);
std::int64_t nonnegative_integer(const DeckNode& n, const std::string& what);
int positive_int(const DeckNode& n, const std::string& what);
bool boolean(const DeckNode& n, const std::string& what);
std::string text(const DeckNode& n, const std::string& what);
// One of `names`; returns its index.
std::size_t choice_index(const DeckNode& n, const std::string& what,
                         const std::vector<std::string>& names);

// One of `options`, spelled as to_string() spells them.
template <typename E>
E choice(const DeckNode& n, const std::string& what, std::initializer_list<E> options) {
  std::vector<std::string> names;
  for (E e : options) names.emplace_back(to_string(e));
  return *(options.begin() + choice_index(n, what, names));
}

const std::vector<DeckNode>& list(const DeckNode& n, const std::string& what, std::size_t count = 0,
                                  const std::string& why = "");
std::string element(const std::string& what, std::size_t i);

// A list with one entry per dimension, converted by `convert`; unused axes get `fill`.
template <typename T, typename Convert>
std::array<T, 3> per_axis(const DeckNode& n, const std::string& what, int dims, T fill,
                          Convert convert) {
  const auto& items =
      list(n, what, dims, fmt::format(" (one per dimension; problem.dimensions is {})", dims));
  std::array<T, 3> out;
  out.fill(fill);
  for (int d = 0; d < dims; ++d) out[d] = convert(items[d], element(what, d));
  return out;
}

// "HH:MM:SS" -> seconds.
double walltime(const DeckNode& n, const std::string& what);

// ---- Maps with a fixed set of keys ------------------------------------------------------

// A mapping section whose keys must all be in `valid` (an empty value counts as empty map).
class MapView {
 public:
  MapView(const DeckNode& node, std::string path, std::vector<std::string> valid)
      : node_(node), path_(std::move(path)) {
    if (node.kind != Kind::Map && node.kind != Kind::Null)
      expected(node, path_.empty() ? "the deck" : path_, "a mapping");
    for (std::size_t i = 0; i < node.keys.size(); ++i) {
      const std::string& key = node.keys[i];
      if (std::find(valid.begin(), valid.end(), key) != valid.end()) continue;
      fail(node.key_locs[i], fmt::format("unknown key '{}' in {}{}; valid keys: {}", key,
                                         path_.empty() ? "the deck" : "'" + path_ + "'",
                                         did_you_mean(key, valid), join(valid)));
    }
  }

  std::string path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const Location& loc() const { return node_.loc; }
  const DeckNode* get(const std::string& key) const { return node_.find(key); }
  const Location& key_loc(const std::string& key) const {
    return node_.key_locs[*node_.index_of(key)];
  }

  const DeckNode& require(const std::string& key) const {
    if (const DeckNode* n = get(key)) return *n;
    fail(node_.loc, fmt::format("missing required key '{}'", path(key)));
  }
  template <typename Convert>
  auto required(const std::string& key, Convert convert) const {
    return convert(require(key), path(key));
  }
  // Converts the key when present, else returns `fallback`.
  template <typename T, typename Convert>
  T optional(const std::string& key, T fallback, Convert convert) const {
    const DeckNode* n = get(key);
    return n ? static_cast<T>(convert(*n, path(key))) : fallback;
  }

 private:
  const DeckNode& node_;
  std::string path_;
};

// A number, or (transient problems) a table over simulated time (io/deck/values.cpp says more).
double number_or_table(const DeckNode& n, const std::string& what, ProblemType problem,
                       std::optional<TimeTable>& table);

// The node's `type` (a required key), read before the type-dependent key set is known.
const DeckNode& type_of(const DeckNode& n, const std::string& path);

// `auto` -> `fallback`, else `convert`; a non-numeric word is reported as "'auto' or <kind>".
template <typename T, typename Convert>
T auto_or(const DeckNode& n, const std::string& what, const char* kind, T fallback,
          Convert convert) {
  if (is_auto(n)) return fallback;
  if (n.kind == Kind::Scalar && !parse_double(n.scalar))
    expected(n, what, fmt::format("'auto' or {}", kind));
  return static_cast<T>(convert(n, what));
}

// ---- Sections -------------------------------------------------------------------------------

inline const std::vector<std::string> kFaceNames{"x-", "x+", "y-", "y+", "z-", "z+"};

// What a shape describes: the initial field (no `none`, no tables, `file` allowed), the deck's
// one `source` mapping (`none` allowed), or an entry of a `source` list.
enum class ShapeUse { Initial, Source, SourceEntry };

// io/deck/grid.cpp
void read_name(const MapView& top, Config& cfg);
void read_problem(const DeckNode& n, Config& cfg);
void read_grid(const DeckNode& n, Config& cfg);
void read_material(const DeckNode& n, Config& cfg);
void read_materials(const DeckNode& n, Config& cfg);
void read_time(const DeckNode& n, Config& cfg);

// io/deck/sources.cpp
void check_box_has_cells(const DeckNode& n, const std::string& path, const Shape& s,
                         const Config& cfg);
Shape read_shape(const DeckNode& n, const std::string& path, const Config& cfg, ShapeUse use);
void read_sources(const DeckNode& n, Config& cfg);

// io/deck/boundary.cpp
void read_boundary(const DeckNode& n, Config& cfg);

// io/deck/solver.cpp
void read_solver(const DeckNode& n, Config& cfg);

// io/deck/execution.cpp
void read_execution(const DeckNode& n, Config& cfg, const DeckFeatures& features);

// io/deck/output.cpp
// A file named in the deck, relative to the deck file's directory (--set: the working directory).
std::string deck_relative_path(const std::string& path, const Location& at);
void read_output(const DeckNode& n, Config& cfg, const DeckFeatures& features);

}  // namespace heatsolve::deck_reader
