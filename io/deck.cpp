// Deck parsing and validation, in three stages:
//   1. YAML text -> DeckNode tree in which every node and key remembers where it came from
//      (deck file or a --set override), so errors can point at it;
//   2. --set overrides edit that tree;
//   3. section readers turn the tree into a Config, throwing DeckError at the offending node.
// Config's default member values are the deck's defaults: an absent key leaves them alone.
#include "io/deck.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "core/stencil_policies.hpp"
#include "io/initial_field.hpp"
#include "io/materials.hpp"
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

// ---- Locations and errors -------------------------------------------------------------

constexpr const char* kOverrideSource = "--set";

// Where a node came from. For --set overrides: source "--set", line = 1-based index of the
// override, column = 1-based column within that override's text.
struct Location {
  std::string source;
  int line = 0, column = 0;   // 1-based; 0 = unknown
  std::string override_text;  // the --set argument, when the node came from one
};

[[noreturn]] void fail(const Location& at, const std::string& message) {
  if (at.override_text.empty()) throw DeckError(at.source, at.line, at.column, message);
  throw DeckError(at.source, at.line, at.column,
                  fmt::format("{} (in --set {})", message, at.override_text));
}

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

// ---- YAML -> DeckNode -------------------------------------------------------------------

using Locator = std::function<Location(const YAML::Mark&)>;

// A deck has tens of values; YAML aliases can make a few lines expand to billions ("billion
// laughs"), so the conversion stops at this many nodes.
constexpr std::size_t kMaxDeckNodes = 10000;
// Decks are a few levels deep; the limit keeps the recursive conversion off the end of the
// stack for hostile (e.g. self-referencing alias) input.
constexpr int kMaxDeckDepth = 64;

// Strict UTF-8 (RFC 3629: no overlong forms, surrogates or code points above U+10FFFF): the
// deck is echoed into summary.json, whose JSON writer rejects anything else.
bool is_valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    std::uint32_t cp = 0, min = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

// ---- YAML features a deck does not use -------------------------------------------------

// Tags other than YAML's non-specific ones ("?" plain, "!" quoted) and `!!str`: a deck is
// plain data, and a tag such as `!!python/object:...` (meaningful to other YAML loaders) or
// `!!float` would otherwise be dropped without a word.
void check_tag(const YAML::Node& y, const Location& at) {
  const std::string& tag = y.Tag();
  if (tag.empty() || tag == "?" || tag == "!" || tag == "tag:yaml.org,2002:str") return;
  const std::string core = "tag:yaml.org,2002:";
  const std::string shown = tag.rfind(core, 0) == 0 ? "!!" + tag.substr(core.size()) : tag;
  fail(at, fmt::format("YAML tag '{}' is not allowed: a deck is plain data (only !!str, to "
                       "make a value a string, is accepted)",
                       shown));
}

// Records where the first content of a YAML document is (a document of only `~` or nothing
// has none).
class ContentFinder : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> first;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { note(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    note(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    note(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    note(m);
  }
  void OnMapEnd() override {}

 private:
  void note(const YAML::Mark& m) {
    if (!first) first = m;
  }
};

// The first YAML document of `text`; a second one with content is an error (it would be
// ignored: `---` separates documents). The parser is asked for two documents at most:
// yaml-cpp 0.7's LoadAll loops forever on some malformed input (a deck starting with ',').
YAML::Node single_document(const std::string& text, const Locator& locate) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  ContentFinder first_doc, second_doc;
  if (!parser.HandleNextDocument(first_doc)) return YAML::Node();
  const bool second = parser.HandleNextDocument(second_doc);
  if (second && second_doc.first)
    fail(locate(*second_doc.first),
         "a second YAML document ('---'): a deck is one document (remove the separator or "
         "the rest)");
  // Two empty documents where the text has content: yaml-cpp stopped at a token it could not
  // read (e.g. a stray ',') without saying so.
  if (second && !first_doc.first) {
    YAML::Mark at;
    bool comment = false;
    for (const char ch : text) {
      if (ch == '\n') {
        comment = false;
        ++at.line, at.column = 0, ++at.pos;
        continue;
      }
      if (ch == '#') comment = true;
      if (!comment && !std::isspace(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.') {
        fail(locate(at), fmt::format("invalid YAML at '{}': a deck is a mapping of keys "
                                     "(name: ..., problem: ...)",
                                     ch));
      }
      ++at.column, ++at.pos;
    }
  }
  return YAML::Load(text);
}

struct Converter {
  const Locator& locate;
  std::size_t nodes = 0;
  int depth = 0;

  DeckNode convert(const YAML::Node& y);
  void convert_map(const YAML::Node& y, DeckNode& out);
  std::string scalar(const YAML::Node& y, const Location& at) const {
    std::string s = y.Scalar();
    if (!is_valid_utf8(s)) fail(at, "invalid UTF-8 text (decks must be UTF-8)");
    return s;
  }
};

void Converter::convert_map(const YAML::Node& y, DeckNode& out) {
  for (const auto& entry : y) {
    const Location key_loc = locate(entry.first.Mark());
    if (!entry.first.IsScalar()) fail(key_loc, "mapping keys must be plain names");
    const std::string key = scalar(entry.first, key_loc);
    if (const auto i = out.index_of(key))
      fail(key_loc,
           fmt::format("duplicate key '{}' (first given at line {})", key, out.key_locs[*i].line));
    DeckNode value = convert(entry.second);
    // yaml-cpp marks an empty value at the token after it (often the next line): use the key.
    if (value.kind == Kind::Null) value.loc = key_loc;
    out.insert(key, key_loc, std::move(value));
  }
}

DeckNode Converter::convert(const YAML::Node& y) {
  DeckNode n;
  n.loc = locate(y.Mark());
  struct DepthGuard {
    int& d;
    ~DepthGuard() { --d; }
  } guard{++depth};
  if (depth > kMaxDeckDepth)
    fail(n.loc, fmt::format("the deck is nested more than {} levels deep", kMaxDeckDepth));
  if (++nodes > kMaxDeckNodes)
    fail(n.loc, fmt::format("the deck expands to more than {} values (YAML aliases nested too "
                            "deeply?)",
                            kMaxDeckNodes));
  check_tag(y, n.loc);
  switch (y.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      break;
    case YAML::NodeType::Scalar:
      n.kind = Kind::Scalar;
      n.scalar = scalar(y, n.loc);
      // yaml-cpp tags plain scalars "?" and quoted ones "!"; `!!str` also forces a string.
      n.quoted = y.Tag() == "!" || y.Tag() == "tag:yaml.org,2002:str";
      break;
    case YAML::NodeType::Sequence:
      n.kind = Kind::Sequence;
      for (const auto& item : y) n.items.push_back(convert(item));
      break;
    case YAML::NodeType::Map:
      n.kind = Kind::Map;
      convert_map(y, n);
      break;
  }
  return n;
}

DeckNode parse_yaml(const std::string& text, const Locator& locate) {
  try {
    Converter converter{locate};
    return converter.convert(single_document(text, locate));
  } catch (const YAML::DeepRecursion& e) {
    // (yaml-cpp 0.7 calls it "bad file".)
    fail(locate(e.mark), fmt::format("the deck is nested more than {} levels deep", kMaxDeckDepth));
  } catch (const YAML::Exception& e) {
    fail(locate(e.mark), e.msg.empty() ? std::string("invalid YAML") : e.msg);
  }
}

Locator file_locator(const std::string& source) {
  return [source](const YAML::Mark& m) {
    if (m.is_null()) return Location{source, 1, 1, {}};
    return Location{source, m.line + 1, m.column + 1, {}};
  };
}

// ---- --set overrides ----------------------------------------------------------------------

struct PathPart {
  std::string key;
  std::size_t offset;  // within the override text
};

std::vector<PathPart> split_path(const std::string& path,
                                 const std::function<Location(std::size_t)>& at) {
  std::vector<PathPart> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = std::min(path.find('.', start), path.size());
    if (dot == start) fail(at(start), "empty key in override path; expected key.path=value");
    parts.push_back({path.substr(start, dot - start), start});
    if (dot == path.size()) return parts;
    start = dot + 1;
  }
}

// Walks `parts` (all but the last) from `root`, creating missing maps.
DeckNode& walk_to_parent(DeckNode& root, const std::vector<PathPart>& parts,
                         const std::function<Location(std::size_t)>& at) {
  DeckNode* current = &root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const Location here = at(parts[i].offset);
    DeckNode* child = current->find(parts[i].key);
    if (!child) child = &current->insert(parts[i].key, here, empty_map(here));
    if (child->kind == Kind::Null) *child = empty_map(here);
    if (child->kind != Kind::Map) {
      std::string prefix;
      for (std::size_t j = 0; j <= i; ++j) prefix += (j ? "." : "") + parts[j].key;
      fail(here, fmt::format("cannot set a key inside '{}': it is not a mapping", prefix));
    }
    current = child;
  }
  return *current;
}

