// Host-side services of the CUDA devices in plain C++ (no CUDA type or header): what code
// outside kernels/ needs from the CUDA runtime besides a Backend: device count and compute
// capability, free device memory (the memory preflight), pinned host buffers and CUDA IPC
// mappings (the MPI halo exchange). Built without CUDA, every query reports no device and every
// allocation, export or mapping fails softly (nullptr / false), so callers need no #ifdef.
// Nothing here throws: the callers fall back (pageable buffers, staged halos) or report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "core/stencil_variants.hpp"

namespace heatsolve::device {

// Usable CUDA devices: 0 without CUDA in the build, without a driver or without a device.
int count() noexcept;

// Makes `device` current on this thread (-1: keeps the current one) and returns the current
// device; -1 when there is no such device or CUDA cannot select it.
int make_current(int device) noexcept;

// Compute capability of `device` (-1: the current one) as 10 major + minor, read once per
// device; 0 when there is no such device.
int compute_capability(int device = -1) noexcept;

// Free memory of `device` (-1: the current one; otherwise it becomes the current device: the
// rank's own device, which its backend selects anyway, and switching back would create a second
// context on the previous one); std::nullopt without CUDA or a device.
std::optional<std::uint64_t> free_memory(int device) noexcept;

// Page-locked host memory (cudaMallocHost), for staging halo buffers; nullptr when it cannot be
// had (no device, out of pinned memory): callers then use pageable memory.
void* pinned_alloc(std::size_t bytes) noexcept;
void pinned_free(void* p) noexcept;

// While one lives on this thread, the device arrays made on it of at most kCarvedMaxBytes are
// carved from shared blocks of kSlabBytes instead of a cudaMalloc each (which costs 0.05-0.1
// ms whatever the size): for many arrays made and freed together, a multigrid hierarchy's
// levels. Carved space is never reused: a block is freed (cudaFree, which waits for the
// device) with the last array carved from it, so no array can land on memory that queued work
// still uses. Batches nest; without CUDA nothing changes.
class AllocationBatch {
 public:
  AllocationBatch() noexcept;
  ~AllocationBatch();
  AllocationBatch(const AllocationBatch&) = delete;
  AllocationBatch& operator=(const AllocationBatch&) = delete;
};
inline constexpr std::size_t kCarvedMaxBytes = std::size_t(32) << 20;
inline constexpr std::size_t kSlabBytes = std::size_t(128) << 20;

// `bytes` (rounded up to 256, cudaMalloc's alignment) of the current device's memory carved
// from the batch's block, `owner` keeping the block alive; nullptr (the caller allocates
// alone) outside a batch, for a larger request, or when no block can be had.
void* carve(std::size_t bytes, std::shared_ptr<void>* owner) noexcept;

// CUDA IPC, for halo exchange between processes of one node: a process exports a device
// allocation as an opaque handle (sent to its neighbour through MPI), the neighbour maps it
// into its own address space and writes into it with ordinary device copies (over NVLink or
// PCIe, no host staging).
struct IpcHandle {
  unsigned char bytes[64];  // cudaIpcMemHandle_t (checked in device.cpp)
};

// cudaMalloc may sub-allocate small requests from a larger block, and IPC shares the whole
// block: buffers meant for export are allocated in whole multiples of this (CUDA programming
// guide, interprocess communication), so each is a block of its own.
inline constexpr std::size_t kIpcGranularity = std::size_t(2) << 20;

// Exports the allocation starting at `base` (a pointer returned by cudaMalloc). False when
// the device or driver cannot (the exchanger then stages through the host).
bool ipc_export(const void* base, IpcHandle* out) noexcept;
// Maps a neighbour's exported allocation; nullptr when it cannot be mapped.
void* ipc_open(const IpcHandle& handle) noexcept;
void ipc_close(void* mapped) noexcept;
// Probes that a mapping reaches the buffer it was exported from: the writer stores `value`
// in the first 8 bytes through the mapping, the owner reads them back (both synchronous).
// False on a CUDA error.
bool ipc_probe_write(void* mapped, std::uint64_t value) noexcept;
bool ipc_probe_read(const void* buffer, std::uint64_t* value) noexcept;

// A CUDA event that another process of the node can wait for (cudaEventInterprocess, no
// timing): with it the halo exchange orders a neighbour's unpacking after this rank's copy
// into its buffers, and this rank's next copy after that unpacking, on the devices alone
// (Backend::record_event / wait_event), where the hosts would otherwise wait for both.
struct IpcEventHandle {
  unsigned char bytes[64];  // cudaIpcEventHandle_t (checked in device.cpp)
};
class IpcEvent {
 public:
  IpcEvent() = default;
  // A new event of the current device, or an empty one when it cannot be made or exported.
  static IpcEvent create(IpcEventHandle* handle) noexcept;
  // A neighbour's event; empty when it cannot be opened.
  static IpcEvent open(const IpcEventHandle& handle) noexcept;
  ~IpcEvent();
  IpcEvent(IpcEvent&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  IpcEvent& operator=(IpcEvent&& o) noexcept;
  IpcEvent(const IpcEvent&) = delete;
  IpcEvent& operator=(const IpcEvent&) = delete;
  void* native() const noexcept { return e_; }  // the cudaEvent_t
  explicit operator bool() const noexcept { return e_ != nullptr; }

 private:
  explicit IpcEvent(void* e) noexcept : e_(e) {}
  void* e_ = nullptr;
};

}  // namespace heatsolve::device

namespace heatsolve {

// Whether the current CUDA device can run variant v (its table row's minimum compute
// capability: 2.5d-tma needs 9.0); false without a device.
bool stencil_variant_supported(StencilVariant v) noexcept;

}  // namespace heatsolve
