#include "solvers/parallel/halo_exchange.hpp"

#ifdef HEATSOLVE_HAVE_MPI

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include "kernels/device.hpp"

namespace heatsolve {

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw std::runtime_error(
        fmt::format("halo exchange: {} failed: {}", what, std::string(msg, len)));
  }
}

namespace {

int free_node_ranks(MPI_Comm, int, void* attribute, void*) {
  delete static_cast<std::vector<char>*>(attribute);
  return MPI_SUCCESS;
}

int node_ranks_keyval() {
  static const int keyval = [] {
    int k = MPI_KEYVAL_INVALID;
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_node_ranks, &k, nullptr),
              "MPI_Comm_create_keyval");
    return k;
  }();
  return keyval;
}

}  // namespace

const std::vector<char>& ranks_on_my_node(MPI_Comm comm) {
  void* cached = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(comm, node_ranks_keyval(), &cached, &found), "MPI_Comm_get_attr");
  if (found) return *static_cast<const std::vector<char>*>(cached);
  int size = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  MPI_Group all_group, node_group;
  MPI_Comm_group(comm, &all_group);
  MPI_Comm_group(node, &node_group);
  std::vector<int> ranks(std::size_t(size), 0), on_node(std::size_t(size), MPI_UNDEFINED);
  for (int r = 0; r < size; ++r) ranks[std::size_t(r)] = r;
  MPI_Group_translate_ranks(all_group, size, ranks.data(), node_group, on_node.data());
  MPI_Group_free(&node_group);
  MPI_Group_free(&all_group);
  MPI_Comm_free(&node);
  auto answer = std::make_unique<std::vector<char>>(std::size_t(size), 0);
  for (int r = 0; r < size; ++r)
    (*answer)[std::size_t(r)] = on_node[std::size_t(r)] != MPI_UNDEFINED;
  check_mpi(MPI_Comm_set_attr(comm, node_ranks_keyval(), answer.get()), "MPI_Comm_set_attr");
  return *answer.release();
}

namespace {

template <typename T>
MPI_Datatype mpi_type() {
  return std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
}

bool mpi_alive() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

}  // namespace

bool mpi_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  // Open MPI (and MPICH-derived libraries that copy the extension): built-in support is
  // MPIX_CUDA_AWARE_SUPPORT, usable only when the run-time query agrees.
  return MPIX_CUDA_AWARE_SUPPORT && MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

// ---- MpiRequests ------------------------------------------------------------------------

MPI_Request* MpiRequests::add() {
  requests_.push_back(MPI_REQUEST_NULL);
  return &requests_.back();
}

