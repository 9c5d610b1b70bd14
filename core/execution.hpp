// Execution choices a deck names and the backends understand: which backend, which
// stencil variant. Shared by io/ (validation) and kernels/ (dispatch) without either
// including the other.
#pragma once

#include <string>
#include <vector>

namespace heatsolve {

enum class BackendKind { Auto, Cpu, Cuda };

// Every valid `execution.kernel` name; the deck validator accepts exactly these. Backends that
// add a stencil variant add its name here.
inline const std::vector<std::string> kKernelNames{
    "auto",          "naive",      "shared",   "nondivergent", "2.5d", "2.5d-single-slice",
    "2.5d-register", "2.5d-async", "2.5d-tma", "temporal"};

}  // namespace heatsolve
