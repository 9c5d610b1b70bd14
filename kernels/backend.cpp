#include "kernels/backend.hpp"

#include <atomic>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/device.hpp"
#ifdef HEATSOLVE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_backend.hpp"
#endif

namespace heatsolve {

std::uint64_t next_backend_instance() {
  static std::atomic<std::uint64_t> next{1};
  return next++;
}

bool cuda_device_available() {
  return device::count() > 0;
}

std::string cuda_version_info() {
#ifdef HEATSOLVE_HAVE_CUDA
  const auto text = [](int v) {  // 12080 -> "12.8"
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  };
  int runtime = 0, driver = 0;
  std::string out = "runtime ";
  out += cudaRuntimeGetVersion(&runtime) == cudaSuccess ? text(runtime) : "unknown";
  // 0 (or an error) when no driver is installed: this machine has no usable GPU.
  if (cudaDriverGetVersion(&driver) != cudaSuccess) (void)cudaGetLastError(), driver = 0;
  out += driver > 0 ? ", driver " + text(driver) : ", driver none";
  return out;
#else
  return "";
#endif
}

template <typename T>
std::unique_ptr<Backend<T>> make_backend(BackendKind kind, const BackendOptions& opts) {
  if (kind == BackendKind::Auto)
    kind = cuda_device_available() ? BackendKind::Cuda : BackendKind::Cpu;
  if (kind == BackendKind::Cpu) return std::make_unique<CpuBackend<T>>();
#ifdef HEATSOLVE_HAVE_CUDA
  if (device::count() == 0)
    throw BackendError("backend 'cuda' requested but no CUDA device is available");
  return make_cuda_backend<T>(opts);
#else
  (void)opts;
  throw BackendError("backend 'cuda' requested but heatsolve was built without CUDA");
#endif
}

template std::unique_ptr<Backend<float>> make_backend<float>(BackendKind, const BackendOptions&);
template std::unique_ptr<Backend<double>> make_backend<double>(BackendKind, const BackendOptions&);

}  // namespace heatsolve
