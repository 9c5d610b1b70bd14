// Stages 1 and 2 of deck parsing: YAML text -> DeckNode tree (every node remembering where it
// came from), --set overrides editing that tree; and the tree's JSON echo (Config::deck).
#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <sstream>
#include <utility>

#include "io/deck/reader.hpp"

namespace heatsolve::deck_reader {

// ---- YAML -> DeckNode -------------------------------------------------------------------

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

// ---- JSON echo ----------------------------------------------------------------------------

namespace {

nlohmann::json scalar_to_json(const DeckNode& n) {
  if (n.quoted) return n.scalar;
  if (const auto b = parse_bool(n.scalar)) return *b;
  if (const auto i = parse_integer(n.scalar)) return *i;
  if (const auto d = parse_double(n.scalar); d && std::isfinite(*d)) return *d;
  return n.scalar;
}

}  // namespace

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

}  // namespace heatsolve::deck_reader
