// kernels/ipc_pool.hpp: exported blocks through the CUDA runtime, or none without CUDA.
#include "kernels/ipc_pool.hpp"

#ifdef HEATSOLVE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <mutex>
#endif

namespace heatsolve::device {

struct ExportedBlock {
  void* base = nullptr;
  std::size_t bytes = 0;
  IpcHandle handle{};
  ExportedBlock() = default;
  ExportedBlock(const ExportedBlock&) = delete;
  ExportedBlock& operator=(const ExportedBlock&) = delete;
#ifdef HEATSOLVE_HAVE_CUDA
  ~ExportedBlock() {
    if (base) (void)cudaFree(base);
  }
#endif
};

void* ExportedRange::data() const noexcept {
  return block_ ? static_cast<unsigned char*>(block_->base) + offset_ : nullptr;
}

const IpcHandle& ExportedRange::handle() const noexcept {
  static const IpcHandle none{};
  return block_ ? block_->handle : none;
}

#ifdef HEATSOLVE_HAVE_CUDA
bool ExportedRange::set_zero(std::size_t bytes) const noexcept {
  // On the legacy default stream, which the backends' non-blocking streams do not follow:
  // waited for here, so that whatever writes the range next (a neighbour's probe, a gather)
  // finds it zeroed.
  if (!block_ || offset_ + bytes > block_->bytes) return false;
  if (cudaMemset(data(), 0, bytes) != cudaSuccess ||
      cudaStreamSynchronize(nullptr) != cudaSuccess) {
    (void)cudaGetLastError();  // this call's error only
    return false;
  }
  return true;
}

ExportedRange export_alloc(std::size_t bytes) noexcept {
  // Ranges start on 256-byte boundaries, as cudaMalloc's allocations do.
  constexpr std::size_t kAlign = 256;
  bytes = (bytes + kAlign - 1) / kAlign * kAlign;
  struct Open {
    std::weak_ptr<const ExportedBlock> block;
    std::size_t used = 0;
  };
  static std::mutex mu;
  static std::map<int, Open> open;  // by device
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  try {
    std::lock_guard<std::mutex> lock(mu);
    Open& o = open[dev];
    std::shared_ptr<const ExportedBlock> block = o.block.lock();
    if (!block || o.used + bytes > block->bytes) {
      auto fresh = std::make_shared<ExportedBlock>();
      fresh->bytes = std::max(kExportBlockBytes,
                              (bytes + kIpcGranularity - 1) / kIpcGranularity * kIpcGranularity);
      if (cudaMalloc(&fresh->base, fresh->bytes) != cudaSuccess) {
        fresh->base = nullptr;
        (void)cudaGetLastError();
        return {};
      }
      if (!ipc_export(fresh->base, &fresh->handle)) return {};  // freed with `fresh`
      block = std::move(fresh);
      o.block = block;
      o.used = 0;
    }
    ExportedRange r;
    r.block_ = std::move(block);
    r.offset_ = o.used;
    o.used += bytes;
    return r;
  } catch (...) {  // std::bad_alloc, std::system_error (mutex): none
    return {};
  }
}
#else
bool ExportedRange::set_zero(std::size_t) const noexcept {
  return false;
}

ExportedRange export_alloc(std::size_t) noexcept {
  return {};
}
#endif

}  // namespace heatsolve::device
