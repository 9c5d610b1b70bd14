// Reading a possibly damaged file in a child process. HDF5 1.10 does not always return an
// error on damaged metadata: a series file left by a run killed mid-write can make it free an
// invalid pointer and abort inside H5Lget_name_by_idx. A restart examines such candidates
// first in a forked child, so that a crash costs the candidate, not the run.
#pragma once

#include <functional>

namespace heatsolve {

enum class ChildEnd { Finished, Threw, Crashed };

struct ChildResult {
  ChildEnd end = ChildEnd::Finished;
  int signal = 0;  // Crashed: the signal that ended the child
};

// Runs `probe` in a forked child (which does nothing else: no MPI, no device calls, no
// output buffered by the parent) and reports how it ended. Where fork() fails, runs it here.
ChildResult run_in_child(const std::function<void()>& probe);

}  // namespace heatsolve
