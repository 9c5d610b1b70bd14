// Execution choices a deck names and the backends understand: which backend, which
// stencil variant. Shared by io/ (validation) and kernels/ (dispatch) without either
// including the other.
#pragma once

#include <string>
#include <vector>

#include "core/stencil_variants.hpp"

namespace heatsolve {

enum class BackendKind { Auto, Cpu, Cuda };

// Every valid `execution.kernel` name; the deck validator accepts exactly these: "auto", the
// variants of kStencilVariants in ladder order, "temporal".
inline const std::vector<std::string> kKernelNames = [] {
  std::vector<std::string> names{kKernelAuto};
  for (const StencilVariantRow& r : kStencilVariants) names.emplace_back(r.name);
  names.emplace_back(kKernelTemporal);
  return names;
}();

}  // namespace heatsolve
