// Materials by region, cell by cell (io/materials.hpp). One evaluation serves the sampler,
// the stability limit, the counts and the checks: the cells named by one index list per axis
// (their tensor product, x fastest), each property a function of the global cell index alone.
#include "io/materials.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <utility>

#ifdef HEATSOLVE_HAVE_HDF5
#include "io/hdf5_handle.hpp"
#endif

namespace heatsolve {

const char* to_string(MaterialProperty p) {
  switch (p) {
    case MaterialProperty::Conductivity:
      return "conductivity";
    case MaterialProperty::Density:
      return "density";
    case MaterialProperty::SpecificHeat:
      return "specific_heat";
  }
  return "?";
}

const char* to_string(RegionKind k) {
  switch (k) {
    case RegionKind::Box:
      return "box";
    case RegionKind::Sphere:
      return "sphere";
    case RegionKind::Cylinder:
      return "cylinder";
    case RegionKind::File:
      return "file";
  }
  return "?";
}

namespace {

// Global cells per axis (1 for z in 2D).
int extent(const Config& cfg, int d) {
  return d < cfg.dimensions ? cfg.cells[d] : 1;
}

bool periodic(const Config& cfg, int d) {
  return d < cfg.dimensions && cfg.boundary[2 * d].type == BoundaryType::Periodic;
}

double spacing(const Config& cfg, int d) {
  return cfg.length[d] / cfg.cells[d];
}

// The centre of global cell g on axis d, as solvers/problem/fields.cpp computes it.
double centre(const Config& cfg, int d, int g) {
  return cfg.origin[d] + (g + 0.5) * spacing(cfg, d);
}

// Global cell indices per axis; the cells meant are their tensor product (x fastest).
using Lists = std::array<std::vector<int>, 3>;

std::vector<int> range(int lo, int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = lo + i;
  return v;
}

std::size_t product(const Lists& l) {
  return l[0].size() * l[1].size() * l[2].size();
}

// Layer `s` of the slowest axis (z in 3D, y in 2D): the whole grid across the other axes.
Lists layer(const Config& cfg, int s) {
  Lists l;
  const int slow = cfg.dimensions - 1;
  for (int d = 0; d < 3; ++d) l[d] = d == slow ? std::vector<int>{s} : range(0, extent(cfg, d));
  return l;
}

// Whether cell (a, b, c) of the lists lies in one geometric region: per-axis terms, so the
// test is one addition per axis and the same arithmetic wherever the cell is evaluated.
struct Membership {
  RegionKind kind = RegionKind::Box;
  std::array<std::vector<unsigned char>, 3> inside;  // box: centre within [lower, upper]
  std::array<std::vector<double>, 3> squared;        // sphere, cylinder: (x_d - c_d)^2, or 0
  double r2 = 0;

  bool contains(std::size_t a, std::size_t b, std::size_t c) const {
    switch (kind) {
      case RegionKind::File:
        return true;
      case RegionKind::Box:
        return inside[0][a] && inside[1][b] && inside[2][c];
      default:
        return (squared[0][a] + squared[1][b]) + squared[2][c] <= r2;
    }
  }
};

// The centre coordinate a sphere or cylinder measures axis d from, if it does.
std::optional<double> measured_from(const Config& cfg, const Region& r, int d) {
  if (d >= cfg.dimensions) return std::nullopt;
  if (r.kind == RegionKind::Sphere) return r.center[d];
  if (r.kind != RegionKind::Cylinder || d == r.axis) return std::nullopt;
  int m = 0;  // the cylinder's centre entries name the two other axes in order
  for (int e = 0; e < d; ++e)
    if (e != r.axis) ++m;
  return r.center[m];
}

Membership membership(const Config& cfg, const Region& r, const Lists& lists) {
  Membership m;
  m.kind = r.kind;
  m.r2 = r.radius * r.radius;
  for (int d = 0; d < 3; ++d) {
    const std::size_t n = lists[d].size();
    if (r.kind == RegionKind::Box) {
      m.inside[d].assign(n, 1);
      if (d >= cfg.dimensions) continue;
      for (std::size_t i = 0; i < n; ++i) {
        const double x = centre(cfg, d, lists[d][i]);
        m.inside[d][i] = r.lower[d] <= x && x <= r.upper[d];
      }
    } else if (r.kind != RegionKind::File) {
      m.squared[d].assign(n, 0.0);
      const auto c = measured_from(cfg, r, d);
      if (!c) continue;
      for (std::size_t i = 0; i < n; ++i) {
        const double dx = centre(cfg, d, lists[d][i]) - *c;
        m.squared[d][i] = dx * dx;
      }
    }
  }
  return m;
}

// The values of a file region at the cells of the lists, read as the distinct indices of
// each axis (sorted) in runs of consecutive ones: only those cells are read.
struct FileValues {
  std::array<std::vector<int>, 3> unique;      // distinct global indices per axis, ascending
  std::array<std::vector<std::size_t>, 3> at;  // list entry -> position in `unique`
  std::vector<double> values;                  // [unique z][unique y][unique x]

