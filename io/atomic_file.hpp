// Crash-safe publication of output files: write under a temporary name in the same directory,
// fsync, then rename(2) over the final name. A reader sees either the previous complete file or
// the new complete file, never a truncated one.
#pragma once

#include <string>
#include <string_view>

namespace heatsolve {

// A text (or any byte) file written to `<path>.tmp.<pid>` and renamed to `path` by commit().
// Destroyed without commit() (an exception, an abandoned write), the temporary is removed and
// `path` is left untouched. Errors throw std::runtime_error naming the file and operation.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view bytes);
  // fsync, close, rename to the final path, fsync the directory. At most once.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_; }

 private:
  std::string path_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// Writes `contents` to `path` atomically (AtomicFile in one call).
void write_file_atomically(const std::string& path, std::string_view contents);

// Publishes a finished, closed file written under a temporary name (e.g. `run.h5.partial`):
// fsyncs it, renames it over `final_path` (same directory/filesystem), fsyncs the directory.
void publish_file(const std::string& temp_path, const std::string& final_path);

}  // namespace heatsolve
