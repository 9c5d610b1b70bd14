// diagnostics.csv (io/diagnostics_writer.hpp).
#include "io/diagnostics_writer.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "io/atomic_file.hpp"
#include "io/run_identity.hpp"

namespace fs = std::filesystem;

namespace heatsolve {

namespace {

const char* const kFaceNames[] = {"x-", "x+", "y-", "y+", "z-", "z+"};

[[noreturn]] void fail_errno(const std::string& what, const std::string& path, int err) {
  throw std::runtime_error("cannot " + what + " '" + path + "': " + std::strerror(err));
}

DiagnosticsWriter*& active_writer() {
  static DiagnosticsWriter* writer = nullptr;
  return writer;
}

bool valid_column(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '+' || c == '-';
  });
}

// Opens `path` for writing, new: a regular file of that name is replaced, a symbolic link (or
// anything else) there is an error.
int create_exclusive(const std::string& path) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    const int err = errno;
    struct stat st;
    if (err != EEXIST || ::lstat(path.c_str(), &st) != 0) fail_errno("create", path, err);
    if (S_ISLNK(st.st_mode))
      throw std::runtime_error("cannot create '" + path +
                               "': a symbolic link is in its place (heatsolve never writes "
                               "through one; remove it)");
    if (!S_ISREG(st.st_mode) || ::unlink(path.c_str()) != 0) fail_errno("create", path, err);
  }
  fail_errno("create", path, EEXIST);
}

// Reads the first `bytes` bytes of the open file `fd`, handing each chunk to `sink`; false when
// the file is shorter.
template <typename Sink>
bool read_prefix(int fd, std::uint64_t bytes, const std::string& path, Sink&& sink) {
  std::vector<char> buf(std::size_t(1) << 16);
  std::uint64_t done = 0;
  while (done < bytes) {
    const std::size_t want = std::size_t(std::min<std::uint64_t>(buf.size(), bytes - done));
    const ssize_t n = ::read(fd, buf.data(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno("read", path, errno);
    if (n == 0) return false;
    sink(buf.data(), std::size_t(n));
    done += std::uint64_t(n);
  }
  return true;
}

struct OpenForReading {
  int fd = -1;
  explicit OpenForReading(const std::string& path)
      : fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) {}
  ~OpenForReading() {
    if (fd >= 0) ::close(fd);
  }
};

// Why `path` cannot continue `mark` with `header` ("" when it can).
std::string unfit_source(const std::string& path, const std::string& header,
                         const DiagnosticsMark& mark) {
  const std::string name = fs::path(path).filename().string();
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return name + " cannot be read: " + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return name + " is not a regular file";
  if (std::uint64_t(st.st_size) < mark.bytes)
    return fmt::format("{} holds {} bytes, fewer than the {} the checkpoint counts", name,
                       st.st_size, mark.bytes);
  OpenForReading in(path);
  if (in.fd < 0) return name + " cannot be read: " + std::strerror(errno);
  std::string first;  // the header's bytes
  std::uint64_t digest = kFnvOffsetBasis;
  const bool complete = read_prefix(in.fd, mark.bytes, path, [&](const char* p, std::size_t n) {
    if (first.size() < header.size()) first.append(p, std::min(n, header.size() - first.size()));
    digest = fnv1a64(p, n, digest);
  });
  if (!complete) return name + " is shorter than the checkpoint counts";
  if (first != header)
    return name + " has other columns than this deck's (output.probes or the faces changed?)";
  if (digest != mark.digest)
    return fmt::format(
        "{}: its first {} bytes are not those the checkpoint recorded (another "
        "run's file, or damaged)",
        name, mark.bytes);
  return "";
}

// The values of a row line (after its first column).
std::vector<double> parse_row(const std::string& line) {
  std::vector<double> values;
  std::size_t at = line.find(',');
  while (at != std::string::npos) {
    const std::size_t next = line.find(',', at + 1);
    values.push_back(std::strtod(
        line.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1).c_str(),
        nullptr));
    at = next;
  }
  return values;
}

}  // namespace

std::uint64_t fnv1a64(const void* bytes, std::size_t n, std::uint64_t state) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (std::size_t i = 0; i < n; ++i) {
    state ^= p[i];
    state *= 0x100000001b3ULL;
  }
  return state;
}