  double operator()(std::size_t a, std::size_t b, std::size_t c) const {
    return values[(at[2][c] * unique[1].size() + at[1][b]) * unique[0].size() + at[0][a]];
  }
};

#ifdef HEATSOLVE_HAVE_HDF5

struct OpenDataset {
  h5::File file;
  h5::Dataset dataset;
};

std::string shape_text(const std::vector<hsize_t>& dims) {
  std::string s;
  for (hsize_t d : dims) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

// Opens a file region's dataset and checks its type and shape (not its values).
OpenDataset open_dataset(const Config& cfg, const Region& r) {
  using Part = MaterialsError::Part;
  h5::silence_errors();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(r.path, ec))
    throw MaterialsError(Part::Path, fmt::format("no such file '{}'", r.path));
  if (H5Fis_hdf5(r.path.c_str()) <= 0) {
    h5::last_error();
    throw MaterialsError(Part::Path, fmt::format("'{}' is not an HDF5 file", r.path));
  }
  const hid_t f = H5Fopen(r.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) {
    const std::string detail = h5::last_error();
    throw MaterialsError(Part::Path, fmt::format("cannot open '{}'{}", r.path,
                                                 detail.empty() ? "" : " (" + detail + ")"));
  }
  OpenDataset o;
  o.file = h5::File(f, "open " + r.path);
  const hid_t d = H5Dopen2(o.file.get(), r.dataset.c_str(), H5P_DEFAULT);
  if (d < 0) {
    h5::last_error();
    throw MaterialsError(Part::Dataset, fmt::format("no dataset '{}' in '{}'", r.dataset, r.path));
  }
  o.dataset = h5::Dataset(d, "open " + r.dataset);
  const h5::Datatype type(H5Dget_type(o.dataset.get()), "type of " + r.dataset);
  if (H5Tget_class(type.get()) != H5T_FLOAT)
    throw MaterialsError(Part::Dataset, fmt::format("dataset '{}' in '{}' does not hold "
                                                    "floating-point values",
                                                    r.dataset, r.path));
  const h5::Dataspace space(H5Dget_space(o.dataset.get()), "shape of " + r.dataset);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  std::vector<hsize_t> grid;
  for (int d = cfg.dimensions - 1; d >= 0; --d) grid.push_back(static_cast<hsize_t>(cfg.cells[d]));
  if (dims != grid)
    throw MaterialsError(
        Part::Dataset,
        fmt::format("dataset '{}' in '{}' has shape {}, but the grid's cells are {} ({})",
                    r.dataset, r.path, rank < 0 ? "?" : shape_text(dims), shape_text(grid),
                    cfg.dimensions == 3 ? "[nz, ny, nx]" : "[ny, nx]"));
  return o;
}

// Consecutive runs of ascending indices: (first position, count).
std::vector<std::pair<std::size_t, std::size_t>> runs(const std::vector<int>& sorted) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (i > 0 && sorted[i] == sorted[i - 1] + 1)
      ++out.back().second;
    else
      out.emplace_back(i, 1);
  }
  return out;
}

