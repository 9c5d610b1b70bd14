// Halo exchange between the ranks of a CartesianDecomposition: for every face marked
// Exchange, the one-cell interior layer is packed into a contiguous buffer (backend
// pack_face), sent to the neighbour with MPI_Isend while the neighbour's layer arrives by
// MPI_Irecv, and unpacked into the ghost layer (backend unpack_face). Faces are independent
// (7-point stencils need no edges or corners), so all of them are in flight at once.
//
// Transport, chosen at the first exchange from the backend and HaloMode:
//   host        the backend's memory is host memory: MPI reads/writes the face buffers
//   staged      device memory, copied through (pinned) host buffers around MPI
//   cuda-aware  device memory handed to MPI directly (needs MPIX_Query_cuda_support())
//   ipc         ranks of one node: each rank maps its neighbour's receive buffers (CUDA
//               IPC) and copies the packed face into them device to device; MPI carries
//               only an empty message that says "your halo is there".
// Receive buffers (device and host) alternate by exchange parity: a neighbour one exchange
// ahead writes the other buffer, and two exchanges ahead it cannot be, because its
// exchange n+2 starts after it received this rank's exchange n+1, which this rank sends
// only once its queued work up to the unpack of exchange n is done (send() waits for the
// backend's mark, queued after that unpack).
// HaloMode::Auto picks cuda-aware when the MPI library reports CUDA support, else ipc for
// every face whose neighbour is on this node and whose buffers map, else staged (decided per
// face by both neighbours at the first exchange); HaloMode::Ipc is the same without
// cuda-aware; HaloMode::CudaAware without MPI support is an error; HaloMode::Staged always
// stages.
#pragma once

#ifdef HEATSOLVE_HAVE_MPI

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/config.hpp"
#include "kernels/device.hpp"
#include "kernels/ipc_pool.hpp"
#include "solvers/parallel/decomposition.hpp"
#include "solvers/parallel/deep_halo.hpp"
#include "solvers/parallel/domain.hpp"

namespace heatsolve {

// True when the MPI library can take device pointers (CUDA-aware), at build and run time.
bool mpi_cuda_aware();

// Throws std::runtime_error naming `what` and MPI's message unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char* what);

// Per rank of comm, 1 where it shares this rank's node (MPI_COMM_TYPE_SHARED), else 0. The
// first call on a communicator is collective over it and caches the answer on it (an MPI
// attribute, freed with the communicator), so that every exchanger's IPC handshake does not
// split the communicator again.
const std::vector<char>& ranks_on_my_node(MPI_Comm comm);

// Owns nonblocking requests; on destruction (an exception between post and wait) pending
// receives are cancelled and all requests freed, never waited on, so a failing rank cannot
// hang in its own unwinding.
class MpiRequests {
 public:
  MpiRequests() { requests_.reserve(12); }
  ~MpiRequests() { release(); }
  MpiRequests(const MpiRequests&) = delete;
  MpiRequests& operator=(const MpiRequests&) = delete;
  MPI_Request* add();
  void wait_all();  // throws std::runtime_error on an MPI error
  bool empty() const { return requests_.empty(); }

 private:
  void release() noexcept;
  std::vector<MPI_Request> requests_;
};

// Host buffer for staging: pinned (device::pinned_alloc) when built with CUDA and a device is
// there, else ordinary memory.
template <typename T>
class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(std::size_t n);
  ~HostBuffer() { reset(); }
  HostBuffer(HostBuffer&& o) noexcept;
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  T* data() { return data_; }
  std::size_t size() const { return n_; }
  bool pinned() const { return pinned_; }

 private:
  void reset() noexcept;
  T* data_ = nullptr;
  std::size_t n_ = 0;
  bool pinned_ = false;
};

// How an exchanger's messages travel (per face, CUDA IPC may replace it: IpcLinks).
enum class HaloTransport { None, Host, Staged, CudaAware };

// A neighbour's device buffer mapped into this process (CUDA IPC): `offset` bytes into the
// mapped allocation `base` (device::ipc_open), unmapped on destruction.
class CudaIpcMapping {
 public:
  CudaIpcMapping() = default;
  explicit CudaIpcMapping(void* base, std::size_t offset = 0) : p_(base), offset_(offset) {}
  ~CudaIpcMapping();
  CudaIpcMapping(CudaIpcMapping&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), offset_(o.offset_) {}
  CudaIpcMapping& operator=(CudaIpcMapping&& o) noexcept;
  void* get() const { return p_ ? static_cast<unsigned char*>(p_) + offset_ : nullptr; }

