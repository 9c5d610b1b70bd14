#include "io/hdf5_storage.hpp"

#ifdef HEATSOLVE_HAVE_HDF5

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace heatsolve::h5 {

PropList file_access(FileFormat format, const std::string& what) {
  PropList fapl(H5Pcreate(H5P_FILE_ACCESS), "file access list for " + what);
#if H5_VERSION_GE(1, 10, 2)
  const H5F_libver_t version = format == FileFormat::Checkpoint ? H5F_LIBVER_V110 : H5F_LIBVER_V18;
  check(H5Pset_libver_bounds(fapl.get(), version, version), "set the file format of " + what);
#else
  (void)format;
  check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST),
        "set the file format of " + what);
#endif
  return fapl;
}

std::vector<hsize_t> chunk_dims(const std::vector<hsize_t>& dims, std::size_t element_size,
                                std::size_t target_bytes) {
  // From the slowest axis: shrink it until a chunk fits, then the next one.
  std::vector<hsize_t> chunk(dims.size());
  for (std::size_t a = 0; a < dims.size(); ++a) chunk[a] = std::max<hsize_t>(dims[a], 1);
  const auto bytes = [&] {
    hsize_t n = element_size;
    for (hsize_t c : chunk) n *= c;
    return n;
  };
  for (std::size_t a = 0; a < chunk.size() && bytes() > target_bytes; ++a) {
    const hsize_t rest = bytes() / chunk[a];  // bytes of one slice along axis a
    chunk[a] = std::max<hsize_t>(1, target_bytes / std::max<hsize_t>(rest, 1));
  }
  return chunk;
}

PropList chunked_dataset(const std::vector<hsize_t>& dims, std::size_t element_size,
                         const std::string& what) {
  PropList dcpl(H5Pcreate(H5P_DATASET_CREATE), "dataset creation list for " + what);
  const std::vector<hsize_t> chunk = chunk_dims(dims, element_size);
  check(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()),
        "set the chunk shape of " + what);
  return dcpl;
}

void add_checksum(hid_t dcpl, const std::string& what) {
  check(H5Pset_fletcher32(dcpl), "add the Fletcher32 checksum filter to " + what);
}

PropList checksummed_dataset(const std::vector<hsize_t>& dims, std::size_t element_size,
                             const std::string& what) {
  PropList dcpl = chunked_dataset(dims, element_size, what);
  add_checksum(dcpl.get(), what);
  return dcpl;
}

// Reads dataset `d` (`dims`, `type`) chunk by chunk (the dataset's own chunks; slabs of
// chunk_dims() for unchunked files of older versions): every checksum is verified, and the
// memory used is one chunk.
void read_chunkwise(hid_t d, hid_t type, std::size_t size, const std::vector<hsize_t>& dims,
                    const std::string& where) {
  hsize_t n = 1;
  for (hsize_t e : dims) n *= e;
  if (n == 0) return;
  std::vector<hsize_t> chunk(dims.size());
  {
    PropList dcpl(H5Dget_create_plist(d), "creation list of " + where);
    if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED ||
        H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) !=
            static_cast<int>(chunk.size()))
      chunk = chunk_dims(dims, size);
  }
  hsize_t per_chunk = 1;
  for (hsize_t c : chunk) per_chunk *= c;
  std::vector<unsigned char> buf(per_chunk * size);
  Dataspace fspace(H5Dget_space(d), "dataspace of " + where);
  std::vector<hsize_t> at(dims.size(), 0), count(dims.size());
  for (;;) {
    hsize_t m = 1;
    for (std::size_t a = 0; a < dims.size(); ++a) {
      count[a] = std::min(chunk[a], dims[a] - at[a]);
      m *= count[a];
    }
    check(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, at.data(), nullptr, count.data(),
                              nullptr),
          "select a chunk of " + where);
    Dataspace mspace(H5Screate_simple(1, &m, nullptr), "memory dataspace");
    check(H5Dread(d, type, mspace.get(), fspace.get(), H5P_DEFAULT, buf.data()), "read " + where);
    std::size_t a = dims.size();  // next chunk: the fastest axis first
    while (a > 0) {
      --a;
      at[a] += chunk[a];
      if (at[a] < dims[a]) break;
      at[a] = 0;
      if (a == 0) return;
    }
  }
}