void read_values(const Config& cfg, const Region& r, FileValues& v) {
  const OpenDataset o = open_dataset(cfg, r);
  const int rank = cfg.dimensions;
  // File and memory dimensions run slowest first: z, y, x (2D: y, x).
  std::vector<hsize_t> mdims(static_cast<std::size_t>(rank));
  for (int p = 0; p < rank; ++p) mdims[p] = v.unique[rank - 1 - p].size();
  const h5::Dataspace mspace(H5Screate_simple(rank, mdims.data(), nullptr), "memory space");
  const h5::Dataspace fspace(H5Dget_space(o.dataset.get()), "file space");
  std::array<std::vector<std::pair<std::size_t, std::size_t>>, 3> axis_runs;
  for (int d = 0; d < 3; ++d) axis_runs[d] = runs(v.unique[d]);
  for (const auto& rz : axis_runs[2])
    for (const auto& ry : axis_runs[1])
      for (const auto& rx : axis_runs[0]) {
        const std::array<std::pair<std::size_t, std::size_t>, 3> run{rx, ry, rz};
        std::vector<hsize_t> fstart(mdims.size()), mstart(mdims.size()), count(mdims.size());
        for (int p = 0; p < rank; ++p) {
          const int d = rank - 1 - p;
          fstart[p] = static_cast<hsize_t>(v.unique[d][run[d].first]);
          mstart[p] = run[d].first;
          count[p] = run[d].second;
        }
        h5::check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, fstart.data(), nullptr,
                                      count.data(), nullptr),
                  "select cells of " + r.dataset);
        h5::check(H5Sselect_hyperslab(mspace.get(), H5S_SELECT_SET, mstart.data(), nullptr,
                                      count.data(), nullptr),
                  "select memory");
        h5::check(H5Dread(o.dataset.get(), H5T_NATIVE_DOUBLE, mspace.get(), fspace.get(),
                          H5P_DEFAULT, v.values.data()),
                  "read " + r.dataset + " from " + r.path);
      }
}

#endif  // HEATSOLVE_HAVE_HDF5

// Reads the file region's values at the lists' cells and checks them (positive, finite).
FileValues file_values(const Config& cfg, const Region& r, const Lists& lists) {
  FileValues v;
  for (int d = 0; d < 3; ++d) {
    v.unique[d] = lists[d];
    std::sort(v.unique[d].begin(), v.unique[d].end());
    v.unique[d].erase(std::unique(v.unique[d].begin(), v.unique[d].end()), v.unique[d].end());
    v.at[d].resize(lists[d].size());
    for (std::size_t i = 0; i < lists[d].size(); ++i)
      v.at[d][i] = static_cast<std::size_t>(
          std::lower_bound(v.unique[d].begin(), v.unique[d].end(), lists[d][i]) -
          v.unique[d].begin());
  }
  v.values.assign(v.unique[0].size() * v.unique[1].size() * v.unique[2].size(), 0.0);
#ifdef HEATSOLVE_HAVE_HDF5
  read_values(cfg, r, v);
#else
  (void)r;
  throw MaterialsError(MaterialsError::Part::Kind,
                       "file regions need HDF5, and this heatsolve was built without it "
                       "(`heatsolve info` says what a build has)");
#endif
  const std::size_t nx = v.unique[0].size(), ny = v.unique[1].size();
  for (std::size_t n = 0; n < v.values.size(); ++n) {
    const double x = v.values[n];
    if (std::isfinite(x) && x > 0) continue;
    const int i = v.unique[0][n % nx], j = v.unique[1][n / nx % ny], k = v.unique[2][n / nx / ny];
    throw MaterialsError(
        MaterialsError::Part::Dataset,
        fmt::format("dataset '{}' in '{}': the value {} of cell ({}, {}{}) is not a positive, "
                    "finite number",
                    r.dataset, r.path, x, i, j,
                    cfg.dimensions == 3 ? fmt::format(", {}", k) : std::string()));
  }
  return v;
}

