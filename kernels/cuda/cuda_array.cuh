// Device buffers: CudaBuffer<T> (plain RAII cudaMalloc/cudaFree) and CudaArray<T>, the
// Array<T> the CUDA backend hands out. Allocated once per run; copies are synchronous (below).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <utility>

#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/device.hpp"

namespace heatsolve::cuda {

template <typename T>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  // The allocation is rounded up to 256 bytes: 2.5d-tma's bulk row copies cover the 16-byte
  // aligned range around a row, up to 16 - sizeof(T) bytes past the last element. Inside a
  // device::AllocationBatch small buffers are carved from a shared block (`block_` keeps it).
  explicit CudaBuffer(std::size_t n) : n_(n) {
    if (n_ == 0) return;
    const std::size_t bytes = (n_ * sizeof(T) + 255) / 256 * 256;
    p_ = static_cast<T*>(device::carve(bytes, &block_));
    if (!p_) CUDA_CHECK(cudaMalloc(&p_, bytes));
  }
  ~CudaBuffer() { release(); }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  CudaBuffer(CudaBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), block_(std::move(o.block_)) {}
  CudaBuffer& operator=(CudaBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
      block_ = std::move(o.block_);
    }
    return *this;
  }
  T* get() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  void release() noexcept {
    if (p_ && !block_) cudaFree(p_);  // no throwing from a destructor
    block_.reset();
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
  std::shared_ptr<void> block_;  // the shared block a carved buffer lives in
};

// Its operations run on the legacy default stream, which the backends' non-blocking streams do
// not follow (a device-to-device cudaMemcpy or a cudaMemset does not even wait on the host):
// each waits for the device's earlier work, which may still read or write the array, and is
// complete when it returns, so that it sits in program order with the backend's work.
template <typename T>
class CudaArray final : public Array<T> {
 public:
  // Zero-filled, as Backend::allocate promises (ghost cells start defined).
  explicit CudaArray(std::size_t n) : buf_(n) {
    if (n) {
      CUDA_CHECK(cudaMemset(buf_.get(), 0, n * sizeof(T)));
      CUDA_CHECK(cudaStreamSynchronize(nullptr));  // nothing else can use it yet
    }
  }
  T* data() override { return buf_.get(); }
  const T* data() const override { return buf_.get(); }
  std::size_t size() const override { return buf_.size(); }
  void copy_from_host(const T* src) override {
    in_order([&] { CUDA_CHECK(cudaMemcpy(buf_.get(), src, bytes(), cudaMemcpyHostToDevice)); });
  }
  void copy_to_host(T* dst) const override {
    in_order([&] { CUDA_CHECK(cudaMemcpy(dst, buf_.get(), bytes(), cudaMemcpyDeviceToHost)); });
  }
  void set_zero() override {
    in_order([&] { CUDA_CHECK(cudaMemset(buf_.get(), 0, bytes())); });
  }
  void copy_from(const Array<T>& other) override {
    if (other.size() != size()) throw std::invalid_argument("CudaArray::copy_from: size mismatch");
    in_order([&] {
      CUDA_CHECK(cudaMemcpy(buf_.get(), other.data(), bytes(), cudaMemcpyDeviceToDevice));
    });
  }

 private:
  std::size_t bytes() const { return size() * sizeof(T); }
  // op (CUDA calls on the legacy stream) after the device's earlier work, and waited for.
  template <class Op>
  void in_order(Op op) const {
    if (!size()) return;
    CUDA_CHECK(cudaDeviceSynchronize());
    op();
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
  CudaBuffer<T> buf_;
};

// Fills p[0..n) with reproducible pseudo-random values in [lo, hi) (a hash of the index and
// the seed), on the device: benchmark and auto-tuning inputs are never zeros.
template <typename T>
void fill_random_device(T* p, std::size_t n, unsigned long long seed, double lo, double hi,
                        cudaStream_t stream);

}  // namespace heatsolve::cuda
