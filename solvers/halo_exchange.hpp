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
// HaloMode::Auto picks cuda-aware when the MPI library reports CUDA support, else staged;
// HaloMode::CudaAware without that support is an error; HaloMode::Staged always stages.
#pragma once

#ifdef HEATSOLVE_HAVE_MPI

#include <mpi.h>

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "io/config.hpp"
#include "solvers/decomposition.hpp"
#include "solvers/domain.hpp"

namespace heatsolve {

// True when the MPI library can take device pointers (CUDA-aware), at build and run time.
bool mpi_cuda_aware();

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

// Host buffer for staging: pinned (cudaMallocHost) when built with CUDA and a device is
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

template <typename T>
class MpiHaloExchanger final : public HaloExchanger<T> {
 public:
  // The decomposition must outlive the exchanger (its communicator is used).
  MpiHaloExchanger(const CartesianDecomposition& decomposition, HaloMode mode);

  // begin() then finish().
  void exchange(Backend<T>& backend, T* u) override;
  // Posts the receives, packs and sends every Exchange face of u. u's interior must not
  // change and its Exchange ghosts must not be read until finish().
  void begin(Backend<T>& backend, T* u) override;
  // Waits for the messages and unpacks them into the ghost layers of u.
  void finish(Backend<T>& backend, T* u) override;

  // "host", "staged", "cuda-aware", or "none" before the first exchange / without peers.
  std::string transport() const;
  // Number of faces exchanged with peers (0..6).
  int active_faces() const;

 private:
  enum class Transport { None, Host, Staged, CudaAware };
  struct Face {
    int peer = MPI_PROC_NULL;
    std::size_t cells = 0;
    std::unique_ptr<Array<T>> send, recv;  // backend memory space
    HostBuffer<T> host_send, host_recv;    // staged transport only
  };
  void setup(Backend<T>& backend);

  MPI_Comm comm_;
  GridDesc g_;
  HaloMode mode_;
  std::array<Face, 6> faces_;
  const Backend<T>* bound_ = nullptr;  // backend the buffers were allocated for
  Transport transport_ = Transport::None;
  T* in_flight_ = nullptr;  // u between begin() and finish()
  MpiRequests requests_;
};

}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_MPI