// The materials at the cells of `lists`: membership of every geometric region, and the values
// of every file region when `with_files` (else file regions are only counted as covering).
class Evaluation {
 public:
  Evaluation(const Config& cfg, Lists lists, bool with_files)
      : m_(cfg.material), lists_(std::move(lists)) {
    for (const MaterialRegion& e : m_.regions) {
      members_.push_back(membership(cfg, e.region, lists_));
      files_.push_back(e.region.kind == RegionKind::File && with_files
                           ? file_values(cfg, e.region, lists_)
                           : FileValues{});
    }
  }

  const Lists& lists() const { return lists_; }
  std::size_t size() const { return product(lists_); }

  // k and rho cp of cell (a, b, c).
  void properties(std::size_t a, std::size_t b, std::size_t c, double& k, double& heat) const {
    double kk = m_.conductivity, rho = m_.density, cp = m_.specific_heat;
    for (std::size_t r = 0; r < m_.regions.size(); ++r) {
      const MaterialRegion& e = m_.regions[r];
      if (e.region.kind == RegionKind::File) {
        const double v = files_[r](a, b, c);
        switch (e.file_property) {
          case MaterialProperty::Conductivity:
            kk = v;
            break;
          case MaterialProperty::Density:
            rho = v;
            break;
          case MaterialProperty::SpecificHeat:
            cp = v;
            break;
        }
        continue;
      }
      if (!members_[r].contains(a, b, c)) continue;
      if (e.conductivity) kk = *e.conductivity;
      if (e.density) rho = *e.density;
      if (e.specific_heat) cp = *e.specific_heat;
    }
    k = kk;
    heat = rho * cp;
  }

  // The last entry whose region holds cell (a, b, c); -1: none (the base material).
  int topmost(std::size_t a, std::size_t b, std::size_t c) const {
    for (std::size_t r = m_.regions.size(); r-- > 0;)
      if (members_[r].contains(a, b, c)) return static_cast<int>(r);
    return -1;
  }

  // Every cell's k and rho cp, x fastest.
  void fill(double* k, double* heat) const {
    const std::size_t na = lists_[0].size(), nb = lists_[1].size(), nc = lists_[2].size();
    const std::int64_t rows = static_cast<std::int64_t>(nb * nc);
#pragma omp parallel for schedule(static)
    for (std::int64_t row = 0; row < rows; ++row) {
      const std::size_t b = static_cast<std::size_t>(row) % nb;
      const std::size_t c = static_cast<std::size_t>(row) / nb;
      const std::size_t base = static_cast<std::size_t>(row) * na;
      for (std::size_t a = 0; a < na; ++a) properties(a, b, c, k[base + a], heat[base + a]);
    }
  }

 private:
  const Materials& m_;
  Lists lists_;
  std::vector<Membership> members_;
  std::vector<FileValues> files_;
};

// The global cell a padded local index l (in [-1, n]) of axis d stands for.
int ghost_source(const Config& cfg, int d, int offset, int l) {
  const int n = extent(cfg, d), g = offset + l;
  if (g < 0) return periodic(cfg, d) ? g + n : 0;
  if (g >= n) return periodic(cfg, d) ? g - n : n - 1;
  return g;
}

// Harmonic mean of two cells' conductivities: the conductivity of the face between them.
double face_conductivity(double k, double kn) {
  return 2 * k * kn / (k + kn);
}

// Neighbours of cell index i on an axis of n cells: i - 1 and i + 1, wrapped where the axis is
// periodic, -1 past a wall.
std::array<int, 2> axis_neighbours(int i, int n, bool wrap) {
  return {i > 0 ? i - 1 : wrap ? n - 1 : -1, i + 1 < n ? i + 1 : wrap ? 0 : -1};
}

