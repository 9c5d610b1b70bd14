#include "io/run_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <utility>

namespace heatsolve {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw RunLockError("cannot " + what + " lock file '" + path + "': " + std::strerror(err), err);
}

std::string iso_now() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  if (::localtime_r(&now, &local) == nullptr) return "unknown";
  char text[64];
  if (std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S%z", &local) == 0) return "unknown";
  std::string s(text);
  // %z gives +hhmm; ISO 8601's extended format wants +hh:mm.
  if (s.size() >= 5 && (s[s.size() - 5] == '+' || s[s.size() - 5] == '-'))
    s.insert(s.size() - 2, ":");
  return s;
}

// The whole file from offset 0 (it is small), or "" on any error.
std::string read_all(int fd) {
  std::string text;
  char buf[512];
  off_t offset = 0;
  while (text.size() < 65536) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, std::size_t(n));
    offset += n;
  }
  return text;
}

// Writes the whole text at offset 0 after truncating; best effort (a lock whose information
// cannot be written, e.g. on a full disk, still excludes other runs).
void rewrite(int fd, const std::string& text) {
  if (::ftruncate(fd, 0) != 0) return;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += std::size_t(n);
  }
  ::fdatasync(fd);  // visible to other NFS clients reading the file
}

}  // namespace

std::string this_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "unknown";
  return name;
}

std::string LockHolder::describe() const {
  return "host " + host + ", pid " + std::to_string(pid) + ", started " + started;
}

std::string format_lock_holder(const LockHolder& h) {
  return "host=" + h.host + "\npid=" + std::to_string(h.pid) + "\nstarted=" + h.started + "\n";
}

std::optional<LockHolder> parse_lock_holder(std::string_view text) {
  LockHolder h;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, eq);
    const std::string value(line.substr(eq + 1));
    if (key == "host") {
      h.host = value;
    } else if (key == "started") {
      h.started = value;
    } else if (key == "pid") {
      char* end = nullptr;
      const long pid = std::strtol(value.c_str(), &end, 10);
      if (end != value.c_str() && *end == '\0' && pid > 0) h.pid = pid;
    }
  }
  if (h.pid <= 0) return std::nullopt;
  if (h.host.empty()) h.host = "unknown";
  if (h.started.empty()) h.started = "unknown";
  return h;
}

RunLock::RunLock(const std::string& directory)
    : path_((directory.empty() ? std::string(".") : directory) + "/" + kFileName) {
  self_ = {this_host_name(), long(::getpid()), iso_now()};
  // More than one round when the file we locked was replaced meanwhile (someone deleted it
  // or the whole directory: the lock would be on a file nobody else opens), or when the lock
  // is held but names no holder yet: taken (or released) an instant ago.
  int replaced = 0, waited = 0;
  for (;;) {
    writable_ = true;
    // Never through a symbolic link (O_NOFOLLOW): one planted at the lock file's name would
    // have the holder's information written into its target.
    int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ELOOP)
      throw RunLockError("lock file '" + path_ +
                             "' is a symbolic link: heatsolve never writes through one (remove it)",
                         ELOOP);
    if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM)) {
      // An existing lock file we may not write (another user's, a read-only file system):
      // flock works on a read-only descriptor too.
      const int open_err = errno;
      fd = ::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) fail("create", path_, errno == ENOENT ? open_err : errno);
      writable_ = false;
    } else if (fd < 0) {
      fail("create", path_, errno);
    }
    int rc;
    do rc = ::flock(fd, LOCK_EX | LOCK_NB);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      const int err = errno;
      if (err != EWOULDBLOCK) {
        ::close(fd);
        fail("lock", path_, err);
      }
      // Held. The holder writes its information right after taking the lock, and empties
      // the file right before releasing it: when the file names nobody, try again shortly.
      const std::optional<LockHolder> holder = parse_lock_holder(read_all(fd));
      ::close(fd);
      if (!holder && waited++ < 50) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      const std::string dir = directory.empty() ? "." : directory;
      throw RunLockHeld(
          "output directory '" + dir + "' is in use by another run (" +
              (holder ? holder->describe() : std::string("the lock file names no holder")) +
              "; lock file '" + path_ +
              "'): wait for it to finish or stop it, or choose another output.directory",
          holder, path_);
    }
    // Locked: make sure it is the file that the path names now.
    struct stat locked;
    struct stat named;
    if (::fstat(fd, &locked) != 0) {
      const int err = errno;
      ::close(fd);
      fail("stat", path_, err);
    }
    if (::lstat(path_.c_str(), &named) != 0 || named.st_dev != locked.st_dev ||
        named.st_ino != locked.st_ino) {
      ::close(fd);
      if (++replaced < 10) continue;
      fail("lock", path_, ESTALE);
    }
    fd_ = fd;
    break;
  }
  if (!writable_) return;
  // A clean release leaves the file empty: a holder named here ended without releasing.
  stale_ = parse_lock_holder(read_all(fd_));
  rewrite(fd_, format_lock_holder(self_));
}

RunLock::~RunLock() {
  if (fd_ < 0) return;
  if (writable_) {
    // Still under the lock: nobody reads a half-truncated file as a holder (readers retry).
    if (::ftruncate(fd_, 0) == 0) ::fdatasync(fd_);
  }
  ::close(fd_);  // drops the flock
}

}  // namespace heatsolve
