#include "solvers/halo_exchange.hpp"

#ifdef HEATSOLVE_HAVE_MPI

#include <fmt/format.h>

#include <stdexcept>
#include <type_traits>
#include <utility>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#ifdef HEATSOLVE_HAVE_CUDA
#include "kernels/halo/cuda/halo_pack.hpp"
#endif

namespace heatsolve {

namespace {

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw std::runtime_error(
        fmt::format("halo exchange: {} failed: {}", what, std::string(msg, len)));
  }
}

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
#ifdef HEATSOLVE_HAVE_CUDA
  data_ = static_cast<T*>(cuda_pinned_alloc(n * sizeof(T)));
  pinned_ = data_ != nullptr;
#endif
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
#ifdef HEATSOLVE_HAVE_CUDA
  if (pinned_) cuda_pinned_free(data_);
#endif
  if (!pinned_) delete[] data_;
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
int MpiHaloExchanger<T>::active_faces() const {
  int n = 0;
  for (const Face& f : faces_) n += f.peer != MPI_PROC_NULL ? 1 : 0;
  return n;
}

template <typename T>
std::string MpiHaloExchanger<T>::transport() const {
  int ipc = 0, other = 0;
  for (const Face& f : faces_)
    if (f.peer != MPI_PROC_NULL) ++(f.ipc_send && f.ipc_recv ? ipc : other);
  if (transport_ == Transport::None) return "none";
  if (ipc > 0) return other > 0 ? "ipc+staged" : "ipc";
  switch (transport_) {
    case Transport::Host:
      return "host";
    case Transport::Staged:
      return "staged";
    case Transport::CudaAware:
      return "cuda-aware";
    case Transport::None:
      break;
  }
  return "none";
}

template <typename T>
MpiHaloExchanger<T>::IpcMapping::~IpcMapping() {
#ifdef HEATSOLVE_HAVE_CUDA
  cuda_ipc_close(p_);
#endif
}

template <typename T>
typename MpiHaloExchanger<T>::IpcMapping& MpiHaloExchanger<T>::IpcMapping::operator=(
    IpcMapping&& o) noexcept {
  if (this != &o) {
#ifdef HEATSOLVE_HAVE_CUDA
    cuda_ipc_close(p_);
#endif
    p_ = std::exchange(o.p_, nullptr);
  }
  return *this;
}

template <typename T>
void MpiHaloExchanger<T>::setup(Backend<T>& backend) {
  if (bound_ == &backend) return;
  if (!requests_.empty())
    throw std::logic_error("halo exchange: backend changed while an exchange is in flight");
  bool try_ipc = false;
  if (!backend.device_memory()) {
    transport_ = Transport::Host;
  } else if (mode_ == HaloMode::Staged) {
    transport_ = Transport::Staged;
  } else if (mode_ != HaloMode::Ipc && mpi_cuda_aware()) {
    transport_ = Transport::CudaAware;
  } else if (mode_ == HaloMode::CudaAware) {
    throw std::runtime_error(
        "execution.halo: cuda-aware requested but this MPI library is not CUDA-aware "
        "(MPIX_Query_cuda_support() is false); use halo: staged, ipc or auto");
  } else {
    transport_ = Transport::Staged;  // for the faces IPC cannot serve
    try_ipc = true;
  }
  for (Face& f : faces_) {
    if (f.peer == MPI_PROC_NULL) continue;
    f.send = backend.allocate(f.cells);
    for (auto& r : f.recv) r = backend.allocate(f.cells);
    if (transport_ == Transport::Staged) {
      f.host_send = HostBuffer<T>(f.cells);
      for (auto& h : f.host_recv) h = HostBuffer<T>(f.cells);
    }
  }
  // Every rank takes the same branch (same deck, same MPI library), so the collective calls
  // in setup_ipc are made by all ranks.
  if (try_ipc) setup_ipc();
  if (mode_ == HaloMode::Ipc)
    for (const Face& f : faces_)
      if (f.peer != MPI_PROC_NULL && !(f.ipc_send && f.ipc_recv))
        throw std::runtime_error(fmt::format(
            "execution.halo: ipc requested but the halo with rank {} cannot go through CUDA "
            "IPC (another node, or the device buffers could not be mapped); use halo: auto",
            f.peer));
  if (active_faces() == 0) transport_ = Transport::None;
  bound_ = &backend;
}

