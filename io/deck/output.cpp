// Section reader for `output`: directory, formats, intervals, Catalyst scripts, compression,
// diagnostics and probes; also deck_relative_path, shared with the readers of other files.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "io/deck/reader.hpp"

namespace heatsolve::deck_reader {

namespace {

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

}  // namespace

// A file named in the deck: relative to the deck file's directory, so that a deck and its
// scripts move together; one from a --set override is typed on the command line, so it is
// relative to the working directory.
std::string deck_relative_path(const std::string& path, const Location& at) {
  const std::filesystem::path p(path);
  if (p.is_absolute() || !at.override_text.empty()) return path;
  return (std::filesystem::path(at.source).parent_path() / p).lexically_normal().string();
}

namespace {

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

}  // namespace

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

}  // namespace heatsolve::deck_reader