// One tile of the layer plane with its ring of neighbours: the global cells [lo - 1, hi] per
// plane axis where they exist (wrapped across periodic faces), so that the per-cell limit of
// the tile's cells needs no other memory.
struct LayerTile {
  std::array<std::vector<int>, 2> cells;  // global indices, ring included, per plane axis
  std::array<int, 2> first{0, 0};         // the position of lo in cells
};

LayerTile layer_tile(const std::array<int, 2>& lo, const std::array<int, 2>& hi,
                     const std::array<int, 2>& n, const std::array<bool, 2>& wrap) {
  LayerTile t;
  for (int a = 0; a < 2; ++a) {
    const int before = axis_neighbours(lo[a], n[a], wrap[a])[0];
    const int after = axis_neighbours(hi[a] - 1, n[a], wrap[a])[1];
    if (before >= 0) t.cells[a].push_back(before);
    t.first[a] = int(t.cells[a].size());
    for (int i = lo[a]; i < hi[a]; ++i) t.cells[a].push_back(i);
    if (after >= 0) t.cells[a].push_back(after);
  }
  return t;
}

struct Layer {
  std::vector<double> k, heat;
};

Layer evaluate_layer(const Config& cfg, const LayerTile& t, int s) {
  Lists lists;
  const int slow = cfg.dimensions - 1;
  lists[0] = t.cells[0];
  if (cfg.dimensions == 3) lists[1] = t.cells[1];
  for (int d = 0; d < 3; ++d)
    if (lists[d].empty()) lists[d] = {d == slow ? s : 0};
  const Evaluation e(cfg, std::move(lists), true);
  Layer out;
  out.k.resize(e.size());
  out.heat.resize(e.size());
  e.fill(out.k.data(), out.heat.data());
  return out;
}

}  // namespace

