#include "io/vtk_writer.hpp"

#include "core/mpi_comm.hpp"
#include "io/xml_text.hpp"

// The whole translation unit needs VTK; without it heatsolve has no VTK writer and
// app/run_command.cpp reports `formats: [vtk]` as unavailable.
#ifdef HEATSOLVE_HAVE_VTK

#include <unistd.h>
#include <vtkCellData.h>
#include <vtkDoubleArray.h>
#include <vtkErrorCode.h>
#include <vtkFloatArray.h>
#include <vtkImageData.h>
#include <vtkNew.h>
#include <vtkSmartPointer.h>
#include <vtkXMLImageDataWriter.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "io/atomic_file.hpp"

namespace heatsolve {
namespace {

namespace fs = std::filesystem;

std::string step_stem(const std::string& name, std::int64_t step) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "_%08lld", static_cast<long long>(step));
  return name + buf;
}

std::string piece_suffix(int rank) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "_%04d", rank);
  return buf;
}

// VTK point extent {x0, x1, y0, y1, z0, z1} of a block of cells (global point indices).
// A 2D grid is one point thick in z.
std::array<int, 6> point_extent(const OutputGrid& g, const Block& b) {
  std::array<int, 6> e{};
  for (int a = 0; a < 3; ++a) {
    if (a == 2 && g.dims == 2) {
      e[4] = e[5] = 0;
    } else {
      e[2 * a] = b.offset[a];
      e[2 * a + 1] = b.offset[a] + b.count[a];
    }
  }
  return e;
}

std::string extent_text(const std::array<int, 6>& e) {
  std::string s;
  for (int i = 0; i < 6; ++i) s += (i ? " " : "") + std::to_string(e[i]);
  return s;
}

std::string triple_text(const std::array<double, 3>& v) {
  return format_double(v[0]) + " " + format_double(v[1]) + " " + format_double(v[2]);
}

// Compression of the .vti data: HEATSOLVE_VTK_COMPRESSION = zlib (default) | lz4 | lzma |
// none, optionally with a level, e.g. "zlib:1" (fast) or "lzma:9" (small).
struct Compression {
  int type = vtkXMLWriterBase::ZLIB;
  int level = -1;  // -1: VTK's default for the compressor
};

Compression compression_from_environment() {
  Compression c;
  const char* env = std::getenv("HEATSOLVE_VTK_COMPRESSION");
  if (env == nullptr || *env == '\0') return c;
  std::string text(env), name = text, level;
  if (auto colon = text.find(':'); colon != std::string::npos) {
    name = text.substr(0, colon);
    level = text.substr(colon + 1);
  }
  if (name == "zlib") {
    c.type = vtkXMLWriterBase::ZLIB;
  } else if (name == "lz4") {
    c.type = vtkXMLWriterBase::LZ4;
  } else if (name == "lzma") {
    c.type = vtkXMLWriterBase::LZMA;
  } else if (name == "none") {
    c.type = vtkXMLWriterBase::NONE;
  } else {
    throw std::runtime_error("HEATSOLVE_VTK_COMPRESSION='" + text +
                             "': expected zlib, lz4, lzma or none, optionally with :LEVEL (1-9)");
  }
  if (!level.empty()) {
    char* end = nullptr;
    long v = std::strtol(level.c_str(), &end, 10);
    if (*end != '\0' || v < 1 || v > 9) {
      throw std::runtime_error("HEATSOLVE_VTK_COMPRESSION='" + text +
                               "': the level must be an integer from 1 to 9");
    }
    c.level = static_cast<int>(v);
  }
  return c;
}

bool covers_grid(const OutputGrid& g, const Block& b) {
  for (int a = 0; a < 3; ++a)
    if (b.offset[a] != 0 || b.count[a] != g.cells[a]) return false;
  return true;
}

// Silences VTK's error and warning output (multi-line, coloured on a terminal) while alive:
// failures are reported through the writer's error code in heatsolve's one-line messages.
class QuietVtk {
 public:
  QuietVtk() : previous_(vtkObject::GetGlobalWarningDisplay()) {
    vtkObject::GlobalWarningDisplayOff();
  }
  ~QuietVtk() { vtkObject::SetGlobalWarningDisplay(previous_); }
  QuietVtk(const QuietVtk&) = delete;
  QuietVtk& operator=(const QuietVtk&) = delete;

