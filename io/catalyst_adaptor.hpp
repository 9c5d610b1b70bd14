// In-situ output through ParaView Catalyst (the v1 API of ParaView 5.11): at the steps the
// deck's output.catalyst asks for, the field is handed to Python pipeline scripts as
// vtkImageData, without being written. Only catalyst_adaptor.cpp sees ParaView; without
// HEATSOLVE_HAVE_CATALYST constructing an adaptor throws (the deck validator refuses such
// decks before that).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/config.hpp"
#include "io/field_writer.hpp"

#ifdef HEATSOLVE_HAVE_MPI
#include <mpi.h>
#endif

namespace heatsolve {

// A pipeline script failed during the run (an exception in its DoCoProcessing): the run
// stops like after any runtime failure, keeping what it wrote. Thrown on every rank alike
// (the ranks agree on the outcome of every Catalyst call).
struct CatalystError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The deck's scripts cannot run on this machine (exit 2, before anything is written): a
// script renders, $DISPLAY is not set, ParaView renders through X only and no Xvfb is there.
struct CatalystUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Rendering without a display. Debian's ParaView renders through X only and aborts the whole
// process (SIGABRT, nothing to catch) when a script renders without an X server. So when
// $DISPLAY is unset and a script of cfg.catalyst renders (it mentions SaveScreenshot,
// CreateView, Render(...), or a PNG/JPG extractor) and this ParaView has no off-screen render
// window (EGL, OSMesa), CatalystAdaptor starts a private virtual X server (Xvfb, or
// $HEATSOLVE_XVFB) for the rest of the process's life. This check, run before the output
// directory is touched, throws CatalystUnavailable when none of that is possible.
void check_catalyst_display(const Config& cfg);

// When the scripts run: script i at every multiple of its `every` (step 0, the initial state,
// included) and at the last step or iteration. Plain arithmetic, independent of ParaView.
class CatalystSchedule {
 public:
  CatalystSchedule() = default;
  explicit CatalystSchedule(std::vector<std::int64_t> every) : every_(std::move(every)) {}
  bool due(std::size_t script, std::int64_t step, bool last) const {
    return last || step % every_[script] == 0;
  }
  bool any_due(std::int64_t step, bool last) const;
  // How many steps after `step` the next regular (non-last) call falls: fused step blocks
  // must end there. Large when there are no scripts.
  std::int64_t steps_to_next(std::int64_t step) const;
  std::size_t size() const { return every_.size(); }

 private:
  std::vector<std::int64_t> every_;
};

class CatalystAdaptor {
 public:
  // Initializes Catalyst and loads every script of cfg.catalyst; throws std::runtime_error
  // naming the script with Python's message when one cannot be loaded (syntax error,
  // exception at import, no RequestDataDescription or DoCoProcessing function). `grid` is the
  // whole grid; each rank later hands its own block of it.
  CatalystAdaptor(const Config& cfg, const OutputGrid& grid);
#ifdef HEATSOLVE_HAVE_MPI
  // Under MPI: Catalyst works on `comm` (the decomposition's ranks, every one of which calls
  // co_process at the same steps).
  CatalystAdaptor(const Config& cfg, const OutputGrid& grid, MPI_Comm comm);
#endif
  ~CatalystAdaptor();  // finalizes Catalyst
  CatalystAdaptor(const CatalystAdaptor&) = delete;
  CatalystAdaptor& operator=(const CatalystAdaptor&) = delete;

  const CatalystSchedule& schedule() const {
    return schedule_;
  }
  // Runs the scripts due at `step` on this rank's block (`data`: block.size() values, x
  // fastest), as the cell array field_name(cfg.problem) ("temperature" | "solution"); the
  // scripts' time is `time`, or for Poisson the iteration `step` (`time` ignored). The user
  // data carry output_directory, field and problem. Throws CatalystError (on every rank) when
  // a script fails.
  void co_process(std::int64_t step, double time, bool last, const float* data, const Block& block);
  void co_process(std::int64_t step, double time, bool last, const double* data,
                  const Block& block);
  // Calls made and seconds spent in them (this rank), for summary.json.
  nlohmann::json report() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  CatalystSchedule schedule_;
};

// True when this build has Catalyst (heatsolve info, the deck validator).
bool catalyst_available();

}  // namespace heatsolve