// The limit over every cell, a tile of the layer plane at a time (rows of at most `tile_row`
// cells, at most `tile_cells` cells, and their ring: memory does not grow with the grid), layer
// by layer within a tile. The smallest limit wins, the first cell in (layer, row, column) order
// on ties, so the answer does not depend on the tiles.
MaterialsDtLimit materials_dt_limit_tiled(const Config& cfg, int tile_row,
                                          std::int64_t tile_cells) {
  const int dims = cfg.dimensions, slow = dims - 1;
  const int nx = cfg.cells[0], ny = dims == 3 ? cfg.cells[1] : 1, ns = cfg.cells[slow];
  const std::array<double, 3> h{spacing(cfg, 0), spacing(cfg, 1),
                                dims == 3 ? spacing(cfg, 2) : 1.0};
  const bool px = periodic(cfg, 0), py = dims == 3 && periodic(cfg, 1), ps = periodic(cfg, slow);
  const double h2x = h[0] * h[0], h2y = h[1] * h[1], h2s = h[slow] * h[slow];
  const int tile_x = std::max(1, std::min(nx, tile_row));
  const int tile_y =
      int(std::max<std::int64_t>(1, std::min<std::int64_t>(ny, tile_cells / tile_x)));

  MaterialsDtLimit best;
  best.dt_max = std::numeric_limits<double>::infinity();
  std::array<std::int64_t, 3> best_at{ns, ny, nx};  // (layer, row, column) of `best`
  for (int j0 = 0; j0 < ny; j0 += tile_y)
    for (int i0 = 0; i0 < nx; i0 += tile_x) {
      const int i1 = std::min(nx, i0 + tile_x), j1 = std::min(ny, j0 + tile_y);
      const LayerTile t = dims == 3 ? layer_tile({i0, j0}, {i1, j1}, {nx, ny}, {px, py})
                                    : layer_tile({i0, 0}, {i1, 1}, {nx, 1}, {px, false});
      const std::size_t row = t.cells[0].size();
      const int rows = j1 - j0, cols = i1 - i0;
      std::optional<Layer> below;
      Layer current = evaluate_layer(cfg, t, 0);
      std::optional<Layer> first;  // layer 0 again, the wrap above the last layer
      if (ps) {
        first = current;
        below = ns > 1 ? evaluate_layer(cfg, t, ns - 1) : current;
      }
      std::vector<double> row_min(std::size_t(rows), 0.0), row_heat(std::size_t(rows), 0.0),
          row_sum(std::size_t(rows), 0.0);
      std::vector<int> row_at(std::size_t(rows), 0);
      for (int s = 0; s < ns; ++s) {
        std::optional<Layer> above;
        if (s + 1 < ns)
          above = evaluate_layer(cfg, t, s + 1);
        else if (ps)
          above = first;
        const Layer& cur = current;
        const Layer* lo = below ? &*below : nullptr;
        const Layer* hi = above ? &*above : nullptr;
#pragma omp parallel for schedule(static)
        for (int r = 0; r < rows; ++r) {
          const int j = j0 + r;
          const std::size_t b = std::size_t(dims == 3 ? t.first[1] + r : 0);
          const std::array<int, 2> yn = axis_neighbours(j, ny, py);
          double m = std::numeric_limits<double>::infinity(), mh = 1, ms = 0;
          int at = 0;
          for (int c = 0; c < cols; ++c) {
            const int i = i0 + c;
            const std::size_t n = b * row + std::size_t(t.first[0] + c);
            const double k = cur.k[n];
            const auto face = [k](const double* neighbour) {
              return neighbour ? face_conductivity(k, *neighbour) : k;
            };
            const std::array<int, 2> xn = axis_neighbours(i, nx, px);
            // A ring cell sits next to the tile's edge cell exactly where a neighbour exists.
            const double* xm = xn[0] >= 0 ? &cur.k[n - 1] : nullptr;
            const double* xp = xn[1] >= 0 ? &cur.k[n + 1] : nullptr;
            double sum = face(xm) / h2x + face(xp) / h2x;
            if (dims == 3) {
              const double* ym = yn[0] >= 0 ? &cur.k[n - row] : nullptr;
              const double* yp = yn[1] >= 0 ? &cur.k[n + row] : nullptr;
              sum = sum + face(ym) / h2y;
              sum = sum + face(yp) / h2y;
            }
            sum = sum + face(lo ? &lo->k[n] : nullptr) / h2s;
            sum = sum + face(hi ? &hi->k[n] : nullptr) / h2s;
            const double limit = cur.heat[n] / sum;
            if (limit < m) m = limit, at = i, mh = cur.heat[n], ms = sum;
          }
          row_min[std::size_t(r)] = m, row_at[std::size_t(r)] = at;
          row_heat[std::size_t(r)] = mh, row_sum[std::size_t(r)] = ms;
        }
        for (int r = 0; r < rows; ++r) {
          const std::array<std::int64_t, 3> here{s, j0 + r, row_at[std::size_t(r)]};
          const double m = row_min[std::size_t(r)];
          if (!(m < best.dt_max || (m == best.dt_max && here < best_at))) continue;
          best.dt_max = m;
          best_at = here;
          best.cell = dims == 3 ? std::array<int, 3>{int(here[2]), int(here[1]), s}
                                : std::array<int, 3>{int(here[2]), s, 0};
          best.heat_capacity = row_heat[std::size_t(r)];
          best.face_sum = row_sum[std::size_t(r)];
        }
        below = std::move(current);
        if (above) current = std::move(*above);
      }
    }
  return best;
}

CellProperties sample_materials(const Config& cfg, const GridDesc& local,
                                const std::array<int, 3>& offset) {
  const std::array<int, 3> n{local.nx, local.ny, local.nz};
  if (local.dims != cfg.dimensions)
    throw std::invalid_argument("sample_materials: the block's dimensions are not the grid's");
  Lists lists;
  for (int d = 0; d < 3; ++d) {
    if (d >= cfg.dimensions) {
      if (n[d] != 1) throw std::invalid_argument("sample_materials: a 2D block has nz = 1");
      lists[d] = {0};
      continue;
    }
    if (offset[d] < 0 || n[d] < 1 || offset[d] > extent(cfg, d) - n[d])
      throw std::invalid_argument(fmt::format(
          "sample_materials: block [{}, {}) of axis {} is not inside the grid's {} cells",
          offset[d], offset[d] + n[d], d, extent(cfg, d)));
    for (int l = -1; l <= n[d]; ++l) lists[d].push_back(ghost_source(cfg, d, offset[d], l));
  }
  const Evaluation e(cfg, std::move(lists), true);
  CellProperties p;
  p.conductivity.resize(e.size());
  p.heat_capacity.resize(e.size());
  e.fill(p.conductivity.data(), p.heat_capacity.data());
  return p;
}