 private:
  int previous_;
};

// One cell-data array of a .vti: the values converted to the stored type (float for a float
// series, double otherwise).
template <typename Stored, typename T>
vtkSmartPointer<vtkDataArray> cell_array(const std::string& name, const T* data, vtkIdType n) {
  using Array = std::conditional_t<std::is_same_v<Stored, float>, vtkFloatArray, vtkDoubleArray>;
  vtkSmartPointer<Array> array = vtkSmartPointer<Array>::New();
  array->SetName(name.c_str());
  array->SetNumberOfComponents(1);
  array->SetNumberOfTuples(n);
  Stored* out = array->GetPointer(0);
  for (vtkIdType i = 0; i < n; ++i) out[i] = static_cast<Stored>(data[i]);
  return array;
}

// Writes one block as a .vti (temp name, then rename): the arrays as its cell data, the first
// one the active scalars.
void write_vti(const std::string& path, const OutputGrid& g, const Block& b,
               const std::vector<vtkSmartPointer<vtkDataArray>>& arrays,
               const Compression& compression) {
  const std::array<int, 6> e = point_extent(g, b);
  vtkNew<vtkImageData> image;
  image->SetExtent(e[0], e[1], e[2], e[3], e[4], e[5]);
  image->SetOrigin(g.origin[0], g.origin[1], g.origin[2]);
  image->SetSpacing(g.spacing[0], g.spacing[1], g.spacing[2]);
  const vtkIdType n = static_cast<vtkIdType>(b.size());
  if (image->GetNumberOfCells() != n) {
    throw std::runtime_error("VTK '" + path + "': image of extent " + extent_text(e) + " has " +
                             std::to_string(image->GetNumberOfCells()) + " cells, block has " +
                             std::to_string(n));
  }
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    if (i == 0)
      image->GetCellData()->SetScalars(arrays[i]);
    else
      image->GetCellData()->AddArray(arrays[i]);
  }

  // Serialised in memory, then written through AtomicFile (temporary name created exclusively
  // without following a symbolic link, fsync, rename): write errors are the system's (full
  // disk, quota, `ulimit -f`) in one line naming the file, and VTK prints nothing.
  vtkNew<vtkXMLImageDataWriter> writer;
  writer->SetInputData(image);
  writer->WriteToOutputStringOn();
  writer->SetDataModeToAppended();
  writer->EncodeAppendedDataOff();  // raw binary
  writer->SetCompressorType(compression.type);
  if (compression.type != vtkXMLWriterBase::NONE && compression.level > 0) {
    writer->SetCompressionLevel(compression.level);
  }
  writer->SetHeaderTypeToUInt64();  // blocks over 4 GiB
  const QuietVtk quiet;
  const int ok = writer->Write();
  if (ok != 1 || writer->GetErrorCode() != 0) {
    // (vtkErrorCode::GetStringFromErrorCode lives in VTK::CommonMisc, not linked here.)
    const unsigned long code = writer->GetErrorCode();
    std::string why = "vtkXMLImageDataWriter::Write failed";
    if (code > 0 && code < vtkErrorCode::FirstVTKErrorCode) {
      why = std::strerror(static_cast<int>(code));  // a system errno
    } else if (code != 0) {
      why += " (vtkErrorCode " + std::to_string(code) + ")";
    }
    throw std::runtime_error("cannot write VTK image '" + path + "': " + why);
  }
  write_file_atomically(path, writer->GetOutputString());
}

