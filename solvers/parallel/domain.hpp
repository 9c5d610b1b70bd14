// What one rank computes: its block of the global grid, how each of its faces is closed,
// and how partial results combine across ranks. A serial run is one block with no peers.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "io/field_writer.hpp"
#include "kernels/backend.hpp"

namespace heatsolve {

template <typename T>
class DeepHaloExchanger;  // solvers/parallel/deep_halo.hpp

// How a deep halo exchange between GPUs of one node (CUDA IPC) is ordered with the work
// around it. Host: the host waits for the packed margins before it tells the neighbour,
// which may then unpack at once: any use of the backend's lanes (Simulation::deep_pass
// alternates them). Device: the ranks' devices wait for each other through interprocess
// events, and the host waits for nothing: for callers that queue every exchange of the
// exchanger, and everything that reads or writes its fields, on the main lane (multigrid
// levels). Other transports, and faces whose events cannot be shared, are Host-ordered.
enum class ExchangeOrdering { Host, Device };

struct Domain {
  GridDesc global;        // the whole grid
  GridDesc local;         // this rank's block (same spacing)
  Block block;            // the block's offset/count in the global grid (cells)
  BoundaryFaces faces{};  // physical conditions, or Exchange for faces shared with a peer
  int rank = 0, size = 1;
};

// Combines per-rank partial reductions. The serial one is the identity.
class Reducer {
 public:
  virtual ~Reducer() = default;
  virtual double sum(double local) const { return local; }
  virtual double max(double local) const { return local; }
  // sum() of every value at once (one message however many): the same bits as value by value.
  virtual void sum_each(std::vector<double>& values) const { (void)values; }
  double combine(double local, ReduceOp op) const {
    return op == ReduceOp::MaxAbs ? max(local) : sum(local);
  }
};

// What an exchanger's set-up (at its first exchange) cost: host seconds allocating its
// buffers, mapping the neighbours' receive buffers (CUDA IPC handshake) and sharing
// interprocess events; and the bytes of page-locked host memory it holds for staged faces.
struct ExchangeSetupCost {
  double buffers = 0, ipc_mappings = 0, ipc_events = 0;
  std::size_t pinned_bytes = 0;
  ExchangeSetupCost& operator+=(const ExchangeSetupCost& o) {
    buffers += o.buffers;
    ipc_mappings += o.ipc_mappings;
    ipc_events += o.ipc_events;
    pinned_bytes += o.pinned_bytes;
    return *this;
  }
};

// Fills the ghost cells of faces marked Exchange from the neighbouring ranks.
template <typename T>
class HaloExchanger {
 public:
  virtual ~HaloExchanger() = default;
  virtual void exchange(Backend<T>& backend, T* u) = 0;
  // Split form, to overlap the messages with computation: begin() posts the receives and
  // queues the packing of u's boundary layers (in the backend's order, without waiting);
  // send() waits for the packing alone and sends; finish() waits and unpacks into u's
  // ghosts. Between begin() and finish() u's boundary layers must not change and its
  // Exchange ghosts must not be read; work queued after begin() (e.g. the core of a sweep
  // writing u's other cells) proceeds while the host waits in send(). The defaults do the
  // whole exchange in begin().
  virtual void begin(Backend<T>& backend, T* u) { exchange(backend, u); }
  virtual void send(Backend<T>& backend) { (void)backend; }
  virtual void finish(Backend<T>& backend, T* u) { (void)backend, (void)u; }
  // How halos travel ("staged", "ipc", ...), for summary.json; "" when not applicable.
  virtual std::string transport() const { return ""; }
  virtual ExchangeSetupCost setup_cost() const { return {}; }
  // Whether every face's halos go device to device (CUDA IPC, CUDA-aware MPI), never through
  // host memory; known after the first exchange.
  virtual bool device_to_device() const { return false; }
  // An exchanger of margins `depth` cells deep (solvers/parallel/deep_halo.hpp) between the same
  // ranks, for temporal blocking; null when this exchanger cannot make one.
  virtual std::unique_ptr<DeepHaloExchanger<T>> make_deep(
      int depth, ExchangeOrdering ordering = ExchangeOrdering::Host) const {
    (void)depth, (void)ordering;
    return nullptr;
  }
};

// The single-rank domain of a whole grid.
Domain serial_domain(const GridDesc& global, const BoundaryFaces& faces);

}  // namespace heatsolve
