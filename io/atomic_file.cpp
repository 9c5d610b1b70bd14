#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace heatsolve {
namespace {

[[noreturn]] void fail_errno(const std::string& what, const std::string& path, int err) {
  throw std::runtime_error("cannot " + what + " '" + path + "': " + std::strerror(err));
}

std::string parent_directory(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void fsync_path(const std::string& path, int flags, const char* what) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail_errno(what, path, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Some filesystems refuse fsync on directories (EINVAL): the rename itself still happened.
  if (rc != 0 && !((flags & O_DIRECTORY) != 0 && (err == EINVAL || err == EBADF))) {
    fail_errno(what, path, err);
  }
}

void fsync_directory_of(const std::string& path) {
  fsync_path(parent_directory(path), O_RDONLY | O_DIRECTORY, "fsync directory");
}

}  // namespace

AtomicFile::AtomicFile(std::string path)
    : path_(std::move(path)), temp_(path_ + ".tmp." + std::to_string(::getpid())) {
  // Exclusively and without following a symbolic link: a file of this name left by a killed
  // process that had our pid is replaced, a symbolic link planted there is an error.
  for (int attempt = 0; attempt < 2; ++attempt) {
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ >= 0) return;
    const int err = errno;
    struct stat st;
    if (err != EEXIST || ::lstat(temp_.c_str(), &st) != 0) fail_errno("create", temp_, err);
    if (S_ISLNK(st.st_mode))
      throw std::runtime_error("cannot create '" + temp_ +
                               "': a symbolic link is in its place (heatsolve never writes "
                               "through one; remove it)");
    if (!S_ISREG(st.st_mode) || ::unlink(temp_.c_str()) != 0) fail_errno("create", temp_, err);
  }
  fail_errno("create", temp_, EEXIST);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFile::write(std::string_view bytes) {
  if (fd_ < 0) throw std::logic_error("AtomicFile::write after commit: " + path_);
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno("write", temp_, errno);
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw std::logic_error("AtomicFile::commit called twice: " + path_);
  if (::fsync(fd_) != 0) fail_errno("fsync", temp_, errno);
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail_errno("close", temp_, errno);
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    fail_errno("rename '" + temp_ + "' to", path_, errno);
  }
  committed_ = true;
  fsync_directory_of(path_);
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  AtomicFile file(path);
  file.write(contents);
  file.commit();
}

void publish_file(const std::string& temp_path, const std::string& final_path) {
  fsync_path(temp_path, O_RDONLY, "fsync");
  if (::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    fail_errno("rename '" + temp_path + "' to", final_path, errno);
  }
  fsync_directory_of(final_path);
}

}  // namespace heatsolve