class VtkWriter final : public FieldWriter {
 public:
  VtkWriter(const std::string& directory, const std::string& name, const OutputGrid& grid,
            Precision precision
#ifdef HEATSOLVE_HAVE_MPI
            ,
            MPI_Comm comm = MPI_COMM_NULL
#endif
            )
      : name_(name),
        grid_(grid),
        precision_(precision),
        compression_(compression_from_environment()) {
    dir_ = directory.empty() ? fs::path(".") : fs::path(directory);
    pvd_ = (dir_ / (name + ".pvd")).string();
    subdir_name_ = name + "_vti";
    check_output_grid(grid_, "VTK file '" + pvd_ + "'");
#ifdef HEATSOLVE_HAVE_MPI
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (comm != MPI_COMM_NULL && initialized) {
      int size = 1;
      MPI_Comm_size(comm, &size);
      if (size > 1) {
        if (MPI_Comm_dup(comm, comm_.out()) != MPI_SUCCESS) {
          throw std::runtime_error("VTK writer '" + pvd_ + "': MPI_Comm_dup failed");
        }
        MPI_Comm_rank(comm_.get(), &rank_);
        MPI_Comm_size(comm_.get(), &size_);
      }
    }
#endif
    // Every rank writes into the subdirectory; rank 0 creates it, the others wait for it.
    std::string error;
    if (rank_ == 0) {
      std::error_code ec;
      const fs::path sub = dir_ / subdir_name_;
      if (fs::is_symlink(sub, ec)) {
        // Its files would land wherever the link points.
        error = "cannot use VTK output directory '" + sub.string() +
                "': it is a symbolic link (heatsolve never writes through one; remove it)";
      } else {
        fs::create_directories(sub, ec);
        if (ec) {
          error = "cannot create VTK output directory '" + sub.string() + "': " + ec.message();
        }
      }
    }
    share_error(error);
  }

  void write(std::int64_t step, double time, const float* data, const Block& block) override {
    write_impl(step, time, data, block);
  }
  void write(std::int64_t step, double time, const double* data, const Block& block) override {
    write_impl(step, time, data, block);
  }

  // Every step file and the .pvd are already final after each write().
  void finalize() override {
    finalized_ = true;
  }

  std::vector<std::string> files() const override {
    std::vector<std::string> out{pvd_};
    if (rank_ == 0 && !cell_fields_file_.empty())
      out.push_back((dir_ / cell_fields_file_).string());
    if (rank_ == 0)
      for (const auto& entry : steps_) out.push_back((dir_ / entry.second.file).string());
    return out;
  }

 private:
  struct StepEntry {
    double time = 0;
    std::string file;  // relative to dir_
  };

  bool parallel() const {
    return size_ > 1;
  }

  // Broadcasts rank 0's error message (parallel) and throws it on every rank.
  void share_error(std::string error) {
#ifdef HEATSOLVE_HAVE_MPI
    if (parallel()) {
      int len = static_cast<int>(error.size());
      MPI_Bcast(&len, 1, MPI_INT, 0, comm_.get());
      error.resize(static_cast<std::size_t>(len));
      if (len > 0) MPI_Bcast(error.data(), len, MPI_CHAR, 0, comm_.get());
    }
#endif
    if (!error.empty()) throw std::runtime_error(error);
  }

  // The array of a step's field, in the series' precision.
  template <typename T>
  vtkSmartPointer<vtkDataArray> step_array(const T* data, const Block& block) const {
    const auto n = static_cast<vtkIdType>(block.size());
    return precision_ == Precision::Float ? cell_array<float>(grid_.field(), data, n)
                                          : cell_array<double>(grid_.field(), data, n);
  }

  // The name and stored type of each array of a step (or of the cell-field image).
  std::vector<std::pair<std::string, const char*>> step_arrays() const {
    return {{grid_.field(), precision_ == Precision::Float ? "Float32" : "Float64"}};
  }

  template <typename Make>
  void write_piece(const std::string& path, const Block& block, const void* data, Make&& make) {
    check_output_block(grid_, block, "VTK file '" + path + "'");
    if (block.size() > 0 && data == nullptr) {
      throw std::runtime_error("VTK '" + path + "': null data for a non-empty block");
    }
    write_vti(path, grid_, block, make(), compression_);
  }

  template <typename T>
  void write_impl(std::int64_t step, double time, const T* data, const Block& block) {
    if (finalized_) throw std::runtime_error("VTK writer '" + pvd_ + "': write after finalize()");
    const std::string stem = step_stem(name_, step);
    const auto arrays = [&] {
      return std::vector<vtkSmartPointer<vtkDataArray>>{step_array(data, block)};
    };
    write_image(stem, block, data, arrays, step_arrays(), [&](const std::string& file) {
      steps_[step] = {time, file};
      write_pvd();
    });
  }

