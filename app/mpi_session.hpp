// The process's MPI lifetime (MPI_Init_thread .. MPI_Finalize) and where this rank sits:
// world rank/size and the node-local rank that picks its GPU. Without MPI in the build (or
// before/after the session) everything reports a single rank.
#pragma once

#include <exception>
#include <string>

namespace heatsolve {

class MpiSession {
 public:
  // Initialises MPI (MPI_THREAD_FUNNELED: only the main thread calls MPI; OpenMP threads
  // compute) when built with MPI and started_by_mpi_launcher(). One per process, created
  // first thing in main().
  MpiSession(int& argc, char**& argv);
  // MPI_Finalize, unless MPI_Abort ended the job first.
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // rank among the ranks on this node
  int local_size() const { return local_size_; }

  // Ends the whole job (every rank) with `code`; with a single rank just exits.
  [[noreturn]] void abort(int code) const;

 private:
  bool owns_mpi_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

// True when this process was started by an MPI launcher (mpirun/mpiexec, srun with several
// tasks), judged from the launchers' environment variables; HEATSOLVE_MPI=1 forces MPI on
// (a launcher we do not recognise), HEATSOLVE_MPI=0 forces a serial process. Without it the
// session does not initialise MPI: a plain `heatsolve ...` stays an ordinary process.
bool started_by_mpi_launcher();

// Queries usable anywhere (run_command, tests); a process without an active MPI session
// (e.g. the in-process unit tests) is one rank.
bool mpi_active();      // MPI initialised and not finalised
int world_rank();       // 0 without MPI
int world_size();       // 1 without MPI
int node_local_rank();  // rank among the ranks sharing this node (MPI_COMM_TYPE_SHARED)

// Ends the whole job from a failure on this rank: prints "<kind>: <what>" and calls
// MPI_Abort(MPI_COMM_WORLD, code) (a single rank just exits). Under MPI the failing ranks first
// compare messages for up to a second: when every rank fails alike (a full disk under
// collective I/O) rank 0 prints the one line; otherwise each failing rank prints its own,
// "rank R: <kind>: <what>". Call it *before* unwinding past objects whose destructors are
// collective (an MPI-IO file, a communicator): a failing rank must not wait in them for peers
// that wait for it.
[[noreturn]] void abort_job(const std::string& what, int code, const char* kind = "error");
// abort_job() for an exception that ends the run: a broken invariant (std::logic_error and
// its kin) is an internal error (exit 4, "please report this"), anything else exit 1.
[[noreturn]] void abort_job_for(const std::exception& e);

// The GPU this rank should use: node_local_rank() % device_count, or -1 (current device)
// when there is no device or the job has a single rank.
int gpu_for_this_rank(int device_count);

}  // namespace heatsolve