// Both neighbours of a face agree on IPC for each direction: each exports its two receive
// buffers, the other maps them when it shares the node, and tells whether it could.
template <typename T>
void MpiHaloExchanger<T>::setup_ipc() {
#ifdef HEATSOLVE_HAVE_CUDA
  constexpr int kTagHandles = 1000, kTagMapped = 2000;  // + the sender's face
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  MPI_Group world_group, node_group;
  MPI_Comm_group(comm_, &world_group);
  MPI_Comm_group(node, &node_group);

  struct Offer {
    int ok = 0;
    CudaIpcHandle handles[2];
  };
  std::array<Offer, 6> mine{}, theirs{};
  std::array<int, 6> mapped{}, peer_mapped{};
  for (int f = 0; f < 6; ++f) {
    Face& face = faces_[f];
    if (face.peer == MPI_PROC_NULL) continue;
    mine[f].ok = 1;
    for (int b = 0; b < 2; ++b)  // each recv buffer is its own cudaMalloc: exportable
      mine[f].ok &= cuda_ipc_export(face.recv[b]->data(), &mine[f].handles[b]) ? 1 : 0;
  }
  {
    MpiRequests reqs;
    for (int f = 0; f < 6; ++f) {
      Face& face = faces_[f];
      if (face.peer == MPI_PROC_NULL) continue;
      // My ghost face f is filled by the neighbour's face f^1 (tags as in begin()).
      check_mpi(MPI_Irecv(&theirs[f], sizeof(Offer), MPI_BYTE, face.peer, kTagHandles + (f ^ 1),
                          comm_, reqs.add()),
                "MPI_Irecv");
      check_mpi(MPI_Isend(&mine[f], sizeof(Offer), MPI_BYTE, face.peer, kTagHandles + f, comm_,
                          reqs.add()),
                "MPI_Isend");
    }
    reqs.wait_all();
  }
  for (int f = 0; f < 6; ++f) {
    Face& face = faces_[f];
    if (face.peer == MPI_PROC_NULL || !theirs[f].ok) continue;
    int node_rank = MPI_UNDEFINED;
    MPI_Group_translate_ranks(world_group, 1, &face.peer, node_group, &node_rank);
    if (node_rank == MPI_UNDEFINED) continue;  // another node: handles mean nothing here
    IpcMapping m0(cuda_ipc_open(theirs[f].handles[0]));
    IpcMapping m1(cuda_ipc_open(theirs[f].handles[1]));
    if (!m0.get() || !m1.get()) continue;
    face.remote[0] = std::move(m0);
    face.remote[1] = std::move(m1);
    mapped[f] = 1;
  }
  {
    MpiRequests reqs;
    for (int f = 0; f < 6; ++f) {
      Face& face = faces_[f];
      if (face.peer == MPI_PROC_NULL) continue;
      check_mpi(MPI_Irecv(&peer_mapped[f], 1, MPI_INT, face.peer, kTagMapped + (f ^ 1), comm_,
                          reqs.add()),
                "MPI_Irecv");
      check_mpi(MPI_Isend(&mapped[f], 1, MPI_INT, face.peer, kTagMapped + f, comm_, reqs.add()),
                "MPI_Isend");
    }
    reqs.wait_all();
  }
  for (int f = 0; f < 6; ++f) {
    faces_[f].ipc_send = mapped[f] != 0;
    faces_[f].ipc_recv = peer_mapped[f] != 0;
  }
  MPI_Group_free(&node_group);
  MPI_Group_free(&world_group);
  MPI_Comm_free(&node);
#endif
}

