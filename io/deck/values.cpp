// Shared basics of the deck readers (io/deck/reader.hpp): errors at a node's location, the
// deck tree's helpers, text helpers, scalar conversion, number_or_table and type_of.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "io/deck/reader.hpp"

namespace heatsolve::deck_reader {

// ---- Locations and errors -------------------------------------------------------------

[[noreturn]] void fail(const Location& at, const std::string& message) {
  if (at.override_text.empty()) throw DeckError(at.source, at.line, at.column, message);
  throw DeckError(at.source, at.line, at.column,
                  fmt::format("{} (in --set {})", message, at.override_text));
}

// ---- The deck tree ----------------------------------------------------------------------

DeckNode empty_map(const Location& loc) {
  DeckNode n;
  n.kind = Kind::Map;
  n.loc = loc;
  return n;
}

// ---- Small text helpers -----------------------------------------------------------------

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

namespace {

// Optimal-string-alignment distance: Levenshtein plus transposition of adjacent characters.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

// " (did you mean 'x'?)" for the closest candidate when it is close enough, else "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(lower(word), lower(c));
    if (d < best_distance) best_distance = d, best = &c;
  }
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  if (!best || best_distance > limit || best_distance >= word.size()) return "";
  return fmt::format(" (did you mean '{}'?)", *best);
}

// ---- Scalar conversion ------------------------------------------------------------------

std::string describe(const DeckNode& n) {
  switch (n.kind) {
    case Kind::Null:
      return "an empty value";
    case Kind::Sequence:
      return "a list";
    case Kind::Map:
      return "a mapping";
    case Kind::Scalar:
      break;
  }
  return n.quoted ? fmt::format("the quoted string \"{}\"", n.scalar)
                  : fmt::format("'{}'", n.scalar);
}

[[noreturn]] void expected(const DeckNode& n, const std::string& what, const std::string& kind) {
  fail(n.loc, fmt::format("{}: expected {}, got {}", what, kind, describe(n)));
}

bool is_plain(const DeckNode& n) {
  return n.kind == Kind::Scalar && !n.quoted;
}
bool is_auto(const DeckNode& n) {
  return is_plain(n) && n.scalar == "auto";
}

std::optional<double> parse_double(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_integer(const std::string& s) {
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+'))
    return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (end != s.c_str() + s.size() || errno == ERANGE) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

std::optional<bool> parse_bool(const std::string& s) {
  const std::string l = lower(s);
  if (l == "true" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "no" || l == "off") return false;
  return std::nullopt;
}

namespace {

// YAML's spellings of infinity and NaN (".inf", "-.Inf", ".NaN", ...).
bool is_yaml_nonfinite(const std::string& s) {
  std::string l = lower(s);
  if (!l.empty() && (l[0] == '+' || l[0] == '-')) l.erase(0, 1);
  return l == ".inf" || l == ".nan";
}

}  // namespace

double number(const DeckNode& n, const std::string& what) {
  if (!is_plain(n)) expected(n, what, "a number");
  const auto v = parse_double(n.scalar);
  if (is_yaml_nonfinite(n.scalar) || (v && !std::isfinite(*v)))
    fail(n.loc, fmt::format("{}: expected a finite number, got '{}'", what, n.scalar));
  if (!v) expected(n, what, "a number");
  return *v;
}

double positive_number(const DeckNode& n, const std::string& what) {
  const double v = number(n, what);
  if (v <= 0) fail(n.loc, fmt::format("{}: must be positive, got {}", what, n.scalar));
  return v;
}

double nonnegative_number(const DeckNode& n, const std::string& what) {
  const double v = number(n, what);
  if (v < 0) fail(n.loc, fmt::format("{}: must not be negative, got {}", what, n.scalar));
  return v;
}

// A number in (0, 1].
double fraction(const DeckNode& n, const std::string& what) {
  const double v = number(n, what);
  if (v <= 0 || v > 1) fail(n.loc, fmt::format("{}: must be in (0, 1], got {}", what, n.scalar));
  return v;
}

std::int64_t integer(const DeckNode& n, const std::string& what, std::int64_t min,
                     std::int64_t max) {
  const std::string kind = min == 1   ? "a positive integer"
                           : min == 0 ? "a non-negative integer"
                                      : fmt::format("an integer >= {}", min);
  const auto v = is_plain(n) ? parse_integer(n.scalar) : std::nullopt;
  if (!v || *v < min) expected(n, what, kind);
  if (*v > max) fail(n.loc, fmt::format("{}: {} is too large (at most {})", what, *v, max));
  return *v;
}

std::int64_t positive_integer(const DeckNode& n, const std::string& what) {
  return integer(n, what, 1);
}
std::int64_t nonnegative_integer(const DeckNode& n, const std::string& what) {
  return integer(n, what, 0);
}
int positive_int(const DeckNode& n, const std::string& what) {
  return static_cast<int>(integer(n, what, 1, std::numeric_limits<int>::max()));
}

bool boolean(const DeckNode& n, const std::string& what) {
  const auto v = is_plain(n) ? parse_bool(n.scalar) : std::nullopt;
  if (!v) expected(n, what, "true or false");
  return *v;
}

std::string text(const DeckNode& n, const std::string& what) {
  if (n.kind != Kind::Scalar || n.scalar.empty()) expected(n, what, "a non-empty string");
  if (std::any_of(n.scalar.begin(), n.scalar.end(),
                  [](unsigned char c) { return c < 0x20 || c == 0x7F; }))
    fail(n.loc, fmt::format("{}: control characters (such as a NUL byte or a newline) are not "
                            "allowed",
                            what));
  return n.scalar;
}

// One of `names`; returns its index.
std::size_t choice_index(const DeckNode& n, const std::string& what,
                         const std::vector<std::string>& names) {
  if (n.kind != Kind::Scalar) expected(n, what, "one of " + join(names));
  const auto it = std::find(names.begin(), names.end(), n.scalar);
  if (it != names.end()) return static_cast<std::size_t>(it - names.begin());
  fail(n.loc, fmt::format("{}: unknown value '{}'{}; valid values: {}", what, n.scalar,
                          did_you_mean(n.scalar, names), join(names)));
}

const std::vector<DeckNode>& list(const DeckNode& n, const std::string& what, std::size_t count,
                                  const std::string& why) {
  if (n.kind != Kind::Sequence) expected(n, what, "a list");
  if (count > 0 && n.items.size() != count)
    fail(n.loc, fmt::format("{}: expected {} entries{}, got {}", what, count, why, n.items.size()));
  return n.items;
}

std::string element(const std::string& what, std::size_t i) {
  return fmt::format("{}[{}]", what, i);
}

// "HH:MM:SS" -> seconds.
double walltime(const DeckNode& n, const std::string& what) {
  const auto bad = [&]() { expected(n, what, "a duration \"HH:MM:SS\""); };
  if (n.kind != Kind::Scalar) bad();
  std::vector<std::int64_t> parts;
  std::stringstream in(n.scalar);
  for (std::string part; std::getline(in, part, ':');) {
    if (part.empty() || part.size() > 6 ||
        !std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c); }))
      bad();
    parts.push_back(std::stoll(part));
  }
  if (parts.size() != 3 || n.scalar.back() == ':' || parts[1] >= 60 || parts[2] >= 60) bad();
  return static_cast<double>(parts[0] * 3600 + parts[1] * 60 + parts[2]);
}