void remove_stale_file(const std::string& path, const std::string& what) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw std::runtime_error(
        fmt::format("cannot create {} '{}': {}", what, path, std::strerror(errno)));
  }
  if (S_ISLNK(st.st_mode))
    throw std::runtime_error(fmt::format(
        "cannot create {} '{}': a symbolic link is in its place (heatsolve never writes through "
        "one; remove it)",
        what, path));
  if (!S_ISREG(st.st_mode))
    throw std::runtime_error(fmt::format(
        "cannot create {} '{}': something that is not a file is in its place", what, path));
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    throw std::runtime_error(
        fmt::format("cannot replace the stale {} '{}': {}", what, path, std::strerror(errno)));
}

File create_file(const std::string& path, hid_t fapl, const std::string& what) {
  remove_stale_file(path, what);
  return File(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl), "create " + path);
}

SpaceReserve::SpaceReserve(hid_t file, const std::string& path) : file_(file), path_(path) {
  // Test-only: behave as on a file system without preallocation (tests/e2e/fault_disk_full.sh).
  static const bool disabled = std::getenv("HEATSOLVE_TEST_NO_PREALLOCATION") != nullptr;
  if (disabled) {
    supported_ = false;
    return;
  }
  fd_ = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0) supported_ = false;  // then HDF5 reports what is wrong with the file itself
}

SpaceReserve::~SpaceReserve() {
  if (fd_ >= 0) ::close(fd_);
}

SpaceReserve::SpaceReserve(SpaceReserve&& other) noexcept
    : file_(std::exchange(other.file_, H5I_INVALID_HID)),
      path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      supported_(other.supported_) {}

SpaceReserve& SpaceReserve::operator=(SpaceReserve&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    file_ = std::exchange(other.file_, H5I_INVALID_HID);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    supported_ = other.supported_;
  }
  return *this;
}

namespace {

std::string mebibytes(std::uint64_t bytes) {
  return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20));
}

}  // namespace

void SpaceReserve::ensure(std::uint64_t bytes, const std::string& what) {
  if (!supported_ || fd_ < 0) return;
  struct stat st;
  if (::fstat(fd_, &st) != 0) return;
  std::uint64_t end = std::uint64_t(st.st_size);
#if H5_VERSION_GE(1, 10, 2)
  haddr_t eoa = 0;
  if (H5Fget_eoa(file_, &eoa) >= 0) end = std::max<std::uint64_t>(end, eoa);
  H5Eclear2(H5E_DEFAULT);
#endif
  const std::uint64_t want = end + bytes;
  const auto fail = [&](int err) {
    throw std::runtime_error(fmt::format("cannot write {} to '{}': {} (needs about {} more)", what,
                                         path_, std::strerror(err), mebibytes(bytes)));
  };
  // `ulimit -f`: preallocation beyond the file's size is not counted against it, the writes
  // that follow are (EFBIG, SIGXFSZ ignored in main()).
  struct rlimit limit;
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      want > std::uint64_t(limit.rlim_cur))
    fail(EFBIG);
  // From a little below the current size: HDF5 allocates space before it writes it, so the
  // last blocks may still be holes.
  constexpr std::uint64_t kBelow = std::uint64_t(1) << 20;
  const std::uint64_t start = std::min<std::uint64_t>(st.st_size, end) / 4096 * 4096;
  const std::uint64_t from = start > kBelow ? start - kBelow : 0;
  int rc;
  do rc = ::fallocate(fd_, FALLOC_FL_KEEP_SIZE, off_t(from), off_t(want - from));
  while (rc != 0 && errno == EINTR);
  if (rc == 0) return;
  const int err = errno;
  if (err == EOPNOTSUPP || err == ENOSYS || err == EINVAL) {
    supported_ = false;  // this file system cannot preallocate: best effort
    return;
  }
  release();
  fail(err);
}

void SpaceReserve::release() noexcept {
  if (fd_ < 0) return;
  // Truncating to the current size drops the blocks preallocated beyond it (ext4, xfs, tmpfs).
  struct stat st;
  if (::fstat(fd_, &st) == 0) (void)!::ftruncate(fd_, st.st_size);
}

std::uint64_t metadata_margin(std::uint64_t value_bytes) {
  // Measured: a step adds 4-12 KiB of metadata (v1.8 format, 8^3 to 64^3 cells, 1000 steps).
  return (std::uint64_t(64) << 10) + value_bytes / 50;
}

}  // namespace heatsolve::h5

namespace heatsolve {
bool hdf5_objects_leaked() {
  return h5::leaked_flag();
}
}  // namespace heatsolve

#else

namespace heatsolve {
bool hdf5_objects_leaked() {
  return false;
}
}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_HDF5
