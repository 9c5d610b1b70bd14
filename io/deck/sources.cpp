// Section readers for shapes: the initial field (`initial`) and the source terms (`source`).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <optional>

#include "io/deck/reader.hpp"
#include "io/initial_field.hpp"

namespace heatsolve::deck_reader {

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace heatsolve::deck_reader
