// The blocks of a grid assembled into the whole grid on every rank's device, with no host
// copy (solvers/parallel/ipc_allgather.hpp): what a decomposed multigrid's redundant coarse
// solve reads as its right side each cycle.
#pragma once

#include "kernels/backend.hpp"

namespace heatsolve {

template <typename T>
class BlockGather {
 public:
  virtual ~BlockGather() = default;
  // Queues the interior of `local` (this rank's block, a padded array of its local grid) into
  // every rank's copy of the whole grid and returns this rank's copy (padded, ghosts zero),
  // complete for the work queued after the call. Collective.
  virtual const T* gather(Backend<T>& backend, const T* local) = 0;
  // Called after the last work queued that reads the copy gather() returned, before the next
  // gather().
  virtual void release(Backend<T>& backend) = 0;
};

}  // namespace heatsolve