 private:
  void* p_ = nullptr;
  std::size_t offset_ = 0;
};

// The faces of an exchanger that go through CUDA IPC, decided per direction by both
// neighbours: send[f] = this rank copies into the neighbour's receive buffers (remote[f], by
// parity); recv[f] = the neighbour copies into this rank's.
struct IpcLinks {
  std::array<bool, 6> send{}, recv{};
  std::array<std::array<CudaIpcMapping, 2>, 6> remote;
  bool both(int f) const { return send[f] && recv[f]; }
};

// One face's buffers, the same for both exchangers: the packed send buffer and two receive
// buffers by exchange parity in backend memory, and their pinned host twins when staged.
template <typename T>
struct FaceBuffers {
  T* send = nullptr;
  std::array<T*, 2> recv{};
  // The receive buffers as ranges of exported blocks (kernels/ipc_pool.hpp), where IPC is
  // offered and such blocks can be had; empty otherwise.
  std::array<device::ExportedRange, 2> recv_ranges;
  HostBuffer<T> host_send;
  std::array<HostBuffer<T>, 2> host_recv;
  // Offered for IPC (`exported`): all three buffers in exported blocks, which the exchangers
  // of every level share (one mapping per block in the neighbour); otherwise, or where no
  // block can be had, backend arrays.
  void allocate(Backend<T>& backend, std::size_t send_cells, std::size_t recv_cells, bool exported);
  // The pinned host twins of the directions that go through host memory, made once IPC has
  // been agreed: page-locking costs about 0.5 ms a MiB, which a face served by IPC never uses.
  void stage(std::size_t send_cells, std::size_t recv_cells, bool send_by_host, bool recv_by_host);
  std::size_t pinned_bytes() const;

 private:
  device::ExportedRange send_range_;
  std::vector<std::unique_ptr<Array<T>>> arrays_;
};

template <typename T>
class MpiHaloExchanger final : public HaloExchanger<T> {
 public:
  // The decomposition must outlive the exchanger (its communicator is used). Its buffers are
  // set up (collectively) for the backend it is given; a later run's backend, even one made
  // at the old one's address, sets them up anew on every rank (Backend::instance()).
  MpiHaloExchanger(const CartesianDecomposition& decomposition, HaloMode mode);
  // The same ranks on another grid of blocks (a coarser multigrid level of the
  // decomposition): `domain` the level's (Exchange where the decomposition's faces are),
  // `peers` the decomposition's neighbours (cartesian_neighbours()). Messages carry tags
  // tag_base + the sender's face (the decomposition's exchanger: 0), so that exchangers of
  // several levels never match each other's messages; keep tag_base + 5 below 1000 (the IPC
  // handshake's tags).
  MpiHaloExchanger(MPI_Comm comm, const std::array<int, 6>& peers, const Domain& domain,
                   HaloMode mode, int tag_base);

  // begin(), send(), finish().
  void exchange(Backend<T>& backend, T* u) override;
  // Posts the receives and queues, in the backend's order, the packing of every Exchange
  // face of u and its copy to the neighbour (IPC) or to pinned host memory (staged).
  void begin(Backend<T>& backend, T* u) override;
  // Waits for what begin() queued (not for work queued after it) and sends.
  void send(Backend<T>& backend) override;
  // Sends if not yet done, waits for the messages and queues their unpacking into the ghost
  // layers of u.
  void finish(Backend<T>& backend, T* u) override;

  // "host", "staged", "cuda-aware", "ipc", "ipc+staged" (some faces each), or "none" before
  // the first exchange / without peers.
  std::string transport() const override;
  bool device_to_device() const override;
  ExchangeSetupCost setup_cost() const override { return setup_cost_; }
  // Number of faces exchanged with peers (0..6).
  int active_faces() const;
  std::unique_ptr<DeepHaloExchanger<T>> make_deep(
      int depth, ExchangeOrdering ordering = ExchangeOrdering::Host) const override;