// Applies "key.path=value": value is YAML; an empty or null value removes the key.
void apply_override(DeckNode& root, const std::string& text, int index) {
  const auto at = [&](std::size_t offset) {
    return Location{kOverrideSource, index, static_cast<int>(offset) + 1, text};
  };
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos) fail(at(0), "expected key.path=value");
  const auto parts = split_path(text.substr(0, eq), at);
  const DeckNode value = parse_yaml(text.substr(eq + 1), [&](const YAML::Mark& m) {
    return at(eq + 1 + (m.is_null() || m.line > 0 ? 0 : m.column));
  });

  DeckNode& parent = walk_to_parent(root, parts, at);
  const PathPart& last = parts.back();
  const auto existing = parent.index_of(last.key);
  if (value.kind == Kind::Null) {
    if (existing) parent.erase(*existing);
  } else if (existing) {
    parent.items[*existing] = value;
    parent.key_locs[*existing] = at(last.offset);
  } else {
    parent.insert(last.key, at(last.offset), value);
  }
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

// YAML's spellings of infinity and NaN (".inf", "-.Inf", ".NaN", ...).
bool is_yaml_nonfinite(const std::string& s) {
  std::string l = lower(s);
  if (!l.empty() && (l[0] == '+' || l[0] == '-')) l.erase(0, 1);
  return l == ".inf" || l == ".nan";
}

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
                     std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
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

// One of `options`, spelled as to_string() spells them.
template <typename E>
E choice(const DeckNode& n, const std::string& what, std::initializer_list<E> options) {
  std::vector<std::string> names;
  for (E e : options) names.emplace_back(to_string(e));
  return *(options.begin() + choice_index(n, what, names));
}

const std::vector<DeckNode>& list(const DeckNode& n, const std::string& what, std::size_t count = 0,
                                  const std::string& why = "") {
  if (n.kind != Kind::Sequence) expected(n, what, "a list");
  if (count > 0 && n.items.size() != count)
    fail(n.loc, fmt::format("{}: expected {} entries{}, got {}", what, count, why, n.items.size()));
  return n.items;
}

std::string element(const std::string& what, std::size_t i) {
  return fmt::format("{}[{}]", what, i);
}

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

const std::vector<std::string> kRootKeys{"name",      "problem", "grid",      "material",
                                         "materials", "time",    "initial",   "boundary",
                                         "source",    "solver",  "execution", "output"};
const std::vector<std::string> kFaceNames{"x-", "x+", "y-", "y+", "z-", "z+"};

// The files a run names after `name` must fit the 255-byte limit of a file name (the longest:
// `<name>_vti/<name>_<step>_<rank>.vti.tmp.<pid>`, about 30 more characters).
constexpr std::size_t kMaxNameLength = 200;
void check_name_length(const DeckNode& n, const std::string& name) {
  if (name.size() > kMaxNameLength)
    fail(n.loc, fmt::format("name: {} characters is too long (at most {}: the output files are "
                            "named after it, and file names have at most 255 bytes)",
                            name.size(), kMaxNameLength));
}

void read_name(const MapView& top, Config& cfg) {
  const DeckNode& n = top.require("name");
  cfg.name = text(n, "name");
  const auto ok = [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  };
  if (!std::all_of(cfg.name.begin(), cfg.name.end(), ok) || cfg.name[0] == '.' ||
      cfg.name[0] == '-')
    fail(n.loc, fmt::format("name: '{}' may contain only letters, digits, '_', '-' and '.', and "
                            "must start with a letter, digit or '_'",
                            cfg.name));
  check_name_length(n, cfg.name);
}

void read_problem(const DeckNode& n, Config& cfg) {
  const MapView v(n, "problem", {"type", "dimensions"});
  cfg.problem = v.required("type", [](const DeckNode& t, const std::string& what) {
    return choice(t, what, {ProblemType::Heat, ProblemType::Poisson});
  });
  const DeckNode& dims = v.require("dimensions");
  const std::int64_t d = integer(dims, v.path("dimensions"), 1);
  if (d != 2 && d != 3)
    fail(dims.loc, fmt::format("problem.dimensions: expected 2 or 3, got {}", dims.scalar));
  cfg.dimensions = static_cast<int>(d);
}

// Keeps the padded array size far from integer overflow.
void check_total_size(const DeckNode& cells_node, const std::array<int, 3>& cells) {
  constexpr double kMaxPadded = 281474976710656.0;  // 2^48 values
  double padded = 1;
  for (int c : cells) padded *= c + 2.0;
  if (padded > kMaxPadded)
    fail(cells_node.loc, fmt::format("grid.cells: {} x {} x {} cells is too large (at most 2^48 "
                                     "values including ghost cells)",
                                     cells[0], cells[1], cells[2]));
}

// Cell sizes whose 1/h^2 stencil weight over- or underflows would only turn into NaN or
// Inf mid-run: refuse them here.
void check_spacing(const MapView& v, const Config& cfg) {
  constexpr double kMinH = 1e-150, kMaxH = 1e150;
  for (int d = 0; d < cfg.dimensions; ++d) {
    const double h = cfg.length[d] / cfg.cells[d];
    const DeckNode* at = v.get("length") ? v.get("length") : v.get("cells");
    if (!(h >= kMinH && h <= kMaxH))
      fail(at->loc, fmt::format("grid: cell size length[{}]/cells[{}] = {:g} is outside the "
                                "usable range [{:g}, {:g}]",
                                d, d, h, kMinH, kMaxH));
  }
}

// Cell centres are computed as origin + (i + 1/2) h in double: an origin so far from 0 that
// the centres' offsets from it lose their digits (grid.origin: 1e17 with h = 1/64 rounds
// every centre to the origin, and a sine field to zeros) is refused. The rounding of a
// coordinate, |x| 2^-52, must stay below 1e-6 of a cell.
void check_origin_precision(const DeckNode& origin, const Config& cfg) {
  constexpr double kMaxRoundingPerCell = 1e-6;
  for (int d = 0; d < cfg.dimensions; ++d) {
    const double h = cfg.length[d] / cfg.cells[d];
    const double far = std::max(std::abs(cfg.origin[d]), std::abs(cfg.origin[d] + cfg.length[d]));
    if (far * std::numeric_limits<double>::epsilon() > kMaxRoundingPerCell * h)
      fail(origin.items[std::size_t(d)].loc,
           fmt::format("grid.origin[{}]: {:g} is too far from 0 for cells of size {:g}: cell "
                       "centres there are rounded by {:.3g} cells in double precision (at most "
                       "{:g}; keep |origin| below {:.3g}, e.g. by shifting the coordinates)",
                       d, cfg.origin[d], h, far * std::numeric_limits<double>::epsilon() / h,
                       kMaxRoundingPerCell,
                       kMaxRoundingPerCell * h / std::numeric_limits<double>::epsilon()));
  }
}

void read_grid(const DeckNode& n, Config& cfg) {
  constexpr std::int64_t kMaxCells = std::int64_t{1} << 30;
  const MapView v(n, "grid", {"cells", "length", "origin"});
  const int dims = cfg.dimensions;
  cfg.cells = v.required("cells", [&](const DeckNode& c, const std::string& what) {
    return per_axis(c, what, dims, 1, [&](const DeckNode& e, const std::string& w) {
      return static_cast<int>(integer(e, w, 1, kMaxCells));
    });
  });
  check_total_size(*v.get("cells"), cfg.cells);
  const auto lengths = [&](const DeckNode& c, const std::string& what) {
    return per_axis(c, what, dims, 1.0, positive_number);
  };
  const auto points = [&](const DeckNode& c, const std::string& what) {
    return per_axis(c, what, dims, 0.0, number);
  };
  cfg.length = v.optional("length", cfg.length, lengths);
  cfg.origin = v.optional("origin", cfg.origin, points);
  check_spacing(v, cfg);
  if (const DeckNode* origin = v.get("origin")) check_origin_precision(*origin, cfg);
}

// ---- Materials: `material`, `materials` (docs/deck.md "Materials"; io/materials.hpp) --------