std::string digest_hex(std::uint64_t digest) {
  return fmt::format("{:016x}", digest);
}

std::optional<std::uint64_t> parse_digest_hex(const std::string& hex) {
  if (hex.size() != 16 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    return std::nullopt;
  return std::strtoull(hex.c_str(), nullptr, 16);
}

std::vector<std::string> diagnostics_columns(const Config& cfg) {
  const bool heat = cfg.problem == ProblemType::Heat;
  std::vector<std::string> c;
  if (heat)
    c = {"step", "time", "min", "max", "mean", "heat"};
  else
    c = {"iteration", "min", "max", "mean"};
  for (int f = 0; f < 2 * cfg.dimensions; ++f)
    if (cfg.boundary[std::size_t(f)].type != BoundaryType::Periodic)
      c.push_back(std::string("flow_") + kFaceNames[f]);
  c.emplace_back("source_power");
  c.emplace_back("balance");
  for (const Probe& p : cfg.probes) c.push_back("probe_" + p.name);
  return c;
}

std::string diagnostics_header(const std::vector<std::string>& columns) {
  std::string h;
  for (const std::string& c : columns) h += (h.empty() ? "" : ",") + c;
  return h + "\n";
}

DiagnosticsResume choose_diagnostics_source(const std::string& directory,
                                            const std::vector<std::string>& columns,
                                            const DiagnosticsMark& mark, std::string* warning) {
  if (warning) warning->clear();
  if (mark.rows == 0) return {};  // nothing to keep: a new file (the header alone)
  const fs::path dir(directory);
  const std::string final_name = kDiagnosticsFile;
  const fs::path partial = dir / (final_name + ".partial");
  const fs::path moved = dir / (final_name + ".restart-source");
  const std::string header = diagnostics_header(columns);
  std::vector<std::string> notes;
  for (const fs::path& p : {partial, moved, dir / final_name}) {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(p, ec))) continue;
    if (fs::is_symlink(p, ec)) {
      notes.push_back(p.filename().string() + " is a symbolic link");
      continue;
    }
    const std::string why = unfit_source(p.string(), header, mark);
    if (!why.empty()) {
      notes.push_back(why);
      continue;
    }
    DiagnosticsResume r;
    r.mark = mark;
    r.source = p.string();
    if (p == partial) {
      fs::rename(partial, moved);
      r.source = moved.string();
    }
    return r;
  }
  if (notes.empty()) {
    if (warning)
      *warning = fmt::format(
          "'{}' holds no {} (nor .partial or .restart-source): the restarted run's {} starts "
          "after step {} (its {} rows up to there are not copied)",
          directory, final_name, final_name, mark.step, mark.rows);
    return {};
  }
  std::string why;
  for (const std::string& n : notes) why += "; " + n;
  throw DiagnosticsSourceError(fmt::format(
      "cannot continue {} in '{}': no file holds the checkpoint's {} rows (through step {}) "
      "intact{} (moving every {}* away starts a new file at the checkpoint)",
      final_name, directory, mark.rows, mark.step, why, final_name));
}

