// kernels/device.hpp: the CUDA runtime calls behind it, or the answers of a build without CUDA.
#include "kernels/device.hpp"

#ifdef HEATSOLVE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#endif

namespace heatsolve {

#ifdef HEATSOLVE_HAVE_CUDA
namespace device {
namespace {

static_assert(sizeof(IpcHandle) == sizeof(cudaIpcMemHandle_t), "IPC handle size");

// A failed runtime call leaves its error to be returned again by cudaGetLastError: clear it,
// so that the CUDA_CHECKs of later, unrelated calls do not report it.
bool ok(cudaError_t e) noexcept {
  if (e == cudaSuccess) return true;
  (void)cudaGetLastError();
  return false;
}

// The batches open on this thread and the block they carve from.
struct Slab {
  void* base = nullptr;
  std::size_t used = 0;
  int device = -1;
  ~Slab() {
    if (base) cudaFree(base);  // no throwing from a destructor
  }
};
thread_local int batch_depth = 0;
thread_local std::shared_ptr<Slab> current_slab;

}  // namespace

AllocationBatch::AllocationBatch() noexcept {
  ++batch_depth;
}
AllocationBatch::~AllocationBatch() {
  if (--batch_depth == 0) current_slab.reset();  // the arrays keep their blocks
}

void* carve(std::size_t bytes, std::shared_ptr<void>* owner) noexcept {
  bytes = (bytes + 255) / 256 * 256;
  // HEATSOLVE_NO_ALLOCATION_BATCH=1: every array its own cudaMalloc (to measure what the
  // batches save, in one build).
  static const bool off = std::getenv("HEATSOLVE_NO_ALLOCATION_BATCH") != nullptr;
  int dev = -1;
  if (off || batch_depth == 0 || bytes > kCarvedMaxBytes || !ok(cudaGetDevice(&dev)))
    return nullptr;
  std::shared_ptr<Slab>& s = current_slab;
  if (!s || s->device != dev || s->used + bytes > kSlabBytes) {
    try {
      auto fresh = std::make_shared<Slab>();
      if (!ok(cudaMalloc(&fresh->base, kSlabBytes))) return nullptr;
      fresh->device = dev;
      s = std::move(fresh);
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }
  void* p = static_cast<char*>(s->base) + s->used;
  s->used += bytes;
  *owner = s;
  return p;
}

int count() noexcept {
  int n = 0;
  return ok(cudaGetDeviceCount(&n)) ? n : 0;
}

int compute_capability(int device) noexcept {
  // Read once per device: 2.5d-tma asks before every launch.
  static std::mutex mu;
  static std::map<int, int> cache;
  if (device < 0 && !ok(cudaGetDevice(&device))) return 0;
  try {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = cache.find(device);
    if (it != cache.end()) return it->second;
    int major = 0, minor = 0;
    if (!ok(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) ||
        !ok(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device)))
      return 0;
    return cache[device] = 10 * major + minor;
  } catch (...) {  // std::system_error (mutex) or std::bad_alloc (map): unknown
    return 0;
  }
}

int make_current(int device) noexcept {
  if (device >= count() || (device >= 0 && !ok(cudaSetDevice(device)))) return -1;
  int current = -1;
  return ok(cudaGetDevice(&current)) ? current : -1;
}

std::optional<std::uint64_t> free_memory(int device) noexcept {
  if (count() == 0 || make_current(device) < 0) return std::nullopt;
  std::size_t free = 0, total = 0;
  if (!ok(cudaMemGetInfo(&free, &total))) return std::nullopt;
  return static_cast<std::uint64_t>(free);
}

void* pinned_alloc(std::size_t bytes) noexcept {
  void* p = nullptr;
  return ok(cudaMallocHost(&p, bytes)) ? p : nullptr;
}

void pinned_free(void* p) noexcept {
  if (p) cudaFreeHost(p);
}

bool ipc_export(const void* base, IpcHandle* out) noexcept {
  cudaIpcMemHandle_t h;
  if (!ok(cudaIpcGetMemHandle(&h, const_cast<void*>(base)))) return false;
  std::memcpy(out->bytes, &h, sizeof h);
  return true;
}

namespace {

// The process's mappings by device and handle, counted: the exchangers of every multigrid level
// map ranges of the same exported blocks (ipc_pool.hpp), and a mapping costs about 0.5 ms
// where a count costs nothing. (The runtime counts repeated opens too; this keeps the cost
// of a repeat off the driver.)
struct Mappings {
  struct Entry {
    void* base = nullptr;
    int count = 0;
  };
  std::mutex mu;
  std::map<std::pair<int, std::array<unsigned char, sizeof(IpcHandle)>>, Entry> by_handle;
};

Mappings& mappings() {
  static Mappings* m = new Mappings();  // never destroyed: closes may come from static destructors
  return *m;
}

}  // namespace

void* ipc_open(const IpcHandle& handle) noexcept {
  int dev = 0;
  if (!ok(cudaGetDevice(&dev))) return nullptr;
  try {
    Mappings& m = mappings();
    std::lock_guard<std::mutex> lock(m.mu);
    std::array<unsigned char, sizeof(IpcHandle)> key;
    std::memcpy(key.data(), handle.bytes, key.size());
    Mappings::Entry& e = m.by_handle[{dev, key}];
    if (e.count == 0) {
      cudaIpcMemHandle_t h;
      std::memcpy(&h, handle.bytes, sizeof h);
      if (!ok(cudaIpcOpenMemHandle(&e.base, h, cudaIpcMemLazyEnablePeerAccess))) {
        m.by_handle.erase({dev, key});
        return nullptr;
      }
    }
    ++e.count;
    return e.base;
  } catch (...) {  // std::bad_alloc, std::system_error (mutex): not mapped
    return nullptr;
  }
}

void ipc_close(void* mapped) noexcept {
  if (!mapped) return;
  try {
    Mappings& m = mappings();
    std::lock_guard<std::mutex> lock(m.mu);
    for (auto it = m.by_handle.begin(); it != m.by_handle.end(); ++it) {
      if (it->second.base != mapped) continue;
      if (--it->second.count == 0) {
        ok(cudaIpcCloseMemHandle(mapped));
        m.by_handle.erase(it);
      }
      return;
    }
  } catch (...) {  // std::system_error (mutex)
    return;
  }
  ok(cudaIpcCloseMemHandle(mapped));  // not opened through ipc_open
}

bool ipc_probe_write(void* mapped, std::uint64_t value) noexcept {
  // A copy from pageable memory may return before its DMA lands: wait for the device.
  return ok(cudaMemcpy(mapped, &value, sizeof value, cudaMemcpyDefault)) &&
         ok(cudaDeviceSynchronize());
}

bool ipc_probe_read(const void* buffer, std::uint64_t* value) noexcept {
  return ok(cudaMemcpy(value, buffer, sizeof *value, cudaMemcpyDefault));
}

static_assert(sizeof(IpcEventHandle) == sizeof(cudaIpcEventHandle_t), "IPC event handle size");

IpcEvent IpcEvent::create(IpcEventHandle* handle) noexcept {
  cudaEvent_t e = nullptr;
  if (!ok(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventInterprocess))) return {};
  IpcEvent event(e);
  cudaIpcEventHandle_t h;
  if (!ok(cudaIpcGetEventHandle(&h, e))) return {};
  std::memcpy(handle->bytes, &h, sizeof h);
  return event;
}

IpcEvent IpcEvent::open(const IpcEventHandle& handle) noexcept {
  cudaIpcEventHandle_t h;
  std::memcpy(&h, handle.bytes, sizeof h);
  cudaEvent_t e = nullptr;
  return ok(cudaIpcOpenEventHandle(&e, h)) ? IpcEvent(e) : IpcEvent();
}

IpcEvent::~IpcEvent() {
  if (e_) ok(cudaEventDestroy(static_cast<cudaEvent_t>(e_)));
}

IpcEvent& IpcEvent::operator=(IpcEvent&& o) noexcept {
  if (this != &o) {
    if (e_) ok(cudaEventDestroy(static_cast<cudaEvent_t>(e_)));
    e_ = o.e_;
    o.e_ = nullptr;
  }
  return *this;
}

}  // namespace device