std::string deck_relative_path(const std::string& path, const Location& at);

const std::vector<std::string> kPhysicalKeys{"conductivity", "density", "specific_heat"};

// `material`: {diffusivity} (today's meaning: k = diffusivity, rho cp = 1; Poisson: k = 1) or
// the physical properties {conductivity, density, specific_heat} (SI).
void read_material(const DeckNode& n, Config& cfg) {
  const MapView v(n, "material", {"diffusivity", "conductivity", "density", "specific_heat"});
  Materials& m = cfg.material;
  const DeckNode* physical = nullptr;  // the first physical key given, in deck order
  std::string physical_key;
  for (std::size_t i = 0; i < n.keys.size() && !physical; ++i)
    if (std::find(kPhysicalKeys.begin(), kPhysicalKeys.end(), n.keys[i]) != kPhysicalKeys.end())
      physical = &n.items[i], physical_key = n.keys[i];
  if (!physical) {
    cfg.diffusivity = v.optional("diffusivity", cfg.diffusivity, positive_number);
    m.physical = false;
    m.conductivity = cfg.problem == ProblemType::Heat ? cfg.diffusivity : 1.0;
    return;
  }
  if (v.get("diffusivity")) {
    // Reported at whichever of the two comes second.
    const bool diffusivity_later = *n.index_of("diffusivity") > *n.index_of(physical_key);
    fail(v.key_loc(diffusivity_later ? "diffusivity" : physical_key),
         fmt::format("material: give either 'diffusivity' (k/(rho cp), today's meaning) or "
                     "'conductivity' with 'density' and 'specific_heat', not both ('{}' and "
                     "'diffusivity' are given)",
                     physical_key));
  }
  m.physical = true;
  if (!v.get("conductivity"))
    fail(v.loc(),
         fmt::format("missing required key 'material.conductivity' ('{}' needs it)", physical_key));
  m.conductivity = v.required("conductivity", positive_number);
  if (cfg.problem == ProblemType::Heat)
    for (const char* key : {"density", "specific_heat"})
      if (!v.get(key))
        fail(v.loc(), fmt::format("missing required key 'material.{}' (a heat problem with "
                                  "material.conductivity needs density and specific_heat; or "
                                  "give material.diffusivity alone)",
                                  key));
  m.density = v.optional("density", 1.0, positive_number);
  m.specific_heat = v.optional("specific_heat", 1.0, positive_number);
  cfg.diffusivity = m.conductivity / m.heat_capacity();
  if (!std::isfinite(cfg.diffusivity) || cfg.diffusivity <= 0)
    fail(v.loc(), fmt::format("material: the diffusivity k/(rho cp) = {:g}/({:g}*{:g}) = {:g} is "
                              "outside the usable range",
                              m.conductivity, m.density, m.specific_heat, cfg.diffusivity));
}

const std::vector<std::string> kRegionKinds{"box", "sphere", "cylinder", "file"};

// Upper corner above the lower one on every axis (a box region).
void check_corners(const MapView& v, int dims, const Region& r) {
  for (int d = 0; d < dims; ++d)
    if (r.upper[d] <= r.lower[d])
      fail(v.require("upper").items[d].loc,
           fmt::format("{}: upper corner must exceed the lower one on every axis, but upper[{}] "
                       "= {} <= lower[{}] = {}",
                       v.path("upper"), d, r.upper[d], d, r.lower[d]));
}

// A region's file: `path` (relative to the deck's directory), `dataset`, `property` (default:
// the dataset's name when it names a property).
void read_file_region(const MapView& v, Region& r, MaterialRegion& entry) {
  const DeckNode& path = v.require("path");
  r.path = deck_relative_path(text(path, v.path("path")), path.loc);
  r.dataset = v.required("dataset", text);
  if (const DeckNode* p = v.get("property")) {
    entry.file_property =
        static_cast<MaterialProperty>(choice_index(*p, v.path("property"), kPhysicalKeys));
    return;
  }
  const std::string name = r.dataset.substr(r.dataset.find_last_of('/') + 1);
  const auto it = std::find(kPhysicalKeys.begin(), kPhysicalKeys.end(), name);
  if (it == kPhysicalKeys.end())
    fail(v.loc(), fmt::format("missing required key '{}' (the dataset's name '{}' is not a "
                              "property: {})",
                              v.path("property"), name, join(kPhysicalKeys)));
  entry.file_property = static_cast<MaterialProperty>(it - kPhysicalKeys.begin());
}

// `region: {box | sphere | cylinder | file: {...}}`: exactly one kind.
Region read_region(const DeckNode& n, const std::string& path, const Config& cfg,
                   MaterialRegion& entry) {
  if (n.kind != Kind::Map)
    expected(n, path, fmt::format("a mapping with one region kind ({})", join(kRegionKinds)));
  for (std::size_t i = 0; i < n.keys.size(); ++i)
    if (std::find(kRegionKinds.begin(), kRegionKinds.end(), n.keys[i]) == kRegionKinds.end())
      fail(n.key_locs[i],
           fmt::format("unknown region kind '{}' in '{}'{}; valid kinds: {}", n.keys[i], path,
                       did_you_mean(n.keys[i], kRegionKinds), join(kRegionKinds)));
  if (n.keys.empty())
    fail(n.loc, fmt::format("{}: expected one region kind ({})", path, join(kRegionKinds)));
  if (n.keys.size() > 1)
    fail(n.key_locs[1], fmt::format("{}: give one region kind, not both '{}' and '{}'", path,
                                    n.keys[0], n.keys[1]));
  const std::string& kind = n.keys[0];
  const std::string kind_path = path + "." + kind;
  const DeckNode& body = n.items[0];
  const int dims = cfg.dimensions;
  const auto points = [&](const DeckNode& c, const std::string& what) {
    return per_axis(c, what, dims, 0.0, number);
  };
  Region r;
  r.kind = static_cast<RegionKind>(std::find(kRegionKinds.begin(), kRegionKinds.end(), kind) -
                                   kRegionKinds.begin());
  switch (r.kind) {
    case RegionKind::Box: {
      const MapView v(body, kind_path, {"lower", "upper"});
      r.lower = v.required("lower", points);
      r.upper = v.required("upper", points);
      check_corners(v, dims, r);
      break;
    }
    case RegionKind::Sphere: {
      const MapView v(body, kind_path, {"center", "radius"});
      r.center = v.required("center", points);
      r.radius = v.required("radius", positive_number);
      break;
    }
    case RegionKind::Cylinder: {
      const MapView v(body, kind_path, {"axis", "center", "radius"});
      const DeckNode& axis = v.require("axis");
      r.axis = static_cast<int>(choice_index(axis, v.path("axis"), {"x", "y", "z"}));
      if (dims == 2 && r.axis != 2)
        fail(axis.loc, fmt::format("{}: a 2D cylinder is a disk: its axis must be z, got '{}'",
                                   v.path("axis"), axis.scalar));
      const char* others[] = {"y, z", "x, z", "x, y"};
      r.center = v.required("center", [&](const DeckNode& c, const std::string& what) {
        const auto& items =
            list(c, what, 2, fmt::format(" (the axis' position in {})", others[r.axis]));
        return std::array<double, 3>{number(items[0], element(what, 0)),
                                     number(items[1], element(what, 1)), 0.0};
      });
      r.radius = v.required("radius", positive_number);
      break;
    }
    case RegionKind::File:
      read_file_region(MapView(body, kind_path, {"path", "dataset", "property"}), r, entry);
      break;
  }
  return r;
}

// A file region's data must be usable (HDF5, the grid's shape, positive finite values),
// reported at the key concerned.
void check_file_data(const DeckNode& region, const std::string& path, const Config& cfg,
                     const Region& r) {
  const DeckNode& file = region.items[0];
  try {
    check_file_region(cfg, r);
  } catch (const MaterialsError& e) {
    switch (e.part()) {
      case MaterialsError::Part::Kind:
        fail(region.key_locs[0], fmt::format("{}.file: {}", path, e.what()));
      case MaterialsError::Part::Path:
        fail(file.find("path")->loc, fmt::format("{}.file.path: {}", path, e.what()));
      case MaterialsError::Part::Dataset:
        fail(file.find("dataset")->loc, fmt::format("{}.file.dataset: {}", path, e.what()));
    }
    throw;
  } catch (const std::exception& e) {  // an HDF5 failure past the checks (a damaged file)
    fail(file.find("dataset")->loc, fmt::format("{}.file.dataset: {}", path, e.what()));
  }
}

