// A run owns its output directory: `<directory>/.heatsolve.lock`, locked with flock(2)
// (LOCK_EX | LOCK_NB) for the life of the run, holds the holder's host, pid and start time.
// A second run into the same directory finds the lock taken and is refused with that
// information. The kernel drops a flock when its process dies, however it dies (SIGKILL, a
// crash, MPI_Abort), so a lock file whose flock can be taken is stale: it is taken over and
// the previous holder is reported. The file is never deleted (unlinking a lock file while
// another process may have it open races); a clean release truncates it, so a non-empty file
// found on acquiring means the previous holder ended without releasing it.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace heatsolve {

// Who holds (or held) a lock: what the lock file says.
struct LockHolder {
  std::string host;
  long pid = 0;
  std::string started;  // ISO 8601 local time with UTC offset, e.g. 2025-03-01T14:02:11+01:00

  // "host node17, pid 41234, started 2025-03-01T14:02:11+01:00"
  std::string describe() const;
};

// The lock file's text for `h`, and back (nothing when it names no pid: empty or foreign).
std::string format_lock_holder(const LockHolder& h);
std::optional<LockHolder> parse_lock_holder(std::string_view text);

// The lock is held by a live process. what(): the full message for the user (directory,
// holder, what to do).
struct RunLockHeld : std::runtime_error {
  RunLockHeld(const std::string& message, std::optional<LockHolder> h, std::string path)
      : std::runtime_error(message), holder(std::move(h)), lock_path(std::move(path)) {}
  std::optional<LockHolder> holder;  // nothing when the file named no holder in time
  std::string lock_path;
};

// Any other failure to take the lock (open, flock, stat). error(): the errno, so that callers
// can tell an unwritable directory (EACCES, EROFS) or a file system without flock (ENOSYS,
// EOPNOTSUPP, ENOLCK) from other errors.
struct RunLockError : std::runtime_error {
  RunLockError(const std::string& message, int err) : std::runtime_error(message), error_(err) {}
  int error() const { return error_; }

 private:
  int error_;
};

class RunLock {
 public:
  static constexpr const char* kFileName = ".heatsolve.lock";

  // Takes the lock of `directory` (which must exist) or throws RunLockHeld / RunLockError.
  // Never blocks on the lock itself; when the holder has not written its information yet
  // (a lock taken an instant ago) it waits for it up to about a second.
  explicit RunLock(const std::string& directory);
  // Truncates the lock file (a clean release) and closes it, which drops the flock.
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  const std::string& path() const { return path_; }
  const LockHolder& holder() const { return self_; }
  // The previous holder when the lock was stale (it ended without releasing the lock).
  const std::optional<LockHolder>& stale_holder() const { return stale_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool writable_ = true;  // false: only a read-only descriptor (the holder info stays as is)
  LockHolder self_;
  std::optional<LockHolder> stale_;
};

// This host's name (gethostname), "unknown" when it has none.
std::string this_host_name();

}  // namespace heatsolve