DiagnosticsWriter::DiagnosticsWriter(const std::string& directory, std::vector<std::string> columns,
                                     const DiagnosticsResume& resume)
    : columns_(std::move(columns)) {
  if (columns_.size() < 2)
    throw std::invalid_argument("diagnostics.csv: at least a step column and one value column");
  for (const std::string& c : columns_)
    if (!valid_column(c))
      throw std::invalid_argument("diagnostics.csv: invalid column name '" + c + "'");
  const fs::path dir = directory.empty() ? fs::path(".") : fs::path(directory);
  {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      throw std::runtime_error("cannot create output directory '" + dir.string() +
                               "': " + ec.message());
  }
  final_ = (dir / kDiagnosticsFile).string();
  partial_ = final_ + ".partial";
  const std::string header = diagnostics_header(columns_);
  fd_ = create_exclusive(partial_);
  if (resume.source.empty()) {
    append(header);
  } else {
    // Exactly the checkpoint's bytes of the source, checked again on the way.
    if (const std::string why = unfit_source(resume.source, header, resume.mark); !why.empty())
      throw std::runtime_error("cannot continue " + resume.source + ": " + why);
    OpenForReading in(resume.source);
    if (in.fd < 0) fail_errno("open", resume.source, errno);
    std::uint64_t digest = kFnvOffsetBasis;
    std::string tail;  // the last line, for the summary
    read_prefix(in.fd, resume.mark.bytes, resume.source, [&](const char* p, std::size_t n) {
      append(std::string(p, n));
      digest = fnv1a64(p, n, digest);
      tail.append(p, n);
      if (tail.size() > (std::size_t(1) << 16)) tail.erase(0, tail.size() - (std::size_t(1) << 15));
    });
    if (digest != resume.mark.digest)
      throw std::runtime_error("cannot continue " + resume.source + ": it changed while copied");
    mark_ = resume.mark;
    last_step_ = mark_.step;
    if (mark_.rows > 0 && tail.size() > 1) {
      const std::size_t start = tail.rfind('\n', tail.size() - 2);
      last_ = parse_row(tail.substr(start == std::string::npos ? 0 : start + 1));
    }
  }
  marks_ = {mark_};  // the file's start: the header (or the checkpoint's rows)
  active_writer() = this;
}

DiagnosticsWriter::~DiagnosticsWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (active_writer() == this) active_writer() = nullptr;
}

void DiagnosticsWriter::append(const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno("write", partial_, errno);
    done += std::size_t(n);
  }
  mark_.bytes += bytes.size();
  mark_.digest = fnv1a64(bytes.data(), bytes.size(), mark_.digest);
  synced_ = false;
}

void DiagnosticsWriter::write(std::int64_t step, const std::vector<double>& values) {
  if (finalized_) throw std::logic_error("diagnostics.csv: write after finalize()");
  if (values.size() + 1 != columns_.size())
    throw std::logic_error(fmt::format("diagnostics.csv: {} values for {} columns after '{}'",
                                       values.size(), columns_.size() - 1, columns_.front()));
  if (step <= last_step_)
    throw std::logic_error(
        fmt::format("diagnostics.csv: the row of step {} after that of step {}", step, last_step_));
  fmt::memory_buffer line;
  fmt::format_to(std::back_inserter(line), "{}", step);
  for (const double v : values) fmt::format_to(std::back_inserter(line), ",{:.17g}", v);
  line.push_back('\n');
  append(std::string(line.data(), line.size()));
  ++mark_.rows;
  mark_.step = step;
  marks_.push_back(mark_);
  last_ = values;
  last_step_ = step;
  fault_point("diagnostics", step);
}

void DiagnosticsWriter::sync() {
  if (fd_ < 0 || synced_) return;
  if (::fdatasync(fd_) != 0) fail_errno("fsync", partial_, errno);
  synced_ = true;
}

void DiagnosticsWriter::finalize() {
  if (finalized_) return;
  sync();
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail_errno("close", partial_, errno);
  publish_file(partial_, final_);
  finalized_ = true;
}

nlohmann::json DiagnosticsWriter::summary() const {
  nlohmann::json j;
  j["file"] = final_;
  j["columns"] = columns_;
  j["rows"] = mark_.rows;
  if (last_.empty() || last_step_ < 0) {
    j["last"] = nullptr;
  } else {
    nlohmann::json last;
    last[columns_.front()] = last_step_;
    for (std::size_t i = 0; i < last_.size() && i + 1 < columns_.size(); ++i)
      last[columns_[i + 1]] = last_[i];
    j["last"] = last;
  }
  return j;
}

std::optional<DiagnosticsMark> diagnostics_mark_through(std::int64_t step) {
  DiagnosticsWriter* w = active_writer();
  if (!w) return std::nullopt;
  auto& marks = w->marks_;
  // The last mark at or before `step` (ascending steps).
  auto it = std::upper_bound(marks.begin(), marks.end(), step,
                             [](std::int64_t s, const DiagnosticsMark& m) { return s < m.step; });
  if (it == marks.begin()) return std::nullopt;
  --it;
  const DiagnosticsMark m = *it;
  if (!w->finalized_) w->sync();
  marks.erase(marks.begin(), it);
  return m;
}

}  // namespace heatsolve