// One `materials` entry: {region: {...}, conductivity, density, specific_heat}.
MaterialRegion read_material_entry(const DeckNode& n, const std::string& path, const Config& cfg) {
  if (n.kind != Kind::Map)
    expected(n, path, "a mapping {region: {...}, conductivity: ..., density: ..., ...}");
  const MapView v(n, path, {"region", "conductivity", "density", "specific_heat"});
  MaterialRegion e;
  const DeckNode& region = v.require("region");
  e.region = read_region(region, v.path("region"), cfg, e);
  const bool file = e.region.kind == RegionKind::File;
  for (const std::string& key : kPhysicalKeys) {
    if (!v.get(key)) continue;
    if (file)
      fail(v.key_loc(key), fmt::format("{}: a file region takes its values from its dataset "
                                       "(region.file.property); a value for every cell "
                                       "belongs in 'material'",
                                       v.path(key)));
    if (!cfg.material.physical && key != "conductivity")
      fail(v.key_loc(key), fmt::format("{}: regions set density and specific_heat only when "
                                       "'material' gives conductivity, density and "
                                       "specific_heat; with material.diffusivity a region sets "
                                       "conductivity alone (its diffusivity)",
                                       v.path(key)));
  }
  if (file) {
    if (!cfg.material.physical && e.file_property != MaterialProperty::Conductivity) {
      const DeckNode& body = region.items[0];
      const DeckNode* at = body.find("property") ? body.find("property") : body.find("dataset");
      fail(at->loc, fmt::format("{}.file: a {} file needs 'material' with conductivity, density "
                                "and specific_heat; with material.diffusivity a file region "
                                "gives conductivity alone",
                                v.path("region"), to_string(e.file_property)));
    }
    check_file_data(region, v.path("region"), cfg, e.region);
    return e;
  }
  e.conductivity = v.optional("conductivity", e.conductivity, positive_number);
  e.density = v.optional("density", e.density, positive_number);
  e.specific_heat = v.optional("specific_heat", e.specific_heat, positive_number);
  if (!e.conductivity && !e.density && !e.specific_heat)
    fail(v.loc(), fmt::format("{}: sets no property (give conductivity, density or "
                              "specific_heat)",
                              path));
  if (region_cell_count(cfg, e.region) == 0)
    fail(region.key_locs[0],
         fmt::format("{}.{}: holds no cell centre of the grid (a cell takes a region's "
                     "properties when its centre, origin + (i + 1/2) length/cells, lies inside)",
                     v.path("region"), region.keys[0]));
  return e;
}

// `materials`: a list of entries over the base material; later entries win.
void read_materials(const DeckNode& n, Config& cfg) {
  if (n.kind == Kind::Null) return;
  if (n.kind != Kind::Sequence)
    expected(n, "materials", "a list of entries {region: {...}, conductivity: ..., ...}");
  for (std::size_t i = 0; i < n.items.size(); ++i)
    cfg.material.regions.push_back(read_material_entry(n.items[i], element("materials", i), cfg));
}

// The explicit limit's formula and where it is reached, for messages (materials by region).
std::string cell_limit_text(const Config& cfg, const MaterialsDtLimit& l) {
  const auto& c = l.cell;
  return fmt::format(
      "the smallest per-cell limit rho*cp / sum_f K_f/h_f^2, K_f the harmonic "
      "mean of the conductivities across face f; reached at cell ({}, {}{}), "
      "where rho*cp = {:g} and sum_f K_f/h_f^2 = {:g}",
      c[0], c[1], cfg.dimensions == 3 ? fmt::format(", {}", c[2]) : "", l.heat_capacity,
      l.face_sum);
}

// Chooses dt and steps; see docs/deck.md "Time resolution". Step counters are 64-bit, so runs
// of more than 2^31 steps are fine; more than kMaxSteps is refused as a surely mistaken deck.
void resolve_steps(const MapView& v, const DeckNode* end, const DeckNode* steps, Config& cfg) {
  constexpr std::int64_t kMaxSteps = 1000000000000000;  // 1e15
  if (end && steps) fail(v.key_loc("steps"), "time: give either 'end' or 'steps', not both");
  if (!end && !steps) fail(v.loc(), "missing required key 'time.end' (or 'time.steps')");
  if (steps) {
    cfg.steps = integer(*steps, v.path("steps"), 0, kMaxSteps);
    cfg.end_time = static_cast<double>(cfg.steps) * cfg.dt;
    if (!std::isfinite(cfg.end_time))
      fail(steps->loc, fmt::format("time.steps: {} steps of dt = {:g} overflow the end time",
                                   cfg.steps, cfg.dt));
    return;
  }
  cfg.end_time = nonnegative_number(*end, v.path("end"));
  double n = std::ceil(cfg.end_time / cfg.dt - 1e-9);
  if (cfg.end_time > 0) n = std::max(n, 1.0);  // end/dt below 1e-9 (tiny alpha) is one step
  if (!(n <= static_cast<double>(kMaxSteps)))  // also catches NaN
    fail(end->loc, fmt::format("time.end: {} needs {:g} steps of dt = {:g} (more than {:g})",
                               cfg.end_time, n, cfg.dt, static_cast<double>(kMaxSteps)));
  cfg.steps = static_cast<std::int64_t>(std::max(n, 0.0));
  if (cfg.steps > 0) cfg.dt = cfg.end_time / static_cast<double>(cfg.steps);
}

void read_time(const DeckNode& n, Config& cfg) {
  const MapView v(n, "time", {"end", "steps", "dt", "safety", "scheme"});
  if (cfg.problem != ProblemType::Heat) return;  // steady problems ignore the section
  cfg.safety = v.optional("safety", cfg.safety, fraction);
  cfg.scheme = v.optional("scheme", cfg.scheme, [](const DeckNode& e, const std::string& w) {
    return choice(e, w,
                  {TimeScheme::Explicit, TimeScheme::ImplicitEuler, TimeScheme::CrankNicolson});
  });
  const bool implicit = cfg.scheme != TimeScheme::Explicit;
  const GridDesc g = cfg.grid();
  // Uniform materials: stable_dt(g, cfg.diffusivity); regions: the per-cell limit.
  const MaterialsDtLimit limit = materials_dt_limit(cfg);
  const double dt_max = limit.dt_max;
  // Extreme diffusivities or spacings make the limit underflow to 0 or overflow to inf.
  if ((!std::isfinite(dt_max) || dt_max <= 0) && !cfg.material.uniform())
    fail(v.loc(), fmt::format("time: the stability limit dt_max = {:g} ({}) is not a usable "
                              "time step; check the conductivities, densities and specific "
                              "heats of material and materials, grid.length and grid.cells",
                              dt_max, cell_limit_text(cfg, limit)));
  if (!std::isfinite(dt_max) || dt_max <= 0)
    fail(v.loc(), fmt::format("time: the stability limit dt_max = 1/(2*alpha*sum_d 1/h_d^2) = "
                              "{:g} is not a usable time step (alpha = {:g}, h = [{:g}, {:g}{}]); "
                              "check material.diffusivity, grid.length and grid.cells",
                              dt_max, cfg.diffusivity, g.hx, g.hy,
                              g.dims == 3 ? fmt::format(", {:g}", g.hz) : ""));
  const DeckNode* dt = v.get("dt");
  cfg.dt_auto = !dt || is_auto(*dt);
  if (cfg.dt_auto) {
    cfg.dt = cfg.safety * dt_max;
  } else {
    cfg.dt = auto_or(*dt, v.path("dt"), "a positive number", 0.0, positive_number);
    if (!implicit && cfg.dt > dt_max * (1 + 1e-12) && !cfg.material.uniform())
      fail(dt->loc, fmt::format("time.dt: {} exceeds the stability limit dt_max = {:.6g} ({}); "
                                "use a smaller dt, dt: auto, or an implicit time.scheme",
                                dt->scalar, dt_max, cell_limit_text(cfg, limit)));
    if (!implicit && cfg.dt > dt_max * (1 + 1e-12))
      fail(dt->loc,
           fmt::format("time.dt: {} exceeds the stability limit dt_max = {:.6g} (dt_max = "
                       "1/(2*alpha*sum_d 1/h_d^2) with alpha = {}, h = [{:g}, {:g}{}]); use a "
                       "smaller dt, dt: auto, or an implicit time.scheme",
                       dt->scalar, dt_max, cfg.diffusivity, g.hx, g.hy,
                       g.dims == 3 ? fmt::format(", {:g}", g.hz) : ""));
  }
  resolve_steps(v, v.get("end"), v.get("steps"), cfg);
}

