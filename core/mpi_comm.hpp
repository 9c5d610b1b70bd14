// An MPI communicator this object owns (a duplicate, a split, a Cartesian one): freed with it,
// unless MPI has been finalized by then (a writer or decomposition that outlives
// MPI_Finalize, e.g. on an error path). Never holds MPI_COMM_WORLD or MPI_COMM_SELF.
#pragma once

#ifdef HEATSOLVE_HAVE_MPI
#include <mpi.h>

#include <utility>

namespace heatsolve {

class OwnedComm {
 public:
  OwnedComm() = default;
  ~OwnedComm() { reset(); }
  OwnedComm(OwnedComm&& o) noexcept : c_(std::exchange(o.c_, MPI_COMM_NULL)) {}
  OwnedComm& operator=(OwnedComm&& o) noexcept {
    if (this != &o) {
      reset();
      c_ = std::exchange(o.c_, MPI_COMM_NULL);
    }
    return *this;
  }
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;

  MPI_Comm get() const { return c_; }
  // Where an MPI call that makes a communicator puts it (the one held before is freed).
  MPI_Comm* out() {
    reset();
    return &c_;
  }
  void reset() noexcept {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (c_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&c_);
    c_ = MPI_COMM_NULL;
  }

 private:
  MPI_Comm c_ = MPI_COMM_NULL;
};

}  // namespace heatsolve

#endif  // HEATSOLVE_HAVE_MPI
