// Host-side entry points of the CUDA backend (compiled by the host compiler too).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/backend.hpp"

namespace heatsolve {

// Number of usable CUDA devices (0 when the driver or device is missing; never throws).
int cuda_device_count();

template <typename T>
std::unique_ptr<Backend<T>> make_cuda_backend(const BackendOptions& opts);

// Whether the current CUDA device can run a variant (2.5d-tma needs compute capability 9.0).
bool stencil_variant_supported(StencilVariant v);

}  // namespace heatsolve