std::vector<std::string> shape_keys(ShapeType type) {
  switch (type) {
    case ShapeType::None:
      return {"type"};
    case ShapeType::Uniform:
      return {"type", "value"};
    case ShapeType::Gaussian:
      return {"type", "amplitude", "center", "width", "value"};
    case ShapeType::Box:
      return {"type", "value", "lower", "upper"};
    case ShapeType::Sine:
      return {"type", "amplitude"};
    case ShapeType::File:
      return {"type", "path", "dataset"};
  }
  return {};
}

template <typename Strength>
void read_box(const MapView& v, int dims, Shape& s, Strength&& strength) {
  const auto points = [&](const DeckNode& c, const std::string& what) {
    return per_axis(c, what, dims, 0.0, number);
  };
  s.value = v.required("value", [&](const DeckNode& e, const std::string& w) {
    return strength(e, w, s.value_table);
  });
  s.lower = v.required("lower", points);
  s.upper = v.required("upper", points);
  for (int d = 0; d < dims; ++d)
    if (s.upper[d] <= s.lower[d])
      fail(v.require("upper").items[d].loc,
           fmt::format("{}: upper corner must exceed the lower one on every axis, but upper[{}] "
                       "= {} <= lower[{}] = {}",
                       v.path("upper"), d, s.upper[d], d, s.lower[d]));
}

// A box holding no cell centre (wholly outside the domain, or between two centres) sets no
// cell: almost surely a mistake in its coordinates (lower/upper are physical, origin
// included). A cell belongs to the box when lower <= centre <= upper on every axis
// (solvers/problem: shape_value).
void check_box_has_cells(const DeckNode& n, const std::string& path, const Shape& s,
                         const Config& cfg) {
  if (s.type != ShapeType::Box) return;
  static const char* const kAxes = "xyz";
  for (int d = 0; d < cfg.dimensions; ++d) {
    const double h = cfg.length[d] / cfg.cells[d];
    const auto centre = [&](std::int64_t i) { return cfg.origin[d] + (double(i) + 0.5) * h; };
    // The first centre at or above lower, then whether it is within upper.
    double first = std::ceil((s.lower[d] - cfg.origin[d]) / h - 0.5);
    first = std::min(std::max(first, 0.0), double(cfg.cells[d]));
    auto i = static_cast<std::int64_t>(first);
    while (i > 0 && centre(i - 1) >= s.lower[d]) --i;  // rounding of the division
    while (i < cfg.cells[d] && centre(i) < s.lower[d]) ++i;
    if (i < cfg.cells[d] && centre(i) <= s.upper[d]) continue;
    const DeckNode* lower = n.find("lower");
    fail(lower ? lower->loc : n.loc,
         fmt::format("{}: the box [{:g}, {:g}] on the {} axis holds no cell centre of the grid "
                     "(centres from {:g} to {:g}): it would set no cell",
                     path, s.lower[d], s.upper[d], kAxes[d], centre(0), centre(cfg.cells[d] - 1)));
  }
}

// What a shape describes: the initial field (no `none`, no tables, `file` allowed), the deck's
// one `source` mapping (`none` allowed), or an entry of a `source` list.
enum class ShapeUse { Initial, Source, SourceEntry };

// initial: {type: file, path, dataset}: the path relative to the deck's directory, the dataset
// given or (a heatsolve series) its last step's field; the file is checked here.
void read_file_shape(const MapView& v, const Config& cfg, Shape& s) {
  const DeckNode& path = v.require("path");
  s.path = deck_relative_path(text(path, v.path("path")), path.loc);
  const DeckNode* dataset = v.get("dataset");
  const auto at = [&](InitialFieldError::Part part) -> const Location& {
    switch (part) {
      case InitialFieldError::Part::Kind:
        return v.get("type")->loc;
      case InitialFieldError::Part::Path:
        return path.loc;
      case InitialFieldError::Part::Dataset:
        return dataset ? dataset->loc : path.loc;
      case InitialFieldError::Part::Mapping:
        break;
    }
    return v.loc();
  };
  const auto key = [&](InitialFieldError::Part part) {
    return v.path(part == InitialFieldError::Part::Dataset && dataset ? "dataset"
                  : part == InitialFieldError::Part::Kind             ? "type"
                                                                      : "path");
  };
  try {
    s.dataset = dataset ? text(*dataset, v.path("dataset")) : default_initial_dataset(s.path);
    check_initial_file(cfg, s);
  } catch (const InitialFieldError& e) {
    if (e.part() == InitialFieldError::Part::Mapping)
      fail(v.loc(), fmt::format("missing required key '{}': {}", v.path("dataset"), e.what()));
    fail(at(e.part()), fmt::format("{}: {}", key(e.part()), e.what()));
  } catch (const DeckError&) {
    throw;
  } catch (const std::exception& e) {  // an HDF5 failure past the checks (a damaged file)
    fail(at(InitialFieldError::Part::Dataset),
         fmt::format("{}: {}", key(InitialFieldError::Part::Dataset), e.what()));
  }
}

Shape read_shape(const DeckNode& n, const std::string& path, const Config& cfg, ShapeUse use) {
  const int dims = cfg.dimensions;
  std::initializer_list<ShapeType> source_types{
      ShapeType::None, ShapeType::Uniform, ShapeType::Gaussian, ShapeType::Box, ShapeType::Sine};
  std::initializer_list<ShapeType> entry_types{ShapeType::Uniform, ShapeType::Gaussian,
                                               ShapeType::Box, ShapeType::Sine};
  std::initializer_list<ShapeType> initial_types{ShapeType::Uniform, ShapeType::Gaussian,
                                                 ShapeType::Box, ShapeType::Sine, ShapeType::File};
  Shape s;
  s.type = choice(type_of(n, path), path + ".type",
                  use == ShapeUse::Initial  ? initial_types
                  : use == ShapeUse::Source ? source_types
                                            : entry_types);
  const MapView v(n, path, shape_keys(s.type));
  const auto points = [&](const DeckNode& c, const std::string& what) {
    return per_axis(c, what, dims, 0.0, number);
  };
  // A source's value and amplitude may be tables over time; the initial field's are numbers.
  const auto strength = [&](const DeckNode& e, const std::string& w,
                            std::optional<TimeTable>& table) {
    if (use == ShapeUse::Initial) return number(e, w);
    return number_or_table(e, w, cfg.problem, table);
  };
  const auto value = [&](const DeckNode& e, const std::string& w) {
    return strength(e, w, s.value_table);
  };
  const auto amplitude = [&](const DeckNode& e, const std::string& w) {
    return strength(e, w, s.amplitude_table);
  };
  switch (s.type) {
    case ShapeType::None:
      break;
    case ShapeType::Uniform:
      s.value = v.required("value", value);
      break;
    case ShapeType::Sine:
      s.amplitude = v.required("amplitude", amplitude);
      break;
    case ShapeType::Gaussian:
      s.amplitude = v.required("amplitude", amplitude);
      s.center = v.required("center", points);
      s.width = v.required("width", positive_number);
      s.value = v.optional("value", 0.0, value);
      break;
    case ShapeType::Box:
      read_box(v, dims, s, strength);
      break;
    case ShapeType::File:
      read_file_shape(v, cfg, s);
      break;
  }
  return s;
}

// `source`: one shape mapping (cfg.source; also cfg.sources[0] unless `none`) or a list of
// shapes, summed (cfg.sources; cfg.source is the first).
void read_sources(const DeckNode& n, Config& cfg) {
  if (n.kind != Kind::Sequence) {
    cfg.source = read_shape(n, "source", cfg, ShapeUse::Source);
    check_box_has_cells(n, "source", cfg.source, cfg);
    if (cfg.source.type != ShapeType::None) cfg.sources = {cfg.source};
    return;
  }
  for (std::size_t i = 0; i < n.items.size(); ++i) {
    const std::string path = element("source", i);
    if (n.items[i].kind != Kind::Map)
      expected(n.items[i], path, "a mapping {type: ..., ...} (one source term)");
    cfg.sources.push_back(read_shape(n.items[i], path, cfg, ShapeUse::SourceEntry));
    check_box_has_cells(n.items[i], path, cfg.sources.back(), cfg);
  }
  if (!cfg.sources.empty()) cfg.source = cfg.sources.front();
}

