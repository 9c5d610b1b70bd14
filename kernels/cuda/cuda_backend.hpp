// The CUDA backend's factory (plain C++: kernels/backend.cpp calls it). Device queries, pinned
// buffers and IPC for code outside kernels/ are in kernels/device.hpp.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/backend.hpp"

namespace heatsolve {

template <typename T>
std::unique_ptr<Backend<T>> make_cuda_backend(const BackendOptions& opts);

}  // namespace heatsolve