  void write_cell_fields(const std::vector<CellField>& fields, const Block& block) override {
    if (finalized_ || !steps_.empty() || fields.empty()) {
      if (fields.empty()) return;
      throw std::runtime_error("VTK writer '" + pvd_ +
                               "': cell fields are written before the first step");
    }
    std::vector<std::pair<std::string, const char*>> names;
    for (const CellField& f : fields) names.emplace_back(f.name, "Float64");
    const auto arrays = [&] {
      std::vector<vtkSmartPointer<vtkDataArray>> out;
      for (const CellField& f : fields)
        out.push_back(cell_array<double>(f.name, f.data, static_cast<vtkIdType>(block.size())));
      return out;
    };
    const void* data = fields.front().data;
    for (const CellField& f : fields)
      if (f.data == nullptr) data = nullptr;
    write_image(name_ + "_cell_fields", block, data, arrays, names,
                [&](const std::string& file) { cell_fields_file_ = file; });
  }

  // One image of the grid (a step, or the cell fields) as `<stem>.vti` in the subdirectory, or
  // in parallel as one piece per rank and `<stem>.pvti`; then `done(file)` on rank 0 with the
  // file's name relative to dir_.
  template <typename MakeArrays, typename Done>
  void write_image(const std::string& stem, const Block& block, const void* data,
                   MakeArrays&& arrays,
                   const std::vector<std::pair<std::string, const char*>>& names, Done&& done) {
    if (!parallel()) {
      const std::string file = subdir_name_ + "/" + stem + ".vti";
      if (!covers_grid(grid_, block)) {
        check_output_block(grid_, block, "VTK file '" + (dir_ / file).string() + "'");
        throw std::runtime_error("VTK writer '" + pvd_ +
                                 "': a serial writer needs the whole grid in one block");
      }
      write_piece((dir_ / file).string(), block, data, arrays);
      done(file);
      return;
    }
    write_parallel_image(stem, block, data, arrays, names, done);
  }

  // Each rank writes its piece; rank 0 collects the extents (and any failure), writes the
  // .pvti and calls done(), and shares the outcome so every rank throws together.
  template <typename MakeArrays, typename Done>
  void write_parallel_image(const std::string& stem, const Block& block, const void* data,
                            MakeArrays&& arrays,
                            const std::vector<std::pair<std::string, const char*>>& names,
                            Done&& done) {
#ifdef HEATSOLVE_HAVE_MPI
    const fs::path sub = dir_ / subdir_name_;
    const std::string piece_name = stem + piece_suffix(rank_) + ".vti";
    std::string local_error;
    const bool empty = block.size() == 0;
    if (!empty) {
      try {
        write_piece((sub / piece_name).string(), block, data, arrays);
      } catch (const std::exception& e) {
        local_error = e.what();
      }
    }
    // {offset[3], count[3], failed}
    int mine[7] = {block.offset[0],
                   block.offset[1],
                   block.offset[2],
                   block.count[0],
                   block.count[1],
                   block.count[2],
                   local_error.empty() ? 0 : 1};
    std::vector<int> all(rank_ == 0 ? 7 * static_cast<std::size_t>(size_) : 0);
    MPI_Gather(mine, 7, MPI_INT, all.data(), 7, MPI_INT, 0, comm_.get());
    // Failed ranks report their message to rank 0 (one at a time, in rank order).
    constexpr int kTag = 0x5654;
    if (rank_ != 0 && !local_error.empty()) {
      MPI_Send(local_error.data(), static_cast<int>(local_error.size()), MPI_CHAR, 0, kTag,
               comm_.get());
    }
    std::string error;
    if (rank_ == 0) {
      error = local_error;
      for (int r = 1; r < size_; ++r) {
        if (all[7 * r + 6] == 0) continue;
        MPI_Status status;
        MPI_Probe(r, kTag, comm_.get(), &status);
        int len = 0;
        MPI_Get_count(&status, MPI_CHAR, &len);
        std::string msg(static_cast<std::size_t>(len), '\0');
        MPI_Recv(msg.data(), len, MPI_CHAR, r, kTag, comm_.get(), MPI_STATUS_IGNORE);
        if (error.empty()) error = "rank " + std::to_string(r) + ": " + msg;
      }
      if (error.empty()) {
        try {
          const std::string file = subdir_name_ + "/" + stem + ".pvti";
          std::vector<std::pair<Block, std::string>> pieces;
          for (int r = 0; r < size_; ++r) {
            Block b;
            for (int a = 0; a < 3; ++a) {
              b.offset[a] = all[7 * r + a];
              b.count[a] = all[7 * r + 3 + a];
            }
            check_output_block(grid_, b, "VTK file '" + (dir_ / file).string() + "'");
            if (b.size() > 0) pieces.emplace_back(b, stem + piece_suffix(r) + ".vti");
          }
          write_file_atomically((dir_ / file).string(), pvti_text(pieces, names));
          done(file);
        } catch (const std::exception& e) {
          error = e.what();
        }
      }
    }
    share_error(error);
#else
    (void)stem, (void)block, (void)data, (void)arrays, (void)names, (void)done;
#endif
  }