// `convective`: -k du/dn = h (u - ambient); FaceBC value = ambient, coeff = h.
void read_convective_face(const MapView& v, FaceBC& f, ProblemType problem,
                          std::optional<TimeTable>& table) {
  f.coeff = v.required("h", nonnegative_number);
  f.value = v.required("ambient", [&](const DeckNode& e, const std::string& w) {
    return number_or_table(e, w, problem, table);
  });
}

// One face's condition; `table` receives the table over time of its value (dirichlet value,
// neumann flux, convective ambient, heat_flux value) when the deck gave one.
FaceBC read_face(const DeckNode& n, const std::string& path, ProblemType problem,
                 std::optional<TimeTable>& table) {
  FaceBC f;
  table.reset();
  f.type = choice(type_of(n, path), path + ".type",
                  {BoundaryType::Dirichlet, BoundaryType::Neumann, BoundaryType::Periodic,
                   BoundaryType::Convective, BoundaryType::HeatFlux});
  const auto value = [&](const DeckNode& e, const std::string& w) {
    return number_or_table(e, w, problem, table);
  };
  switch (f.type) {
    case BoundaryType::Dirichlet:
      f.value = MapView(n, path, {"type", "value"}).optional("value", 0.0, value);
      break;
    case BoundaryType::Neumann:
      f.value = MapView(n, path, {"type", "flux"}).optional("flux", 0.0, value);
      break;
    case BoundaryType::Convective:
      read_convective_face(MapView(n, path, {"type", "h", "ambient"}), f, problem, table);
      break;
    case BoundaryType::HeatFlux:
      f.value = MapView(n, path, {"type", "value"}).optional("value", 0.0, value);
      break;
    default:
      MapView(n, path, {"type"});
      break;
  }
  return f;
}

void check_periodic_pairs(const BoundaryFaces& faces, const std::array<Location, 6>& where,
                          int dims) {
  for (int axis = 0; axis < dims; ++axis) {
    const int lo = 2 * axis, hi = lo + 1;
    const bool p_lo = faces[lo].type == BoundaryType::Periodic;
    const bool p_hi = faces[hi].type == BoundaryType::Periodic;
    if (p_lo == p_hi) continue;
    const int periodic = p_lo ? lo : hi, other = p_lo ? hi : lo;
    fail(where[periodic],
         fmt::format("boundary.{}: periodic must be set on both {} and {}, but {} is {}",
                     kFaceNames[periodic], kFaceNames[lo], kFaceNames[hi], kFaceNames[other],
                     to_string(faces[other].type)));
  }
}

// A convective or heat-flux face opposite a periodic one: the axis wraps, it has no face.
void check_flux_faces(const BoundaryFaces& faces, const std::array<Location, 6>& where, int dims) {
  for (int f = 0; f < 2 * dims; ++f) {
    const BoundaryType t = faces[f].type;
    if (t != BoundaryType::Convective && t != BoundaryType::HeatFlux) continue;
    const int other = f ^ 1;
    if (faces[other].type == BoundaryType::Periodic)
      fail(where[f], fmt::format("boundary.{}: a {} face cannot lie on a periodic axis ({} is "
                                 "periodic)",
                                 kFaceNames[f], to_string(t), kFaceNames[other]));
  }
}

void read_boundary(const DeckNode& n, Config& cfg) {
  std::vector<std::string> valid{"all"};
  valid.insert(valid.end(), kFaceNames.begin(), kFaceNames.end());
  const MapView v(n, "boundary", valid);
  FaceBC all;
  std::optional<TimeTable> all_table;
  std::array<Location, 6> where;
  where.fill(v.loc());
  if (const DeckNode* a = v.get("all")) {
    all = read_face(*a, v.path("all"), cfg.problem, all_table);
    where.fill(a->loc);
  }
  cfg.boundary.fill(all);
  cfg.boundary_tables.fill(all_table);
  for (std::size_t i = 0; i < kFaceNames.size(); ++i) {
    const DeckNode* face = v.get(kFaceNames[i]);
    if (!face) continue;
    if (static_cast<int>(i) >= 2 * cfg.dimensions)
      fail(v.key_loc(kFaceNames[i]),
           fmt::format("boundary.{}: a 2D problem has no z faces", kFaceNames[i]));
    cfg.boundary[i] = read_face(*face, v.path(kFaceNames[i]), cfg.problem, cfg.boundary_tables[i]);
    where[i] = face->loc;
  }
  check_flux_faces(cfg.boundary, where, cfg.dimensions);
  check_periodic_pairs(cfg.boundary, where, cfg.dimensions);
}

void read_solver(const DeckNode& n, Config& cfg) {
  const MapView v(n, "solver",
                  {"method", "tolerance", "max_iterations", "check_every", "singular", "anderson",
                   "multigrid"});
  if (const DeckNode* m = v.get("method"))
    cfg.method = choice(*m, v.path("method"),
                        {SolverMethod::Jacobi, SolverMethod::Anderson, SolverMethod::Multigrid,
                         SolverMethod::MultigridCG});
  if (cfg.problem == ProblemType::Heat && cfg.scheme != TimeScheme::Explicit) {
    // Implicit steps are solved by multigrid; a deck without a method gets it.
    if (const DeckNode* m = v.get("method")) {
      if (cfg.method != SolverMethod::Multigrid && cfg.method != SolverMethod::MultigridCG)
        fail(m->loc, fmt::format("solver.method: time.scheme {} solves each step by multigrid: "
                                 "expected 'multigrid' or 'mg-cg', got '{}'",
                                 to_string(cfg.scheme), m->scalar));
    } else {
      cfg.method = SolverMethod::Multigrid;
    }
  }
  cfg.tolerance = v.optional("tolerance", cfg.tolerance, positive_number);
  cfg.max_iterations = v.optional("max_iterations", cfg.max_iterations, positive_integer);
  cfg.check_every = v.optional("check_every", cfg.check_every, positive_int);
  cfg.singular = v.optional("singular", cfg.singular, [](const DeckNode& e, const std::string& w) {
    return choice(e, w, {SingularPolicy::Refuse, SingularPolicy::CompatibleMean});
  });
  if (const DeckNode* a = v.get("anderson")) {
    const MapView av(*a, v.path("anderson"), {"depth", "damping", "every"});
    cfg.anderson_depth = av.optional("depth", cfg.anderson_depth, positive_int);
    cfg.anderson_damping = av.optional("damping", cfg.anderson_damping, fraction);
    cfg.anderson_every =
        av.optional("every", cfg.anderson_every, [](const DeckNode& e, const std::string& w) {
          return static_cast<int>(integer(e, w, 1, 1000));
        });
  }
  // Materials by region: constant prolongation by default. Linear interpolation of a
  // correction across a jump in conductivity is wrong where the solution kinks; with it mg-cg
  // needed 45 iterations on a 64^3 sphere of k 1000 in k 1, with constant ones 16 (docs/deck.md).
  if (!cfg.material.uniform()) cfg.multigrid.prolongation = Prolongation::Constant;
  if (const DeckNode* mg = v.get("multigrid")) {
    const MapView mv(*mg, v.path("multigrid"),
                     {"cycle", "smoother", "pre_sweeps", "post_sweeps", "prolongation",
                      "coarse_tolerance", "agglomerate_below", "fused"});
    MultigridSettings& s = cfg.multigrid;
    s.cycle = mv.optional("cycle", s.cycle, [](const DeckNode& e, const std::string& w) {
      return choice(e, w, {MultigridCycle::V, MultigridCycle::F, MultigridCycle::FMG});
    });
    s.smoother = mv.optional("smoother", s.smoother, [](const DeckNode& e, const std::string& w) {
      return choice(e, w, {MultigridSmoother::Jacobi, MultigridSmoother::Chebyshev});
    });
    const auto sweeps = [](const DeckNode& e, const std::string& w) {
      return static_cast<int>(integer(e, w, 0, 64));
    };
    s.pre_sweeps = mv.optional("pre_sweeps", s.pre_sweeps, sweeps);
    s.post_sweeps = mv.optional("post_sweeps", s.post_sweeps, sweeps);
    if (s.pre_sweeps + s.post_sweeps == 0)
      fail(mv.loc(), fmt::format("{}: pre_sweeps + post_sweeps must be at least 1 (a cycle "
                                 "without smoothing does not converge)",
                                 v.path("multigrid")));
    s.prolongation =
        mv.optional("prolongation", s.prolongation, [](const DeckNode& e, const std::string& w) {
          return choice(e, w, {Prolongation::Linear, Prolongation::Constant});
        });
    s.coarse_tolerance = mv.optional("coarse_tolerance", s.coarse_tolerance, fraction);
    s.agglomerate_below = mv.optional("agglomerate_below", s.agglomerate_below,
                                      [](const DeckNode& e, const std::string& w) {
                                        return static_cast<long long>(nonnegative_integer(e, w));
                                      });
    s.fused = mv.optional("fused", s.fused, boolean);
  }
}