 private:
  struct Face : FaceBuffers<T> {
    int peer = MPI_PROC_NULL;
    std::size_t cells = 0;
  };
  void setup(Backend<T>& backend);

  MPI_Comm comm_;
  Domain domain_;
  GridDesc g_;
  HaloMode mode_;
  std::array<Face, 6> faces_;
  std::uint64_t bound_ = 0;  // Backend::instance() the buffers were set up for
  HaloTransport transport_ = HaloTransport::None;
  IpcLinks ipc_;
  ExchangeSetupCost setup_cost_;
  T* in_flight_ = nullptr;  // u between begin() and finish()
  bool sent_ = false;       // send() done for the exchange in flight
  int parity_ = 0;          // exchange count mod 2: which receive buffers are in use
  int tag_base_ = 0;
  MpiRequests requests_;
};

// Fills deep margins (DeepHaloGeometry) over MPI, one axis at a time: for each axis the
// receives are posted, the send ranges packed (Backend::copy_box) and sent, and the receives
// unpacked before the next axis starts (its send ranges include the margins just filled).
// Transports as MpiHaloExchanger's (the same HaloMode rules): device buffers go through CUDA
// IPC to neighbours on the node, else through MPI directly (CUDA-aware) or staged through
// pinned host memory. Receive buffers alternate by exchange parity, safe for the same reason
// as there: a rank's exchange n+2 follows its receipt of the neighbour's exchange n+1, which
// the neighbour sends only after its unpack of exchange n is done: it sends once its lane's
// queued work is done, and exchange n's unpack is queued before on that lane, or on the main
// lane before the fork that the side lane's work waits for, or on the side lane before the
// join that the main lane's work waits for (Simulation::deep_pass).
// ExchangeOrdering::Device, where every face goes through CUDA IPC both ways: per face and
// parity, each rank records `sent` after its copy into the neighbour's buffer and `unpacked`
// after its unpacking; a rank unpacks after the neighbour's `sent` of the same parity and
// copies after the neighbour's `unpacked` of the same parity (exchange n-2's), and the host
// waits for neither. Each wait finds the record it needs as the event's latest: the
// neighbour recorded `sent` before its message of exchange n, and cannot record it again
// (exchange n+2) before this rank's message of exchange n+1; it recorded `unpacked` of
// exchange n-2 before its message of exchange n-1, and cannot record exchange n's before
// this rank's message of exchange n.
template <typename T>
class MpiDeepHaloExchanger final : public DeepHaloExchanger<T> {
 public:
  MpiDeepHaloExchanger(MPI_Comm comm, const std::array<int, 6>& peers,
                       const DeepHaloGeometry& geometry, HaloMode mode,
                       ExchangeOrdering ordering = ExchangeOrdering::Host);
  const DeepHaloGeometry& geometry() const override { return geometry_; }
  void exchange(Backend<T>& backend, T* extended, Lane lane = Lane::Main) override;
  // As MpiHaloExchanger::transport().
  std::string transport() const override;
  // Whether every face's exchange is ordered on the devices alone, the host waiting for
  // nothing (known after the first exchange).
  bool device_ordered() const { return device_ordered_; }
  ExchangeSetupCost setup_cost() const override { return setup_cost_; }

 private:
  // The interprocess events of ExchangeOrdering::Device, by parity: this rank's, and the
  // neighbour's across the face (opened from its handles).
  struct FaceEvents {
    std::array<device::IpcEvent, 2> sent, unpacked, peer_sent, peer_unpacked;
  };
  struct Face : FaceBuffers<T> {
    int peer = MPI_PROC_NULL;
    CellRange send_range, recv_range;
    std::size_t send_cells = 0, recv_cells = 0;
    bool ordered = false;  // device-ordered: both sides share their events
    FaceEvents events;
  };
  void setup(Backend<T>& backend);
  void share_events();

  MPI_Comm comm_;
  DeepHaloGeometry geometry_;
  HaloMode mode_;
  ExchangeOrdering ordering_;
  bool device_ordered_ = false;  // every face with a peer ordered
  std::array<Face, 6> faces_;
  std::uint64_t bound_ = 0;  // Backend::instance() the buffers were set up for
  HaloTransport transport_ = HaloTransport::None;
  IpcLinks ipc_;
  ExchangeSetupCost setup_cost_;
  int parity_ = 0;
};

}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_MPI
