// Device memory that the node's other processes map through CUDA IPC (the halo exchangers'
// buffers), carved from large exported blocks. A block costs one cudaMalloc, one export and,
// in each neighbour, one mapping (device::ipc_open maps a handle once per process); a buffer
// of its own cost all three per buffer, and a mapping about 0.5 ms (H200). Plain C++ like
// device.hpp: without CUDA or a device every request comes back empty.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/device.hpp"

namespace heatsolve::device {

struct ExportedBlock;

// A range of an exported block of the current device: its memory, and what a neighbour maps
// to reach it (the block's handle, the range's offset). The block is freed with its last
// range; a neighbour that mapped it must have closed its mapping by then, as for any IPC
// allocation.
class ExportedRange {
 public:
  ExportedRange() = default;
  void* data() const noexcept;
  const IpcHandle& handle() const noexcept;
  std::size_t offset() const noexcept { return offset_; }
  // Zeroes the range's first `bytes` and waits for it; false where that failed.
  bool set_zero(std::size_t bytes) const noexcept;
  explicit operator bool() const noexcept { return block_ != nullptr; }

 private:
  friend ExportedRange export_alloc(std::size_t bytes) noexcept;
  std::shared_ptr<const ExportedBlock> block_;
  std::size_t offset_ = 0;
};

// Blocks are at least this large (a whole number of kIpcGranularity).
inline constexpr std::size_t kExportBlockBytes = std::size_t(64) << 20;

// `bytes` of device memory in the current device's open block, or in a new one when it is
// full; empty when the memory cannot be had or exported.
ExportedRange export_alloc(std::size_t bytes) noexcept;

}  // namespace heatsolve::device