// execution.backend: cuda where no CUDA device can be used is an input error on this machine
// (exit 2 at the key, before any output), not a failure of the run.
void check_cuda_device(const MapView& v, const Config& cfg, const DeckFeatures& features) {
  if (cfg.backend != BackendKind::Cuda || !features.cuda_device_problem) return;
  const std::string why = features.cuda_device_problem();
  if (!why.empty())
    fail(v.get("backend")->loc,
         fmt::format("execution.backend: cuda: {}; use backend: auto (the CPU when there is no "
                     "GPU) or cpu",
                     why));
}

// execution.kernel and execution.block against the CUDA shapes this build compiles
// (core/stencil_policies.hpp, the table the launchers instantiate): a named variant that has no
// shape for the deck's dimension and precision, or a block it does not compile, is a deck error
// here rather than a BackendError once the run has started. The CPU backend has one stencil
// (kernel and block do not apply); `auto` and `temporal` take the block where a variant compiles
// it and its default elsewhere. A variant the run's GPU cannot run (2.5d-tma below sm_90) is
// checked when `features` can name that GPU (heatsolve run), not by validate.
void check_stencil_choice(const MapView& v, const Config& cfg, const DeckFeatures& features) {
  if (cfg.backend == BackendKind::Cpu) return;
  const std::optional<StencilVariant> variant = parse_stencil_variant(cfg.kernel);
  if (!variant) return;
  const int bytes = cfg.precision == Precision::Float ? 4 : 8;
  const auto at = [&v](const char* key) { return v.get(key) ? v.key_loc(key) : v.loc(); };
  if (compiled_stencil_shapes(*variant, cfg.dimensions, bytes).empty())
    fail(at("kernel"),
         "execution.kernel: " + stencil_block_error(*variant, cfg.dimensions, bytes, cfg.block));
  if (!resolve_stencil_block(*variant, cfg.dimensions, bytes, cfg.block))
    fail(at("block"),
         "execution.block: " + stencil_block_error(*variant, cfg.dimensions, bytes, cfg.block));
  const int need = stencil_variant_row(*variant).min_compute_capability;
  if (need == 0 || !features.compute_capability) return;
  const int have = features.compute_capability();
  if (have > 0 && have < need)
    fail(at("kernel"),
         fmt::format("execution.kernel: '{}' needs a GPU of compute capability {}.{} or newer; "
                     "this run's GPU has {}.{} (kernel: auto picks among the variants it can run)",
                     cfg.kernel, need / 10, need % 10, have / 10, have % 10));
}

// execution.precision: mixed solves multigrid's correction equation in float: it needs a
// multigrid solve (a Poisson deck's multigrid or mg-cg, or implicit heat steps).
void check_mixed_precision(const MapView& v, const Config& cfg) {
  const bool implicit = cfg.problem == ProblemType::Heat && cfg.scheme != TimeScheme::Explicit;
  const bool multigrid =
      cfg.problem == ProblemType::Poisson &&
      (cfg.method == SolverMethod::Multigrid || cfg.method == SolverMethod::MultigridCG);
  if (implicit || multigrid) return;
  const std::string what = cfg.problem == ProblemType::Heat
                               ? "explicit heat steps"
                               : fmt::format("solver.method {}", to_string(cfg.method));
  fail(v.get("precision")->loc,
       fmt::format("execution.precision: mixed solves multigrid's correction equation in float: "
                   "it applies to solver.method multigrid or mg-cg (poisson) and to implicit heat "
                   "steps, not to {}; use float or double",
                   what));
}

void read_execution(const DeckNode& n, Config& cfg, const DeckFeatures& features) {
  const MapView v(n, "execution",
                  {"backend", "precision", "kernel", "block", "time_block", "decomposition", "halo",
                   "overlap", "walltime"});
  const auto get = [&](const char* key, auto fallback, auto convert) {
    return v.optional(key, fallback, convert);
  };
  cfg.backend = get("backend", cfg.backend, [](const DeckNode& e, const std::string& w) {
    return choice(e, w, {BackendKind::Auto, BackendKind::Cpu, BackendKind::Cuda});
  });
  check_cuda_device(v, cfg, features);
  // mixed: double fields, the multigrid correction equation in float (Config::mixed_precision).
  const std::vector<std::string> precisions{"float", "double", "mixed"};
  const std::size_t precision =
      get("precision", std::size_t(1),
          [&](const DeckNode& e, const std::string& w) { return choice_index(e, w, precisions); });
  cfg.precision = precision == 0 ? Precision::Float : Precision::Double;
  cfg.mixed_precision = precision == 2;
  if (cfg.mixed_precision) check_mixed_precision(v, cfg);
  cfg.kernel = get("kernel", cfg.kernel, [](const DeckNode& e, const std::string& w) {
    return kKernelNames[choice_index(e, w, kKernelNames)];
  });
  const auto positive_ints = [](int dims) {
    return [dims](const DeckNode& e, const std::string& w) {
      return per_axis(e, w, dims, dims == 3 ? 0 : 1, positive_int);
    };
  };
  cfg.block = get("block", cfg.block, [&](const DeckNode& e, const std::string& w) {
    return auto_or(e, w, "a list of 3 positive integers", std::array<int, 3>{0, 0, 0},
                   [](const DeckNode& b, const std::string& bw) {
                     return per_axis(b, bw, 3, 0, positive_int);
                   });
  });
  cfg.time_block = get("time_block", cfg.time_block, [](const DeckNode& e, const std::string& w) {
    return auto_or(e, w, "a positive integer", 0, positive_int);
  });
  cfg.decomposition =
      get("decomposition", cfg.decomposition, [&](const DeckNode& e, const std::string& w) {
        return auto_or(e, w, "a list of positive integers", std::array<int, 3>{0, 0, 0},
                       positive_ints(cfg.dimensions));
      });
  cfg.halo = get("halo", cfg.halo, [](const DeckNode& e, const std::string& w) {
    return choice(e, w, {HaloMode::Auto, HaloMode::Staged, HaloMode::CudaAware, HaloMode::Ipc});
  });
  cfg.overlap = get("overlap", cfg.overlap, boolean);
  cfg.walltime_seconds = get("walltime", cfg.walltime_seconds, walltime);
  check_stencil_choice(v, cfg, features);
}

std::vector<std::string> formats(const DeckNode& n, const std::string& what) {
  const std::vector<std::string> valid{"hdf5", "vtk"};
  std::vector<std::string> out;
  const auto& items = list(n, what);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string& f = valid[choice_index(items[i], element(what, i), valid)];
    if (std::find(out.begin(), out.end(), f) != out.end())
      fail(items[i].loc, fmt::format("{}: '{}' is listed twice", element(what, i), f));
    out.push_back(f);
  }
  return out;
}

// A file named in the deck: relative to the deck file's directory, so that a deck and its
// scripts move together; one from a --set override is typed on the command line, so it is
// relative to the working directory.
std::string deck_relative_path(const std::string& path, const Location& at) {
  const std::filesystem::path p(path);
  if (p.is_absolute() || !at.override_text.empty()) return path;
  return (std::filesystem::path(at.source).parent_path() / p).lexically_normal().string();
}

