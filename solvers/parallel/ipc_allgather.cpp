#include "solvers/parallel/ipc_allgather.hpp"

#ifdef HEATSOLVE_HAVE_MPI

#include <algorithm>
#include <cstdint>

namespace heatsolve {

namespace {

constexpr int kTagGather = 9000;  // the per-gather messages; apart from the exchangers' tags

int extent(const GridDesc& g, int a) {
  return a == 0 ? g.nx : a == 1 ? g.ny : g.nz;
}

// What each rank offers the others at set-up.
struct Offer {
  int ok = 0;
  device::IpcHandle copy[2];
  std::uint64_t offset[2];
  device::IpcEventHandle written[2], consumed[2];
};

// The probe that rank `writer` stores through its mapping of copy b, in the first ghost plane
// (zeroed again before any gather).
std::uint64_t probe(int writer, int b) {
  return (std::uint64_t(0x6A7E) << 48) | (std::uint64_t(writer) << 8) | std::uint64_t(b);
}

}  // namespace

bool all_on_one_node(MPI_Comm comm) {
  const std::vector<char>& on_node = ranks_on_my_node(comm);
  return std::all_of(on_node.begin(), on_node.end(), [](char c) { return c != 0; });
}

bool slab_block(const GridDesc& global, const Block& block) {
  bool slab = true;
  for (int a = 0; a + 1 < global.dims; ++a)
    slab = slab && block.offset[a] == 0 && block.count[a] == extent(global, a);
  return slab;
}

template <typename T>
std::unique_ptr<IpcAllgather<T>> IpcAllgather<T>::create(MPI_Comm comm, Backend<T>& backend,
                                                         const GridDesc& global,
                                                         const Block& block) {
  int size = 1, me = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &me);
  const auto all = [comm](bool ok) {
    int mine = ok ? 1 : 0, every = 0;
    check_mpi(MPI_Allreduce(&mine, &every, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce (gather)");
    return every == 1;
  };
  const bool one_node = all_on_one_node(comm);
  const bool slab = slab_block(global, block);
  const int axis = global.dims - 1;  // the stream axis
  // The probes' slots (8 bytes per rank) fit in the first ghost plane.
  const std::size_t plane = axis == 2 ? std::size_t(global.stride_z()) : global.stride_y();
  const bool fits = std::size_t(size) * sizeof(std::uint64_t) <= plane * sizeof(T);
  if (!all(size > 1 && backend.device_memory() && one_node && slab && fits)) return nullptr;

  std::unique_ptr<IpcAllgather<T>> g(new IpcAllgather<T>());
  g->comm_ = comm;
  g->global_ = global;
  g->block_ = block;
  g->local_ = global;
  g->local_.nx = block.count[0];
  g->local_.ny = block.count[1];
  if (global.dims == 3) g->local_.nz = block.count[2];
  g->plane_begin_ = plane * std::size_t(block.offset[axis] + 1);
  g->plane_values_ = plane * std::size_t(block.count[axis]);

  Offer mine;
  mine.ok = 1;
  const std::size_t bytes = global.padded_size() * sizeof(T);
  for (int b = 0; b < 2; ++b) {
    g->copy_[b] = device::export_alloc(bytes);
    g->written_[b] = device::IpcEvent::create(&mine.written[b]);
    g->consumed_[b] = device::IpcEvent::create(&mine.consumed[b]);
    mine.ok &= g->copy_[b] && g->copy_[b].set_zero(bytes) && g->written_[b] && g->consumed_[b];
    mine.copy[b] = g->copy_[b].handle();
    mine.offset[b] = g->copy_[b].offset();
  }
  std::vector<Offer> offers(static_cast<std::size_t>(size));
  check_mpi(
      MPI_Allgather(&mine, sizeof(Offer), MPI_BYTE, offers.data(), sizeof(Offer), MPI_BYTE, comm),
      "MPI_Allgather (gather set-up)");
  bool ok = true;
  for (const Offer& o : offers) ok = ok && o.ok;
  if (!all(ok)) return nullptr;
  for (int r = 0; r < size && ok; ++r) {
    if (r == me) continue;
    Peer p;
    p.rank = r;
    for (int b = 0; b < 2; ++b) {
      p.copy[b] = CudaIpcMapping(device::ipc_open(offers[r].copy[b]), offers[r].offset[b]);
      p.written[b] = device::IpcEvent::open(offers[r].written[b]);
      p.consumed[b] = device::IpcEvent::open(offers[r].consumed[b]);
      ok = ok && p.copy[b].get() && p.written[b] && p.consumed[b] &&
           device::ipc_probe_write(static_cast<std::uint64_t*>(p.copy[b].get()) + me, probe(me, b));
    }
    g->peers_.push_back(std::move(p));
  }
  if (!all(ok)) return nullptr;  // every probe written
  for (int r = 0; r < size && ok; ++r)
    for (int b = 0; b < 2 && ok && r != me; ++b) {
      std::uint64_t got = 0;
      ok =
          device::ipc_probe_read(static_cast<const std::uint64_t*>(g->copy_[b].data()) + r, &got) &&
          got == probe(r, b);
    }
  for (int b = 0; b < 2; ++b) ok = ok && g->copy_[b].set_zero(bytes);
  if (!all(ok)) return nullptr;  // the probes cleared before any gather writes
  return g;
}

template <typename T>
const T* IpcAllgather<T>::gather(Backend<T>& backend, const T* local) {
  T* own = copy_data(parity_);
  const bool d3 = global_.dims == 3;
  const std::array<int, 3> e{local_.nx, local_.ny, d3 ? local_.nz : 1};
  backend.copy_box(
      own + global_.index(block_.offset[0], block_.offset[1], d3 ? block_.offset[2] : 0),
      global_.stride_y(), global_.stride_z(), local + local_.index(0, 0, 0), local_.stride_y(),
      local_.stride_z(), e);
  // Whole padded planes: their ghost cells are zero in every copy.
  for (Peer& p : peers_) {
    backend.wait_event(p.consumed[parity_]);
    backend.copy_values(static_cast<T*>(p.copy[parity_].get()) + plane_begin_, own + plane_begin_,
                        plane_values_);
  }
  backend.record_event(written_[parity_]);
  MpiRequests requests;
  for (const Peer& p : peers_) {
    check_mpi(MPI_Irecv(nullptr, 0, MPI_BYTE, p.rank, kTagGather, comm_, requests.add()),
              "MPI_Irecv (gather)");
    check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, p.rank, kTagGather, comm_, requests.add()),
              "MPI_Isend (gather)");
  }
  requests.wait_all();
  for (Peer& p : peers_) backend.wait_event(p.written[parity_]);
  return own;
}

template <typename T>
void IpcAllgather<T>::release(Backend<T>& backend) {
  backend.record_event(consumed_[parity_]);
  parity_ ^= 1;
}

template class IpcAllgather<float>;
template class IpcAllgather<double>;

}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_MPI