template <typename T>
void MpiHaloExchanger<T>::begin(Backend<T>& backend, T* u) {
  if (in_flight_) throw std::logic_error("halo exchange: begin() twice without finish()");
  setup(backend);
  if (active_faces() == 0) return;
  const bool staged = transport_ == Transport::Staged;
  const MPI_Datatype type = mpi_type<T>();
  // A ghost face g receives what the neighbour sent from its opposite face (g ^ 1); the tag
  // is the sender's face, which keeps the two directions apart when both neighbours along an
  // axis are the same rank (periodic axis over 2 ranks). IPC faces exchange empty messages.
  for (int f = 0; f < 6; ++f) {
    Face& face = faces_[f];
    if (face.peer == MPI_PROC_NULL) continue;
    T* dst = face.ipc_recv ? nullptr
             : staged      ? face.host_recv[parity_].data()
                           : face.recv[parity_]->data();
    const int count = face.ipc_recv ? 0 : int(face.cells);
    check_mpi(MPI_Irecv(dst, count, type, face.peer, f ^ 1, comm_, requests_.add()), "MPI_Irecv");
  }
  for (int f = 0; f < 6; ++f) {
    Face& face = faces_[f];
    if (face.peer == MPI_PROC_NULL) continue;
    backend.pack_face(u, g_, f, face.send->data());
    if (face.ipc_send)
      backend.copy_values(face.remote[parity_].get(), face.send->data(), face.cells);
    else if (staged)
      backend.copy_values(face.host_send.data(), face.send->data(), face.cells);
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
  const bool staged = transport_ == Transport::Staged;
  const MPI_Datatype type = mpi_type<T>();
  for (int f = 0; f < 6; ++f) {
    Face& face = faces_[f];
    if (face.peer == MPI_PROC_NULL) continue;
    const T* src = face.ipc_send ? nullptr : staged ? face.host_send.data() : face.send->data();
    const int count = face.ipc_send ? 0 : int(face.cells);
    check_mpi(MPI_Isend(src, count, type, face.peer, f, comm_, requests_.add()), "MPI_Isend");
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
    T* recv = face.recv[parity_]->data();
    if (!face.ipc_recv && transport_ == Transport::Staged)
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
std::unique_ptr<DeepHaloExchanger<T>> MpiHaloExchanger<T>::make_deep(int depth) const {
  std::array<int, 6> peers;
  for (int f = 0; f < 6; ++f) peers[f] = faces_[f].peer;
  return std::make_unique<MpiDeepHaloExchanger<T>>(comm_, peers,
                                                   deep_halo_geometry(domain_, depth));
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
                                              const DeepHaloGeometry& geometry)
    : comm_(comm), geometry_(geometry) {
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
void MpiDeepHaloExchanger<T>::exchange(Backend<T>& backend, T* extended) {
  const bool staged = backend.device_memory();
  if (bound_ != &backend) {
    for (Face& face : faces_) {
      if (face.peer == MPI_PROC_NULL) continue;
      face.send = backend.allocate(face.send_cells);
      face.recv = backend.allocate(face.recv_cells);
      if (staged) {
        face.host_send = HostBuffer<T>(face.send_cells);
        face.host_recv = HostBuffer<T>(face.recv_cells);
      }
    }
    bound_ = &backend;
  }
  const GridDesc& g = geometry_.extended;
  const MPI_Datatype type = mpi_type<T>();
  constexpr int kTagBase = 100;  // + the sender's face; apart from the one-layer exchange's
  for (int axis = 0; axis < g.dims; ++axis) {
    MpiRequests requests;
    for (int f = 2 * axis; f < 2 * axis + 2; ++f) {
      Face& face = faces_[f];
      if (face.peer == MPI_PROC_NULL) continue;
      T* dst = staged ? face.host_recv.data() : face.recv->data();
      check_mpi(MPI_Irecv(dst, int(face.recv_cells), type, face.peer, kTagBase + (f ^ 1), comm_,
                          requests.add()),
                "MPI_Irecv (deep halo)");
    }
    bool any = false;
    for (int f = 2 * axis; f < 2 * axis + 2; ++f) {
      Face& face = faces_[f];
      if (face.peer == MPI_PROC_NULL) continue;
      const std::array<int, 3> e = range_extent(face.send_range);
      backend.copy_box(face.send->data(), e[0], std::int64_t(e[0]) * e[1],
                       extended + range_start(g, face.send_range), g.stride_y(), g.stride_z(), e);
      if (staged) backend.copy_values(face.host_send.data(), face.send->data(), face.send_cells);
      any = true;
    }
    if (!any) continue;
    backend.synchronize();
    for (int f = 2 * axis; f < 2 * axis + 2; ++f) {
      Face& face = faces_[f];
      if (face.peer == MPI_PROC_NULL) continue;
      const T* src = staged ? face.host_send.data() : face.send->data();
      check_mpi(MPI_Isend(src, int(face.send_cells), type, face.peer, kTagBase + f, comm_,
                          requests.add()),
                "MPI_Isend (deep halo)");
    }
    requests.wait_all();
    for (int f = 2 * axis; f < 2 * axis + 2; ++f) {
      Face& face = faces_[f];
      if (face.peer == MPI_PROC_NULL) continue;
      if (staged) backend.copy_values(face.recv->data(), face.host_recv.data(), face.recv_cells);
      const std::array<int, 3> e = range_extent(face.recv_range);
      backend.copy_box(extended + range_start(g, face.recv_range), g.stride_y(), g.stride_z(),
                       face.recv->data(), e[0], std::int64_t(e[0]) * e[1], e);
    }
  }
}

template class HostBuffer<float>;
template class HostBuffer<double>;
template class MpiHaloExchanger<float>;
template class MpiHaloExchanger<double>;
template class MpiDeepHaloExchanger<float>;
template class MpiDeepHaloExchanger<double>;

}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_MPI