// output.catalyst: one {script, every} mapping or a list of them. The form is checked first,
// then whether this build has Catalyst, then that the scripts exist (exit 2 before any step).
std::vector<CatalystScript> catalyst_scripts(const DeckNode& n, const Location& key_loc,
                                             const DeckFeatures& features) {
  const std::string what = "output.catalyst";
  std::vector<std::pair<const DeckNode*, std::string>> entries;  // node, its path
  if (n.kind == Kind::Map) {
    entries.emplace_back(&n, what);
  } else if (n.kind == Kind::Sequence) {
    for (std::size_t i = 0; i < n.items.size(); ++i)
      entries.emplace_back(&n.items[i], element(what, i));
  } else {
    expected(n, what, "a mapping {script: file.py, every: N} or a list of them");
  }
  std::vector<CatalystScript> scripts;
  std::vector<const DeckNode*> script_nodes;
  for (const auto& [entry, path] : entries) {
    if (entry->kind != Kind::Map) expected(*entry, path, "a mapping {script: file.py, every: N}");
    const MapView v(*entry, path, {"script", "every"});
    const DeckNode& script = v.require("script");
    CatalystScript s;
    s.path = deck_relative_path(text(script, v.path("script")), script.loc);
    s.every = v.optional("every", s.every, positive_integer);
    scripts.push_back(s);
    script_nodes.push_back(&script);
  }
  if (!scripts.empty() && !features.catalyst)
    fail(key_loc,
         "output.catalyst: this heatsolve was built without ParaView Catalyst (in-situ "
         "output needs ParaView's development files at build time; `heatsolve info` "
         "says what a build has)");
  for (std::size_t i = 0; i < scripts.size(); ++i) {
    std::error_code ec;
    const std::string& file = scripts[i].path;
    const DeckNode& node = *script_nodes[i];
    const std::string resolved =
        file == node.scalar ? "" : fmt::format(" (resolved to '{}')", file);
    if (!std::filesystem::is_regular_file(file, ec))
      fail(node.loc,
           fmt::format("{}.script: no such file '{}'{}", entries[i].second, node.scalar, resolved));
    if (!std::ifstream(file))
      fail(node.loc, fmt::format("{}.script: cannot read '{}'{}: {}", entries[i].second,
                                 node.scalar, resolved, std::strerror(errno)));
  }
  return scripts;
}

// output.compression: {type: none | deflate | zfp} and the keys of that type.
Compression read_compression(const DeckNode& n, const std::string& path,
                             const DeckFeatures& features) {
  Compression c;
  const DeckNode& type = type_of(n, path);
  c.type = choice(type, path + ".type",
                  {CompressionType::None, CompressionType::Deflate, CompressionType::Zfp});
  switch (c.type) {
    case CompressionType::None:
      MapView(n, path, {"type"});
      break;
    case CompressionType::Deflate:
      c.level = MapView(n, path, {"type", "level"})
                    .optional("level", c.level, [](const DeckNode& e, const std::string& w) {
                      return static_cast<int>(integer(e, w, 1, 9));
                    });
      break;
    case CompressionType::Zfp:
      c.tolerance = MapView(n, path, {"type", "tolerance"}).required("tolerance", positive_number);
      if (!features.zfp)
        fail(type.loc, fmt::format("{}.type: zfp is not available in this heatsolve: it was built "
                                   "without the ZFP library (Debian: libzfp-dev; `heatsolve info` "
                                   "says what a build has); type: deflate is lossless",
                                   path));
      break;
  }
  return c;
}

// A time interval of output: positive; a steady problem has no simulated time.
double output_interval(const DeckNode& n, const std::string& what, const Config& cfg,
                       const char* instead) {
  const double t = positive_number(n, what);
  if (cfg.problem != ProblemType::Heat)
    fail(n.loc, fmt::format("{}: a steady problem has no simulated time; use {} (iterations)", what,
                            instead));
  return t;
}

// output.diagnostics: {every: N, interval: t} (either or both).
DiagnosticsOutput read_diagnostics(const DeckNode& n, const std::string& path, const Config& cfg) {
  if (n.kind != Kind::Map) expected(n, path, "a mapping {every: N, interval: t}");
  const MapView v(n, path, {"every", "interval"});
  DiagnosticsOutput d;
  d.every = v.optional("every", d.every, positive_integer);
  d.interval = v.optional("interval", d.interval, [&](const DeckNode& e, const std::string& w) {
    return output_interval(e, w, cfg, "output.diagnostics.every");
  });
  if (!d.enabled())
    fail(n.loc, fmt::format("{}: give 'every' (steps or iterations) or 'interval' (simulated "
                            "time), or both",
                            path));
  return d;
}

// output.probes: [{name, point}]: a diagnostics.csv column per probe, the value of the cell
// whose extent holds the point (a point on a face between two cells: the upper one; on the
// domain's upper face: the last cell).
std::vector<Probe> read_probes(const DeckNode& n, const std::string& path, const Config& cfg) {
  if (n.kind != Kind::Sequence) expected(n, path, "a list of {name: ..., point: [x, y, z]}");
  std::vector<Probe> probes;
  for (std::size_t i = 0; i < n.items.size(); ++i) {
    const std::string at = element(path, i);
    const DeckNode& entry = n.items[i];
    if (entry.kind != Kind::Map) expected(entry, at, "a mapping {name: ..., point: [x, y, z]}");
    const MapView v(entry, at, {"name", "point"});
    Probe p;
    const DeckNode& name = v.require("name");
    p.name = text(name, v.path("name"));
    if (!std::all_of(p.name.begin(), p.name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; }))
      fail(name.loc, fmt::format("{}: '{}' may contain only letters, digits and '_' (it names "
                                 "the column probe_{})",
                                 v.path("name"), p.name, p.name));
    for (std::size_t j = 0; j < probes.size(); ++j)
      if (probes[j].name == p.name)
        fail(name.loc, fmt::format("{}: the name '{}' is already {}", v.path("name"), p.name,
                                   element(path, j)));
    const DeckNode& point = v.require("point");
    p.point = per_axis(point, v.path("point"), cfg.dimensions, 0.0, number);
    for (int d = 0; d < cfg.dimensions; ++d) {
      const double lo = cfg.origin[d], hi = cfg.origin[d] + cfg.length[d];
      const double x = p.point[d];
      if (!(x >= lo && x <= hi))
        fail(point.items[std::size_t(d)].loc,
             fmt::format("{}: {:g} lies outside the domain [{:g}, {:g}] on the {} axis",
                         element(v.path("point"), std::size_t(d)), x, lo, hi, "xyz"[d]));
      const double h = cfg.length[d] / cfg.cells[d];
      const double i = std::floor((x - lo) / h);
      p.cell[d] = static_cast<int>(std::min(std::max(i, 0.0), double(cfg.cells[d] - 1)));
    }
    probes.push_back(p);
  }
  return probes;
}

void read_output(const DeckNode& n, Config& cfg, const DeckFeatures& features) {
  const MapView v(n, "output",
                  {"directory", "every", "formats", "overwrite", "checkpoint_every", "catalyst",
                   "compression", "interval", "diagnostics", "probes"});
  cfg.output_directory = v.optional("directory", cfg.output_directory, text);
  cfg.output_every = v.optional("every", cfg.output_every, nonnegative_integer);
  cfg.output_interval =
      v.optional("interval", cfg.output_interval, [&](const DeckNode& e, const std::string& w) {
        return output_interval(e, w, cfg, "output.every");
      });
  cfg.formats = v.optional("formats", cfg.formats, formats);
  cfg.overwrite = v.optional("overwrite", cfg.overwrite, boolean);
  cfg.checkpoint_every = v.optional("checkpoint_every", cfg.checkpoint_every, nonnegative_integer);
  if (const DeckNode* c = v.get("catalyst"))
    cfg.catalyst = catalyst_scripts(*c, v.key_loc("catalyst"), features);
  if (const DeckNode* c = v.get("compression"))
    cfg.compression = read_compression(*c, v.path("compression"), features);
  if (const DeckNode* d = v.get("diagnostics"))
    cfg.diagnostics = read_diagnostics(*d, v.path("diagnostics"), cfg);
  if (const DeckNode* p = v.get("probes")) {
    cfg.probes = read_probes(*p, v.path("probes"), cfg);
    if (!cfg.probes.empty() && !cfg.diagnostics.enabled())
      fail(v.key_loc("probes"),
           "output.probes: probes are columns of diagnostics.csv: give "
           "output.diagnostics too ({every: N} or {interval: t})");
  }
}

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

// ---- JSON echo ----------------------------------------------------------------------------

nlohmann::json scalar_to_json(const DeckNode& n) {
  if (n.quoted) return n.scalar;
  if (const auto b = parse_bool(n.scalar)) return *b;
  if (const auto i = parse_integer(n.scalar)) return *i;
  if (const auto d = parse_double(n.scalar); d && std::isfinite(*d)) return *d;
  return n.scalar;
}

nlohmann::json to_json(const DeckNode& n) {
  switch (n.kind) {
    case Kind::Null:
      return nullptr;
    case Kind::Scalar:
      return scalar_to_json(n);
    case Kind::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : n.items) out.push_back(to_json(item));
      return out;
    }
    case Kind::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (std::size_t i = 0; i < n.keys.size(); ++i) out[n.keys[i]] = to_json(n.items[i]);
      return out;
    }
  }
  return nullptr;
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