void MpiRequests::wait_all() {
  if (requests_.empty()) return;
  const int rc = MPI_Waitall(int(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  if (rc != MPI_SUCCESS) {
    release();
    check_mpi(rc, "MPI_Waitall");
  }
  requests_.clear();
}

void MpiRequests::release() noexcept {
  if (requests_.empty()) return;
  if (mpi_alive())
    for (MPI_Request& r : requests_)
      if (r != MPI_REQUEST_NULL) {
        MPI_Cancel(&r);
        MPI_Request_free(&r);
      }
  requests_.clear();
}

// ---- HostBuffer -------------------------------------------------------------------------

template <typename T>
HostBuffer<T>::HostBuffer(std::size_t n) : n_(n) {
  if (n == 0) return;
  data_ = static_cast<T*>(device::pinned_alloc(n * sizeof(T)));  // nullptr without a device
  pinned_ = data_ != nullptr;
  if (!data_) data_ = new T[n];
}

template <typename T>
HostBuffer<T>::HostBuffer(HostBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      n_(std::exchange(o.n_, 0)),
      pinned_(std::exchange(o.pinned_, false)) {}

template <typename T>
HostBuffer<T>& HostBuffer<T>::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = std::exchange(o.data_, nullptr);
    n_ = std::exchange(o.n_, 0);
    pinned_ = std::exchange(o.pinned_, false);
  }
  return *this;
}

template <typename T>
void HostBuffer<T>::reset() noexcept {
  if (pinned_)
    device::pinned_free(data_);
  else
    delete[] data_;
  data_ = nullptr;
  n_ = 0;
  pinned_ = false;
}

// ---- MpiHaloExchanger -------------------------------------------------------------------

template <typename T>
MpiHaloExchanger<T>::MpiHaloExchanger(const CartesianDecomposition& decomposition, HaloMode mode)
    : comm_(decomposition.comm()),
      domain_(decomposition.domain()),
      g_(decomposition.domain().local),
      mode_(mode) {
  for (int f = 0; f < 2 * g_.dims; ++f) {
    if (decomposition.domain().faces[f].type != BoundaryType::Exchange) continue;
    faces_[f].peer = decomposition.neighbour(f);
    faces_[f].cells = face_cells(g_, f);
  }
}

template <typename T>
MpiHaloExchanger<T>::MpiHaloExchanger(MPI_Comm comm, const std::array<int, 6>& peers,
                                      const Domain& domain, HaloMode mode, int tag_base)
    : comm_(comm), domain_(domain), g_(domain.local), mode_(mode), tag_base_(tag_base) {
  for (int f = 0; f < 2 * g_.dims; ++f) {
    if (domain.faces[f].type != BoundaryType::Exchange) continue;
    faces_[f].peer = peers[f];
    faces_[f].cells = face_cells(g_, f);
  }
}

template <typename T>
int MpiHaloExchanger<T>::active_faces() const {
  int n = 0;
  for (const Face& f : faces_) n += f.peer != MPI_PROC_NULL ? 1 : 0;
  return n;
}

// ---- Transports shared by both exchangers -------------------------------------------------

CudaIpcMapping::~CudaIpcMapping() {
  device::ipc_close(p_);
}

CudaIpcMapping& CudaIpcMapping::operator=(CudaIpcMapping&& o) noexcept {
  if (this != &o) {
    device::ipc_close(p_);
    p_ = std::exchange(o.p_, nullptr);
    offset_ = o.offset_;
  }
  return *this;
}

namespace {

// The transport for the faces IPC does not serve; *try_ipc: whether to offer IPC.
HaloTransport choose_transport(bool device_memory, HaloMode mode, bool* try_ipc) {
  *try_ipc = false;
  if (!device_memory) return HaloTransport::Host;
  if (mode == HaloMode::Staged) return HaloTransport::Staged;
  if (mode != HaloMode::Ipc && mpi_cuda_aware()) return HaloTransport::CudaAware;
  if (mode == HaloMode::CudaAware)
    throw std::runtime_error(
        "execution.halo: cuda-aware requested but this MPI library is not CUDA-aware "
        "(MPIX_Query_cuda_support() is false); use halo: staged, ipc or auto");
  *try_ipc = true;
  return HaloTransport::Staged;  // for the faces IPC cannot serve
}

// Trades one value per face with the neighbours: in[f] is what the neighbour across face f
// sent through its face f^1 (tag + the sender's face). Collective over the neighbours.
template <typename V>
void swap_with_peers(MPI_Comm comm, const std::array<int, 6>& peers, const std::array<V, 6>& out,
                     std::array<V, 6>& in, int tag) {
  static_assert(std::is_trivially_copyable_v<V>, "sent as bytes");
  MpiRequests reqs;
  for (int f = 0; f < 6; ++f) {
    if (peers[f] == MPI_PROC_NULL) continue;
    check_mpi(
        MPI_Irecv(&in[f], int(sizeof(V)), MPI_BYTE, peers[f], tag + (f ^ 1), comm, reqs.add()),
        "MPI_Irecv (set-up)");
    check_mpi(MPI_Isend(&out[f], int(sizeof(V)), MPI_BYTE, peers[f], tag + f, comm, reqs.add()),
              "MPI_Isend (set-up)");
  }
  reqs.wait_all();
}

// Host seconds between laps (an exchanger's set-up phases). One clock reading ends a lap and
// starts the next, so that the laps add up to the whole.
class SetupClock {
 public:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Both neighbours of a face agree on IPC for each direction: each offers its two receive
// buffers for the face (recv[f]: ranges of exported blocks; none where empty), the other maps
// them when it shares the node, and tells whether it could. Collective over the neighbours;
// tags tag_base + the sender's face and tag_base + 1000 + face.
void ipc_handshake(MPI_Comm comm, const std::array<int, 6>& peers,
                   const std::array<std::array<const device::ExportedRange*, 2>, 6>& recv,
                   int tag_base, IpcLinks* links) {
  const int tag_handles = tag_base, tag_mapped = tag_base + 1000, tag_verified = tag_base + 2000;
  int me = 0;
  MPI_Comm_rank(comm, &me);
  // Which rank wrote through which of its faces into which parity.
  const auto probe = [](int rank, int face, int b) {
    return (std::uint64_t(0x1A5E) << 48) | (std::uint64_t(rank) << 8) | std::uint64_t(face * 2 + b);
  };
  const std::vector<char>& on_node = ranks_on_my_node(comm);

  struct Offer {
    int ok = 0;
    device::IpcHandle handles[2];
    std::uint64_t offsets[2];
  };
  std::array<Offer, 6> mine{}, theirs{};
  std::array<int, 6> mapped{}, peer_mapped{}, verified{}, peer_verified{};
  for (int f = 0; f < 6; ++f) {
    if (peers[f] == MPI_PROC_NULL) continue;
    mine[f].ok = 1;
    for (int b = 0; b < 2; ++b) {
      const device::ExportedRange* r = recv[f][b];
      mine[f].ok &= r && *r ? 1 : 0;
      if (!mine[f].ok) break;
      mine[f].handles[b] = r->handle();
      mine[f].offsets[b] = r->offset();
    }
  }
  swap_with_peers(comm, peers, mine, theirs, tag_handles);  // my ghost face f: their face f^1
  for (int f = 0; f < 6; ++f) {
    if (peers[f] == MPI_PROC_NULL || !theirs[f].ok) continue;
    if (!on_node[std::size_t(peers[f])]) continue;  // another node: handles mean nothing here
    CudaIpcMapping m0(device::ipc_open(theirs[f].handles[0]), theirs[f].offsets[0]);
    CudaIpcMapping m1(device::ipc_open(theirs[f].handles[1]), theirs[f].offsets[1]);
    if (!m0.get() || !m1.get()) continue;
    if (!device::ipc_probe_write(m0.get(), probe(me, f, 0)) ||
        !device::ipc_probe_write(m1.get(), probe(me, f, 1)))
      continue;
    links->remote[f][0] = std::move(m0);
    links->remote[f][1] = std::move(m1);
    mapped[f] = 1;
  }
  swap_with_peers(comm, peers, mapped, peer_mapped, tag_mapped);  // the probes were written before
  for (int f = 0; f < 6; ++f) {
    if (!peer_mapped[f]) continue;
    std::uint64_t got[2] = {0, 0};
    verified[f] = device::ipc_probe_read(recv[f][0]->data(), &got[0]) &&
                  device::ipc_probe_read(recv[f][1]->data(), &got[1]) &&
                  got[0] == probe(peers[f], f ^ 1, 0) && got[1] == probe(peers[f], f ^ 1, 1);
  }
  swap_with_peers(comm, peers, verified, peer_verified, tag_verified);
  for (int f = 0; f < 6; ++f) {
    links->send[f] = mapped[f] && peer_verified[f];
    links->recv[f] = peer_mapped[f] && verified[f];
    if (!links->send[f]) links->remote[f] = {};
  }
}

// halo: ipc asks for IPC on every face.
void require_ipc(HaloMode mode, const std::array<int, 6>& peers, const IpcLinks& links) {
  if (mode != HaloMode::Ipc) return;
  for (int f = 0; f < 6; ++f)
    if (peers[f] != MPI_PROC_NULL && !links.both(f))
      throw std::runtime_error(fmt::format(
          "execution.halo: ipc requested but the halo with rank {} cannot go through CUDA "
          "IPC (another node, device buffers that could not be mapped, or a probe written "
          "through the mapping that did not arrive); use halo: auto",
          peers[f]));
}

std::string transport_name(HaloTransport transport, const std::array<int, 6>& peers,
                           const IpcLinks& links) {
  int ipc = 0, other = 0;
  for (int f = 0; f < 6; ++f)
    if (peers[f] != MPI_PROC_NULL) ++(links.both(f) ? ipc : other);
  if (transport == HaloTransport::None) return "none";
  if (ipc > 0) return other > 0 ? "ipc+staged" : "ipc";
  switch (transport) {
    case HaloTransport::Host:
      return "host";
    case HaloTransport::Staged:
      return "staged";
    case HaloTransport::CudaAware:
      return "cuda-aware";
    case HaloTransport::None:
      break;
  }
  return "none";
}

template <typename FaceArray>
std::array<int, 6> peers_of(const FaceArray& faces) {
  std::array<int, 6> peers;
  for (int f = 0; f < 6; ++f) peers[f] = faces[f].peer;
  return peers;
}

// Makes the pinned host twins of each face direction that IPC does not serve
// (FaceBuffers::stage); returns their bytes. `cells(face)`: its send and receive cell counts.
template <typename FaceArray, typename Cells>
std::size_t stage_faces(FaceArray& faces, const IpcLinks& ipc, Cells cells) {
  std::size_t bytes = 0;
  for (int f = 0; f < 6; ++f) {
    if (faces[f].peer == MPI_PROC_NULL) continue;
    const auto [send, recv] = cells(faces[f]);
    faces[f].stage(send, recv, !ipc.send[f], !ipc.recv[f]);
    bytes += faces[f].pinned_bytes();
  }
  return bytes;
}

template <typename FaceArray>
std::array<std::array<const device::ExportedRange*, 2>, 6> offered_recv_ranges(
    const FaceArray& faces) {
  std::array<std::array<const device::ExportedRange*, 2>, 6> recv{};
  for (int f = 0; f < 6; ++f)
    if (faces[f].peer != MPI_PROC_NULL)
      for (int b = 0; b < 2; ++b) recv[f][b] = &faces[f].recv_ranges[b];
  return recv;
}

}  // namespace

template <typename T>
void FaceBuffers<T>::allocate(Backend<T>& backend, std::size_t send_cells, std::size_t recv_cells,
                              bool exported) {
  // Whatever an earlier call (another backend) held goes first.
  send_range_ = {};
  recv_ranges = {};
  arrays_.clear();
  if (exported) {
    send_range_ = device::export_alloc(send_cells * sizeof(T));
    for (auto& r : recv_ranges) r = device::export_alloc(recv_cells * sizeof(T));
    if (send_range_ && recv_ranges[0] && recv_ranges[1]) {
      send = static_cast<T*>(send_range_.data());
      for (int b = 0; b < 2; ++b) recv[b] = static_cast<T*>(recv_ranges[b].data());
      return;
    }
    send_range_ = {};
    recv_ranges = {};
  }
  arrays_.push_back(backend.allocate(send_cells));
  send = arrays_.back()->data();
  for (int b = 0; b < 2; ++b) {
    arrays_.push_back(backend.allocate(recv_cells));
    recv[b] = arrays_.back()->data();
  }
}

template <typename T>
void FaceBuffers<T>::stage(std::size_t send_cells, std::size_t recv_cells, bool send_by_host,
                           bool recv_by_host) {
  if (send_by_host) host_send = HostBuffer<T>(send_cells);
  if (recv_by_host)
    for (auto& h : host_recv) h = HostBuffer<T>(recv_cells);
}

template <typename T>
std::size_t FaceBuffers<T>::pinned_bytes() const {
  std::size_t cells = host_send.pinned() ? host_send.size() : 0;
  for (const auto& h : host_recv) cells += h.pinned() ? h.size() : 0;
  return cells * sizeof(T);
}

template <typename T>
std::string MpiHaloExchanger<T>::transport() const {
  return transport_name(transport_, peers_of(faces_), ipc_);
}

template <typename T>
bool MpiHaloExchanger<T>::device_to_device() const {
  if (transport_ == HaloTransport::CudaAware) return true;
  if (transport_ == HaloTransport::None) return false;
  for (int f = 0; f < 6; ++f)
    if (faces_[f].peer != MPI_PROC_NULL && !ipc_.both(f)) return false;
  return true;
}

template <typename T>
void MpiHaloExchanger<T>::setup(Backend<T>& backend) {
  if (bound_ == backend.instance()) return;
  if (!requests_.empty())
    throw std::logic_error("halo exchange: backend changed while an exchange is in flight");
  bool try_ipc = false;
  transport_ = choose_transport(backend.device_memory(), mode_, &try_ipc);
  SetupClock clock;
  for (Face& f : faces_) {
    if (f.peer == MPI_PROC_NULL) continue;
    f.allocate(backend, f.cells, f.cells, try_ipc);
  }
  setup_cost_.buffers += clock.lap();
  // Every rank takes the same branch (same deck, same MPI library), so the collective calls
  // in the handshake are made by all ranks.
  constexpr int kTagIpc = 1000;
  if (try_ipc) {
    ipc_handshake(comm_, peers_of(faces_), offered_recv_ranges(faces_), kTagIpc, &ipc_);
    setup_cost_.ipc_mappings += clock.lap();
  }
  require_ipc(mode_, peers_of(faces_), ipc_);
  if (transport_ == HaloTransport::Staged) {
    setup_cost_.pinned_bytes +=
        stage_faces(faces_, ipc_, [](const Face& f) { return std::pair(f.cells, f.cells); });
    setup_cost_.buffers += clock.lap();
  }
  if (active_faces() == 0) transport_ = HaloTransport::None;
  bound_ = backend.instance();
}

template <typename T>
void MpiHaloExchanger<T>::begin(Backend<T>& backend, T* u) {
  if (in_flight_) throw std::logic_error("halo exchange: begin() twice without finish()");
  setup(backend);
  if (active_faces() == 0) return;
  const bool staged = transport_ == HaloTransport::Staged;
  const MPI_Datatype type = mpi_type<T>();
  // A ghost face g receives what the neighbour sent from its opposite face (g ^ 1); the tag
  // is the sender's face, which keeps the two directions apart when both neighbours along an
  // axis are the same rank (periodic axis over 2 ranks). IPC faces exchange empty messages.
  for (int f = 0; f < 6; ++f) {
    Face& face = faces_[f];
    if (face.peer == MPI_PROC_NULL) continue;
    T* dst = ipc_.recv[f] ? nullptr : staged ? face.host_recv[parity_].data() : face.recv[parity_];
    const int count = ipc_.recv[f] ? 0 : int(face.cells);
    check_mpi(MPI_Irecv(dst, count, type, face.peer, tag_base_ + (f ^ 1), comm_, requests_.add()),
              "MPI_Irecv");
  }
  for (int f = 0; f < 6; ++f) {
    Face& face = faces_[f];
    if (face.peer == MPI_PROC_NULL) continue;
    // Packed straight into the neighbour's receive buffer where IPC maps it.
    if (ipc_.send[f]) {
      backend.pack_face(u, g_, f, static_cast<T*>(ipc_.remote[f][parity_].get()));
      continue;
    }
    backend.pack_face(u, g_, f, face.send);
    if (staged) backend.copy_values(face.host_send.data(), face.send, face.cells);
  }
  backend.mark();
  in_flight_ = u;
  sent_ = false;
}

template <typename T>
void MpiHaloExchanger<T>::send(Backend<T>& backend) {
  if (!in_flight_ || sent_) return;
  sent_ = true;
  backend.wait_mark();  // packed and copied; the work queued since goes on
  const bool staged = transport_ == HaloTransport::Staged;
  const MPI_Datatype type = mpi_type<T>();
  for (int f = 0; f < 6; ++f) {
    Face& face = faces_[f];
    if (face.peer == MPI_PROC_NULL) continue;
    const T* src = ipc_.send[f] ? nullptr : staged ? face.host_send.data() : face.send;
    const int count = ipc_.send[f] ? 0 : int(face.cells);
    check_mpi(MPI_Isend(src, count, type, face.peer, tag_base_ + f, comm_, requests_.add()),
              "MPI_Isend");
  }
}

template <typename T>
void MpiHaloExchanger<T>::finish(Backend<T>& backend, T* u) {
  if (active_faces() == 0) return;
  if (in_flight_ != u) throw std::logic_error("halo exchange: finish() without matching begin()");
  send(backend);
  requests_.wait_all();
  in_flight_ = nullptr;
  for (int f = 0; f < 6; ++f) {
    Face& face = faces_[f];
    if (face.peer == MPI_PROC_NULL) continue;
    T* recv = face.recv[parity_];
    if (!ipc_.recv[f] && transport_ == HaloTransport::Staged)
      backend.copy_values(recv, face.host_recv[parity_].data(), face.cells);
    backend.unpack_face(u, g_, f, recv);
  }
  parity_ ^= 1;
}

template <typename T>
void MpiHaloExchanger<T>::exchange(Backend<T>& backend, T* u) {
  begin(backend, u);
  finish(backend, u);  // sends first
}

template <typename T>
std::unique_ptr<DeepHaloExchanger<T>> MpiHaloExchanger<T>::make_deep(
    int depth, ExchangeOrdering ordering) const {
  return std::make_unique<MpiDeepHaloExchanger<T>>(
      comm_, peers_of(faces_), deep_halo_geometry(domain_, depth), mode_, ordering);
}

// ---- MpiDeepHaloExchanger ---------------------------------------------------------------

namespace {

std::size_t range_cells(const CellRange& r) {
  return std::size_t(r.hi[0] - r.lo[0]) * std::size_t(r.hi[1] - r.lo[1]) *
         std::size_t(r.hi[2] - r.lo[2]);
}

std::array<int, 3> range_extent(const CellRange& r) {
  return {r.hi[0] - r.lo[0], r.hi[1] - r.lo[1], r.hi[2] - r.lo[2]};
}

std::int64_t range_start(const GridDesc& g, const CellRange& r) {
  return g.index(r.lo[0], r.lo[1], g.dims == 3 ? r.lo[2] : 0);
}

}  // namespace

template <typename T>
MpiDeepHaloExchanger<T>::MpiDeepHaloExchanger(MPI_Comm comm, const std::array<int, 6>& peers,
                                              const DeepHaloGeometry& geometry, HaloMode mode,
                                              ExchangeOrdering ordering)
    : comm_(comm), geometry_(geometry), mode_(mode), ordering_(ordering) {
  for (int f = 0; f < 2 * geometry.block.dims; ++f) {
    Face& face = faces_[f];
    face.peer = peers[f];
    if (face.peer == MPI_PROC_NULL) continue;
    face.send_range = geometry.send_range(f);
    face.recv_range = geometry.recv_range(f);
    face.send_cells = range_cells(face.send_range);
    face.recv_cells = range_cells(face.recv_range);
  }
}

template <typename T>
std::string MpiDeepHaloExchanger<T>::transport() const {
  return transport_name(transport_, peers_of(faces_), ipc_);
}

template <typename T>
void MpiDeepHaloExchanger<T>::setup(Backend<T>& backend) {
  if (bound_ == backend.instance()) return;
  bool try_ipc = false;
  transport_ = choose_transport(backend.device_memory(), mode_, &try_ipc);
  bool any = false;
  SetupClock clock;
  for (Face& face : faces_) {
    if (face.peer == MPI_PROC_NULL) continue;
    any = true;
    face.allocate(backend, face.send_cells, face.recv_cells, try_ipc);
  }
  setup_cost_.buffers += clock.lap();
  constexpr int kTagIpc = 4000;  // apart from the one-layer exchanger's handshake (1000-3005)
  if (try_ipc) {
    ipc_handshake(comm_, peers_of(faces_), offered_recv_ranges(faces_), kTagIpc, &ipc_);
    setup_cost_.ipc_mappings += clock.lap();
  }
  require_ipc(mode_, peers_of(faces_), ipc_);
  if (transport_ == HaloTransport::Staged) {
    setup_cost_.pinned_bytes += stage_faces(
        faces_, ipc_, [](const Face& f) { return std::pair(f.send_cells, f.recv_cells); });
    setup_cost_.buffers += clock.lap();
  }
  if (!any) transport_ = HaloTransport::None;
  // Device ordering needs every face through IPC both ways, on both sides of each face (a
  // neighbour's other faces may differ: it then keeps to the host, and so does this rank
  // towards it, since the flag below is swapped per face).
  if (any && ordering_ == ExchangeOrdering::Device) {
    share_events();
    if (try_ipc) setup_cost_.ipc_events += clock.lap();
  }
  bound_ = backend.instance();
}

// Creates and exports this rank's events of each IPC face, opens the neighbour's, and agrees
// with each neighbour whether both could. Collective over the neighbours.
template <typename T>
void MpiDeepHaloExchanger<T>::share_events() {
  constexpr int kTagEvents = 7000, kTagAgreed = 8000;  // + the sender's face
  struct Offer {
    int ok = 0;
    device::IpcEventHandle sent[2], unpacked[2];
  };
  std::array<Offer, 6> mine{}, theirs{};
  for (int f = 0; f < 6; ++f) {
    Face& face = faces_[f];
    if (face.peer == MPI_PROC_NULL || !ipc_.both(f)) continue;
    mine[f].ok = 1;
    for (int b = 0; b < 2; ++b) {
      face.events.sent[b] = device::IpcEvent::create(&mine[f].sent[b]);
      face.events.unpacked[b] = device::IpcEvent::create(&mine[f].unpacked[b]);
      mine[f].ok &= (face.events.sent[b] && face.events.unpacked[b]) ? 1 : 0;
    }
  }
  const std::array<int, 6> peers = peers_of(faces_);
  swap_with_peers(comm_, peers, mine, theirs, kTagEvents);
  std::array<int, 6> opened{}, peer_opened{};
  for (int f = 0; f < 6; ++f) {
    Face& face = faces_[f];
    if (!mine[f].ok || !theirs[f].ok) continue;
    opened[f] = 1;
    for (int b = 0; b < 2; ++b) {
      face.events.peer_sent[b] = device::IpcEvent::open(theirs[f].sent[b]);
      face.events.peer_unpacked[b] = device::IpcEvent::open(theirs[f].unpacked[b]);
      opened[f] &= (face.events.peer_sent[b] && face.events.peer_unpacked[b]) ? 1 : 0;
    }
  }
  swap_with_peers(comm_, peers, opened, peer_opened, kTagAgreed);
  // Both sides of a face agree; the host still waits where any face is host-ordered (its
  // neighbour unpacks as soon as the message arrives).
  device_ordered_ = true;
  for (int f = 0; f < 6; ++f) {
    Face& face = faces_[f];
    if (face.peer == MPI_PROC_NULL) continue;
    face.ordered = opened[f] && peer_opened[f];
    if (!face.ordered) face.events = {};
    device_ordered_ = device_ordered_ && face.ordered;
  }
}

template <typename T>
void MpiDeepHaloExchanger<T>::exchange(Backend<T>& backend, T* extended, Lane lane) {
  setup(backend);
  const bool staged = transport_ == HaloTransport::Staged;
  const GridDesc& g = geometry_.extended;
  const MPI_Datatype type = mpi_type<T>();
  constexpr int kTagBase = 100;  // + the sender's face; apart from the one-layer exchange's
  for (int axis = 0; axis < g.dims; ++axis) {
    MpiRequests requests;
    bool any = false;
    for (int f = 2 * axis; f < 2 * axis + 2; ++f) {
      Face& face = faces_[f];
      if (face.peer == MPI_PROC_NULL) continue;
      // IPC faces exchange empty messages: "your margin is in your buffer".
      T* dst = ipc_.recv[f] ? nullptr
               : staged     ? face.host_recv[parity_].data()
                            : face.recv[parity_];
      const int count = ipc_.recv[f] ? 0 : int(face.recv_cells);
      check_mpi(MPI_Irecv(dst, count, type, face.peer, kTagBase + (f ^ 1), comm_, requests.add()),
                "MPI_Irecv (deep halo)");
      any = true;
    }
    if (!any) continue;
    for (int f = 2 * axis; f < 2 * axis + 2; ++f) {
      Face& face = faces_[f];
      if (face.peer == MPI_PROC_NULL) continue;
      // Packed straight into the neighbour's receive buffer where IPC maps it (device-ordered:
      // once exchange n-2's unpacking out of it is done).
      T* packed = face.send;
      if (ipc_.send[f]) {
        if (face.ordered) backend.wait_event(face.events.peer_unpacked[parity_], lane);
        packed = static_cast<T*>(ipc_.remote[f][parity_].get());
      }
      const std::array<int, 3> e = range_extent(face.send_range);
      backend.copy_box(packed, e[0], std::int64_t(e[0]) * e[1],
                       extended + range_start(g, face.send_range), g.stride_y(), g.stride_z(), e,
                       lane);
      if (ipc_.send[f]) {
        if (face.ordered) backend.record_event(face.events.sent[parity_], lane);
      } else if (staged) {
        backend.copy_values(face.host_send.data(), face.send, face.send_cells, lane);
      }
    }
    if (!device_ordered_) backend.synchronize(lane);
    for (int f = 2 * axis; f < 2 * axis + 2; ++f) {
      Face& face = faces_[f];
      if (face.peer == MPI_PROC_NULL) continue;
      const T* src = ipc_.send[f] ? nullptr : staged ? face.host_send.data() : face.send;
      const int count = ipc_.send[f] ? 0 : int(face.send_cells);
      check_mpi(MPI_Isend(src, count, type, face.peer, kTagBase + f, comm_, requests.add()),
                "MPI_Isend (deep halo)");
    }
    requests.wait_all();
    for (int f = 2 * axis; f < 2 * axis + 2; ++f) {
      Face& face = faces_[f];
      if (face.peer == MPI_PROC_NULL) continue;
      T* recv = face.recv[parity_];
      if (!ipc_.recv[f] && staged)
        backend.copy_values(recv, face.host_recv[parity_].data(), face.recv_cells, lane);
      if (face.ordered) backend.wait_event(face.events.peer_sent[parity_], lane);
      const std::array<int, 3> e = range_extent(face.recv_range);
      backend.copy_box(extended + range_start(g, face.recv_range), g.stride_y(), g.stride_z(), recv,
                       e[0], std::int64_t(e[0]) * e[1], e, lane);
      if (face.ordered) backend.record_event(face.events.unpacked[parity_], lane);
    }
  }
  parity_ ^= 1;
}

template class HostBuffer<float>;
template struct FaceBuffers<float>;
template struct FaceBuffers<double>;
template class HostBuffer<double>;
template class MpiHaloExchanger<float>;
template class MpiHaloExchanger<double>;
template class MpiDeepHaloExchanger<float>;
template class MpiDeepHaloExchanger<double>;

}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_MPI