MaterialsDtLimit materials_dt_limit(const Config& cfg) {
  if (cfg.material.uniform()) {
    MaterialsDtLimit l;
    l.dt_max = stable_dt(cfg.grid(), cfg.diffusivity);
    l.heat_capacity = cfg.material.heat_capacity();
    l.face_sum = l.heat_capacity / l.dt_max;
    return l;
  }
  return materials_dt_limit_tiled(cfg, 1 << 12, std::int64_t{1} << 20);
}

double stable_dt_materials(const Config& cfg) {
  return materials_dt_limit(cfg).dt_max;
}

std::int64_t region_cell_count(const Config& cfg, const Region& region) {
  std::int64_t total = 1;
  for (int d = 0; d < cfg.dimensions; ++d) total *= cfg.cells[d];
  if (region.kind == RegionKind::File) return total;
  // Candidates per axis: the cells each axis' own term admits (a necessary condition: the
  // terms are non-negative, and rounded sums of non-negative numbers never decrease).
  Lists all;
  for (int d = 0; d < 3; ++d) all[d] = range(0, extent(cfg, d));
  const Membership whole = membership(cfg, region, all);
  Lists candidates;
  for (int d = 0; d < 3; ++d)
    for (std::size_t i = 0; i < all[d].size(); ++i) {
      const bool ok = region.kind == RegionKind::Box ? whole.inside[d][i] != 0
                                                     : whole.squared[d][i] <= whole.r2;
      if (ok) candidates[d].push_back(all[d][i]);
    }
  if (product(candidates) == 0) return 0;
  const Membership m = membership(cfg, region, candidates);
  const std::int64_t nb = static_cast<std::int64_t>(candidates[1].size());
  const std::int64_t rows = nb * static_cast<std::int64_t>(candidates[2].size());
  std::int64_t count = 0;
#pragma omp parallel for schedule(static) reduction(+ : count)
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::size_t b = static_cast<std::size_t>(row % nb),
                      c = static_cast<std::size_t>(row / nb);
    for (std::size_t a = 0; a < candidates[0].size(); ++a) count += m.contains(a, b, c) ? 1 : 0;
  }
  return count;
}

