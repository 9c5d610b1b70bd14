// How heatsolve lays out and creates its HDF5 files so that damage is detected, a full disk is
// a clean error, and nothing is written through a planted symbolic link (docs/robustness.md).
// Internal to the io library (checkpoints and the series writer); include only under
// HEATSOLVE_HAVE_HDF5.
//
// * Checksums: every dataset is chunked and passes through HDF5's Fletcher32 filter, so a read
//   of a damaged chunk fails ("data error detected by Fletcher32 checksum"); the files use the
//   HDF5 1.8 format or newer, whose superblock, object headers (attributes), B-trees and heaps
//   carry checksums of their own.
// * Disk space: HDF5 1.10 cannot close a file after one of its writes failed (its metadata
//   cache stays inconsistent; the library's exit-time clean-up then crashes). SpaceReserve
//   allocates the disk blocks an operation will need before HDF5 writes anything, so that a
//   full disk, a quota or `ulimit -f` stops the run before the file is touched.
#pragma once

namespace heatsolve {

// True when an HDF5 object could not be closed (h5::note_failed_close). The library's own
// clean-up at exit would crash on it: main() flushes its output and ends the process with
// _Exit instead (the file concerned is a temporary or partial file: nothing under a final
// name). Always false in a build without HDF5.
bool hdf5_objects_leaked();

}  // namespace heatsolve

#ifdef HEATSOLVE_HAVE_HDF5

#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5_handle.hpp"

namespace heatsolve::h5 {

// Which HDF5 file format a file uses.
//   Series: the 1.8 format (superblock 2, checksummed object headers, heaps and B-trees),
//     which HDF5 1.10 still opens after the writer was killed (the 1.10 format's superblock 3
//     then refuses: "file is already open for write").
//   Checkpoint: the 1.10 format: chunk indexes checksummed too. Written under a temporary
//     name and renamed only after a clean close, so a killed writer never leaves one.
enum class FileFormat { Series, Checkpoint };
PropList file_access(FileFormat format, const std::string& what);

// Chunk shape for a dataset of extents `dims` (slowest first): whole rows and planes of the
// fastest axes, about `target_bytes` per chunk (HDF5 allows at most 4 GiB), every extent >= 1.
std::vector<hsize_t> chunk_dims(const std::vector<hsize_t>& dims, std::size_t element_size,
                                std::size_t target_bytes = std::size_t(4) << 20);
// A chunked dataset creation list for `dims` (no filter yet).
PropList chunked_dataset(const std::vector<hsize_t>& dims, std::size_t element_size,
                         const std::string& what);
// Adds the Fletcher32 checksum filter to `dcpl`. Filters run in the order they are added when
// writing: add compression (shuffle, deflate, zfp) before this, so that the checksum covers
// the bytes as stored.
void add_checksum(hid_t dcpl, const std::string& what);
// chunked_dataset() + add_checksum().
PropList checksummed_dataset(const std::vector<hsize_t>& dims, std::size_t element_size,
                             const std::string& what);

// Reads all of dataset `d` (extents `dims`, converted to `type` of `size` bytes) one chunk at
// a time, discarding the values: every chunk's checksum is verified on the way (throws
// std::runtime_error naming `where`), the memory used is one chunk. Datasets that are not
// chunked (files of older versions) are read in slabs of chunk_dims().
void read_chunkwise(hid_t d, hid_t type, std::size_t size, const std::vector<hsize_t>& dims,
                    const std::string& where);

// Makes room for creating `path` without following a symbolic link: a regular file of that
// name (a stale temporary, the previous run's partial file) is removed; a symbolic link is an
// error (std::runtime_error: never written through), as is anything else that is not a
// regular file. Nothing there: nothing to do.
void remove_stale_file(const std::string& path, const std::string& what);
// Creates `path` exclusively (H5F_ACC_EXCL: O_CREAT|O_EXCL, which never follows a symbolic
// link) after remove_stale_file().
File create_file(const std::string& path, hid_t fapl, const std::string& what);

// Keeps the disk blocks of an HDF5 file allocated ahead of its end of allocation
// (fallocate(FALLOC_FL_KEEP_SIZE): the file's size does not change, HDF5 sees nothing).
// Where the file system cannot preallocate (EOPNOTSUPP), it does nothing: HDF5 then meets a
// full disk itself, and the run still ends with exit 1 (see hdf5_objects_leaked()).
// HEATSOLVE_TEST_NO_PREALLOCATION (set: any value) makes every file behave so (tests).
class SpaceReserve {
 public:
  SpaceReserve() = default;
  // `path`: the file `file` is; opened once more (O_NOFOLLOW) for the reservation.
  SpaceReserve(hid_t file, const std::string& path);
  ~SpaceReserve();
  SpaceReserve(SpaceReserve&& other) noexcept;
  SpaceReserve& operator=(SpaceReserve&& other) noexcept;
  SpaceReserve(const SpaceReserve&) = delete;
  SpaceReserve& operator=(const SpaceReserve&) = delete;

  // Allocates `bytes` past the file's end of allocation (and the blocks below it not yet
  // written), or throws std::runtime_error "cannot write <what> to '<path>': <errno text>
  // (needs about N MiB more)" having written nothing: ENOSPC, EDQUOT, or EFBIG past the
  // RLIMIT_FSIZE of `ulimit -f`.
  void ensure(std::uint64_t bytes, const std::string& what);
  // Frees the blocks reserved past the file's end (the file's data stay): after the file is
  // closed, or before closing it after a failure.
  void release() noexcept;

 private:
  hid_t file_ = H5I_INVALID_HID;  // not owned
  std::string path_;
  int fd_ = -1;
  bool supported_ = true;
};

// Room that writing one step of `value_bytes` raw bytes needs besides the data: chunk
// checksums, compression overhead, and the metadata the step adds (groups, attributes,
// chunk index, the /steps links' heap growing).
std::uint64_t metadata_margin(std::uint64_t value_bytes);

}  // namespace heatsolve::h5

#endif  // HEATSOLVE_HAVE_HDF5