// ---- Maps with a fixed set of keys ------------------------------------------------------

// A number, or (transient problems) a table over simulated time
// {table: [[t0, v0], [t1, v1], ...]}: piecewise linear, held before t0 and after the last knot;
// t finite, >= 0 and strictly increasing. Returns the value at t = 0; `table` receives the
// table when the deck gave one (docs/deck.md "Time-varying inputs").
double number_or_table(const DeckNode& n, const std::string& what, ProblemType problem,
                       std::optional<TimeTable>& table) {
  table.reset();
  if (n.kind == Kind::Sequence)
    expected(n, what, "a number or a table {table: [[t0, v0], [t1, v1], ...]}");
  if (n.kind != Kind::Map) return number(n, what);
  const MapView v(n, what, {"table"});
  if (problem != ProblemType::Heat)
    fail(n.loc, fmt::format("{}: a table over time needs a transient problem (problem.type: "
                            "heat); a steady problem has no time: give a number",
                            what));
  const DeckNode& t = v.require("table");
  const std::string path = v.path("table");
  const auto& rows = list(t, path);
  if (rows.empty()) fail(t.loc, fmt::format("{}: expected at least one [t, value] pair", path));
  std::vector<TimeTable::Knot> knots;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string w = element(path, i);
    const auto& pair = list(rows[i], w, 2, " ([t, value])");
    const double time = number(pair[0], element(w, 0));
    if (time < 0)
      fail(pair[0].loc,
           fmt::format("{}: times must not be negative, got {}", element(w, 0), pair[0].scalar));
    if (i > 0 && !(time > knots.back().t))
      fail(pair[0].loc, fmt::format("{}: times must increase strictly, got {} after {}",
                                    element(w, 0), pair[0].scalar, knots.back().t));
    knots.push_back({time, number(pair[1], element(w, 1))});
  }
  table = TimeTable(std::move(knots));
  return table->at(0.0);
}

// The node's `type` (a required key), read before the type-dependent key set is known.
const DeckNode& type_of(const DeckNode& n, const std::string& path) {
  if (n.kind != Kind::Map && n.kind != Kind::Null) expected(n, path, "a mapping");
  if (const DeckNode* t = n.find("type")) return *t;
  fail(n.loc, fmt::format("missing required key '{}.type'", path));
}

}  // namespace heatsolve::deck_reader