namespace {

// The first cell of axis d whose centre is at least x (extent(cfg, d) if none): centres grow
// with the index, rounding included.
int first_centre_at_least(const Config& cfg, int d, double x) {
  int lo = 0, hi = extent(cfg, d);
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (centre(cfg, d, mid) >= x)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

}  // namespace

bool region_holds_a_cell(const Config& cfg, const Region& region) {
  if (region.kind == RegionKind::File) return true;
  if (region.kind == RegionKind::Box) {
    // Per axis the centres inside [lower, upper] are a run of cells: is it empty?
    for (int d = 0; d < cfg.dimensions; ++d) {
      const int i = first_centre_at_least(cfg, d, region.lower[d]);
      if (i >= extent(cfg, d) || !(centre(cfg, d, i) <= region.upper[d])) return false;
    }
    return true;
  }
  // Membership::contains adds the per-axis squares, and rounded sums of non-negative terms
  // grow with each term: the smallest sum is that of each axis' smallest square, found at the
  // cells on either side of the centre ((x - c)^2 falls, then grows, along the axis).
  std::array<double, 3> least{0, 0, 0};
  for (int d = 0; d < cfg.dimensions; ++d) {
    const auto c = measured_from(cfg, region, d);
    if (!c) continue;
    const int n = extent(cfg, d), i = first_centre_at_least(cfg, d, *c);
    least[d] = std::numeric_limits<double>::infinity();
    for (int j : {i - 1, i}) {
      if (j < 0 || j >= n) continue;
      const double dx = centre(cfg, d, j) - *c;
      least[d] = std::min(least[d], dx * dx);
    }
  }
  return (least[0] + least[1]) + least[2] <= region.radius * region.radius;
}

void check_file_region(const Config& cfg, const Region& r) {
  const int slow = cfg.dimensions - 1;
  for (int s = 0; s < cfg.cells[slow]; ++s) file_values(cfg, r, layer(cfg, s));
}

nlohmann::json describe_materials(const Config& cfg) {
  const Materials& m = cfg.material;
  const std::size_t regions = m.regions.size();
  // Topmost entry per cell, counted layer by layer (file regions are not read).
  std::vector<std::int64_t> top(regions + 1, 0);  // [0]: the base, [r + 1]: entry r
  if (regions == 0) {
    top[0] = 1;
    for (int d = 0; d < cfg.dimensions; ++d) top[0] *= cfg.cells[d];
  } else {
    const int slow = cfg.dimensions - 1;
    for (int s = 0; s < cfg.cells[slow]; ++s) {
      const Evaluation e(cfg, layer(cfg, s), false);
      const std::size_t na = e.lists()[0].size();
      const std::int64_t rows = static_cast<std::int64_t>(e.lists()[1].size());
#pragma omp parallel
      {
        std::vector<std::int64_t> mine(regions + 1, 0);
#pragma omp for schedule(static)
        for (std::int64_t b = 0; b < rows; ++b)
          for (std::size_t a = 0; a < na; ++a)
            ++mine[static_cast<std::size_t>(e.topmost(a, static_cast<std::size_t>(b), 0) + 1)];
#pragma omp critical
        for (std::size_t r = 0; r <= regions; ++r) top[r] += mine[r];
      }
    }
  }
  const auto axes = [&](const std::array<double, 3>& v, int count) {
    nlohmann::json a = nlohmann::json::array();
    for (int d = 0; d < count; ++d) a.push_back(v[d]);
    return a;
  };
  nlohmann::json out = nlohmann::json::array();
  nlohmann::json base{{"kind", "base"},
                      {"physical", m.physical},
                      {"conductivity", m.conductivity},
                      {"density", m.density},
                      {"specific_heat", m.specific_heat}};
  if (!m.physical) base["diffusivity"] = cfg.diffusivity;
  base["cells"] = top[0];
  out.push_back(base);
  for (std::size_t r = 0; r < regions; ++r) {
    const MaterialRegion& e = m.regions[r];
    const Region& g = e.region;
    nlohmann::json j{{"kind", to_string(g.kind)}};
    switch (g.kind) {
      case RegionKind::Box:
        j["lower"] = axes(g.lower, cfg.dimensions);
        j["upper"] = axes(g.upper, cfg.dimensions);
        break;
      case RegionKind::Sphere:
        j["center"] = axes(g.center, cfg.dimensions);
        j["radius"] = g.radius;
        break;
      case RegionKind::Cylinder:
        j["axis"] = std::string(1, "xyz"[g.axis]);
        j["center"] = axes(g.center, 2);
        j["radius"] = g.radius;
        break;
      case RegionKind::File:
        j["path"] = g.path;
        j["dataset"] = g.dataset;
        j["property"] = to_string(e.file_property);
        break;
    }
    if (e.conductivity) j["conductivity"] = *e.conductivity;
    if (e.density) j["density"] = *e.density;
    if (e.specific_heat) j["specific_heat"] = *e.specific_heat;
    j["cells"] = region_cell_count(cfg, g);
    j["cells_topmost"] = top[r + 1];
    out.push_back(j);
  }
  return out;
}

}  // namespace heatsolve