  // Piece files are named relative to the .pvti (same directory).
  std::string pvti_text(const std::vector<std::pair<Block, std::string>>& pieces,
                        const std::vector<std::pair<std::string, const char*>>& arrays) const {
    const Block whole = Block::whole(grid_);
    std::ostringstream x;
    x << "<?xml version=\"1.0\"?>\n"
      << "<VTKFile type=\"PImageData\" version=\"1.0\" byte_order=\"LittleEndian\" "
         "header_type=\"UInt64\">\n"
      << "  <PImageData WholeExtent=\"" << extent_text(point_extent(grid_, whole))
      << "\" GhostLevel=\"0\" Origin=\"" << triple_text(grid_.origin) << "\" Spacing=\""
      << triple_text(grid_.spacing) << "\" Direction=\"1 0 0 0 1 0 0 0 1\">\n"
      << "    <PCellData Scalars=\"" << xml_escape(arrays.front().first) << "\">\n";
    for (const auto& [name, type] : arrays)
      x << "      <PDataArray type=\"" << type << "\" Name=\"" << xml_escape(name) << "\"/>\n";
    x << "    </PCellData>\n";
    for (const auto& [block, file] : pieces) {
      x << "    <Piece Extent=\"" << extent_text(point_extent(grid_, block)) << "\" Source=\""
        << xml_escape(file) << "\"/>\n";
    }
    x << "  </PImageData>\n"
      << "</VTKFile>\n";
    return x.str();
  }

  void write_pvd() const {
    std::ostringstream x;
    x << "<?xml version=\"1.0\"?>\n"
      << "<VTKFile type=\"Collection\" version=\"1.0\" byte_order=\"LittleEndian\" "
         "header_type=\"UInt64\">\n"
      << "  <Collection>\n";
    if (grid_.steady())
      x << "    <!-- A steady solve: each timestep is the iteration number, not a time -->\n";
    for (const auto& [step, entry] : steps_) {
      x << "    <DataSet timestep=\"" << format_double(grid_.steady() ? double(step) : entry.time)
        << "\" group=\"\" part=\"0\" file=\"" << xml_escape(entry.file) << "\"/>\n";
    }
    x << "  </Collection>\n"
      << "</VTKFile>\n";
    write_file_atomically(pvd_, x.str());
  }

  std::string name_;
  fs::path dir_;
  std::string pvd_, subdir_name_;
  OutputGrid grid_;
  Precision precision_;
  Compression compression_;
  std::map<std::int64_t, StepEntry> steps_;  // rank 0: every step written so far
  std::string cell_fields_file_;             // rank 0: relative to dir_, once written
  bool finalized_ = false;
  int rank_ = 0, size_ = 1;
#ifdef HEATSOLVE_HAVE_MPI
  OwnedComm comm_;
#endif
};

}  // namespace

std::unique_ptr<FieldWriter> make_vtk_writer(const std::string& directory, const std::string& name,
                                             const OutputGrid& grid, Precision precision) {
  return std::make_unique<VtkWriter>(directory, name, grid, precision);
}

#ifdef HEATSOLVE_HAVE_MPI
std::unique_ptr<FieldWriter> make_vtk_writer(const std::string& directory, const std::string& name,
                                             const OutputGrid& grid, Precision precision,
                                             MPI_Comm comm) {
  return std::make_unique<VtkWriter>(directory, name, grid, precision, comm);
}
#endif

}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_VTK