#else  // !HEATSOLVE_HAVE_CUDA: no device; nothing can be pinned, exported or mapped.

namespace device {
AllocationBatch::AllocationBatch() noexcept = default;
AllocationBatch::~AllocationBatch() = default;
void* carve(std::size_t, std::shared_ptr<void>*) noexcept {
  return nullptr;
}
int count() noexcept {
  return 0;
}
int make_current(int) noexcept {
  return -1;
}
int compute_capability(int) noexcept {
  return 0;
}
std::optional<std::uint64_t> free_memory(int) noexcept {
  return std::nullopt;
}
void* pinned_alloc(std::size_t) noexcept {
  return nullptr;
}
void pinned_free(void*) noexcept {}
bool ipc_export(const void*, IpcHandle*) noexcept {
  return false;
}
void* ipc_open(const IpcHandle&) noexcept {
  return nullptr;
}
void ipc_close(void*) noexcept {}
bool ipc_probe_write(void*, std::uint64_t) noexcept {
  return false;
}
bool ipc_probe_read(const void*, std::uint64_t*) noexcept {
  return false;
}
IpcEvent IpcEvent::create(IpcEventHandle*) noexcept {
  return {};
}
IpcEvent IpcEvent::open(const IpcEventHandle&) noexcept {
  return {};
}
IpcEvent::~IpcEvent() = default;
IpcEvent& IpcEvent::operator=(IpcEvent&& o) noexcept {
  e_ = o.e_;
  o.e_ = nullptr;
  return *this;
}
}  // namespace device

#endif

bool stencil_variant_supported(StencilVariant v) noexcept {
  const int cc = device::compute_capability();
  return cc > 0 && cc >= stencil_variant_row(v).min_compute_capability;
}

}  // namespace heatsolve
