// BlockGather between the GPUs of one node (CUDA IPC), for blocks that are slabs of the
// stream axis (z in 3D, y in 2D: every block spans the other axes), so that a block is one
// contiguous range of the padded grid's planes.
//
// Each rank keeps two copies of the whole grid (by gather parity) in exported blocks
// (kernels/ipc_pool.hpp; where the halo exchangers' buffers are, so that a neighbour's mapping
// of the block serves both) and maps every other rank's. A gather copies the block into this rank's
// copy (a kernel), then its range of planes into every other rank's copy of the same parity (device
// to device), and records `written`; after one empty message to and from every rank it orders its
// next work after the others' `written`. release() records `consumed`, which a writer waits for
// before it writes into that copy again, two gathers later. Each wait finds the record it needs as
// the event's latest, for the reason MpiDeepHaloExchanger's device ordering gives: a rank records
// `written` before its message of gather n and cannot record it again (gather n+2) before the
// others' messages of gather n+1; it records `consumed` of gather n-2 before its message of
// gather n-1, and cannot record gather n's before the others' messages of gather n. The hosts
// wait for nothing else.
#pragma once

#ifdef HEATSOLVE_HAVE_MPI

#include <mpi.h>

#include <array>
#include <memory>
#include <vector>

#include "io/field_writer.hpp"  // Block
#include "kernels/device.hpp"
#include "kernels/ipc_pool.hpp"
#include "solvers/parallel/block_gather.hpp"
#include "solvers/parallel/halo_exchange.hpp"  // CudaIpcMapping

namespace heatsolve {

// Whether every rank of `comm` runs on this node (collective).
bool all_on_one_node(MPI_Comm comm);
// Whether `block` spans every axis of `global` but the last (the stream axis): blocks that
// split it along the stream axis alone, the layout IpcAllgather serves.
bool slab_block(const GridDesc& global, const Block& block);

template <typename T>
class IpcAllgather final : public BlockGather<T> {
 public:
  // Collective over comm: null on every rank unless every block is a slab, all ranks share the
  // node, and every pair could map the other's copies, reach them (a probe written through
  // each mapping) and share events.
  static std::unique_ptr<IpcAllgather> create(MPI_Comm comm, Backend<T>& backend,
                                              const GridDesc& global, const Block& block);
  const T* gather(Backend<T>& backend, const T* local) override;
  void release(Backend<T>& backend) override;

 private:
  IpcAllgather() = default;
  struct Peer {
    int rank = 0;
    std::array<CudaIpcMapping, 2> copy;
    std::array<device::IpcEvent, 2> written, consumed;
  };

  MPI_Comm comm_ = MPI_COMM_NULL;
  GridDesc global_, local_;
  Block block_;
  std::size_t plane_begin_ = 0, plane_values_ = 0;  // the block's planes in a padded copy
  T* copy_data(int b) const { return static_cast<T*>(copy_[b].data()); }
  std::array<device::ExportedRange, 2> copy_;
  std::array<device::IpcEvent, 2> written_, consumed_;
  std::vector<Peer> peers_;
  int parity_ = 0;
};

}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_MPI
