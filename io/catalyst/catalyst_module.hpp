// The interface between heatsolve and the module that links ParaView
// (io/catalyst/catalyst_module.cpp -> libheatsolve_catalyst.so). heatsolve loads the module
// only when a deck asks for output.catalyst: linked into heatsolve itself, ParaView's ~400
// libraries made every command (info, validate, each run) take 0.7 s longer to start.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "io/catalyst_adaptor.hpp"

namespace heatsolve {

// The scripts' pipelines of one run; see CatalystAdaptor for the contract.
class CatalystPipelines {
 public:
  virtual ~CatalystPipelines() = default;
  virtual void co_process(const CatalystSchedule& schedule, std::int64_t step, double time,
                          bool last, const float* data, const Block& block) = 0;
  virtual void co_process(const CatalystSchedule& schedule, std::int64_t step, double time,
                          bool last, const double* data, const Block& block) = 0;
  virtual nlohmann::json report() const = 0;
};

// The module's entry point (looked up by name): starts Catalyst and loads cfg's scripts.
// `comm` points at the run's MPI_Comm, or is null for a serial run.
using CatalystCreateFunction = CatalystPipelines* (*)(const Config* cfg, const OutputGrid* grid,
                                                      const void* comm);
constexpr const char* kCatalystCreateSymbol = "heatsolve_catalyst_create";
// Whether ParaView's render window renders without an X server (EGL, OSMesa): non-zero.
using CatalystOffscreenFunction = int (*)();
constexpr const char* kCatalystOffscreenSymbol = "heatsolve_catalyst_renders_offscreen";
constexpr const char* kCatalystModuleName = "libheatsolve_catalyst.so";

}  // namespace heatsolve
