#include "app/mpi_session.hpp"

#include <time.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>

#include "app/exit_codes.hpp"

#ifdef HEATSOLVE_HAVE_MPI
#include <mpi.h>
#endif

namespace heatsolve {

namespace {
int g_local_rank = 0;  // cached by the session (MPI_Comm_split_type is collective)

#ifdef HEATSOLVE_HAVE_MPI
// The failing ranks' agreement of abort_job(): a communicator of its own, since the ranks
// that do not fail may be inside any collective of MPI_COMM_WORLD.
MPI_Comm g_failure_comm = MPI_COMM_NULL;

// Waits up to `seconds` for `request` (a nonblocking collective of the failing ranks); false
// when it did not complete (some rank did not fail, or not yet).
bool completes_within(MPI_Request& request, double seconds) {
  const double end = MPI_Wtime() + seconds;
  int done = 0;
  while (MPI_Test(&request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
    if (MPI_Wtime() > end) return false;
    const struct timespec pause = {0, 200000};  // 0.2 ms
    nanosleep(&pause, nullptr);
  }
  return done != 0;
}
#endif

#ifdef HEATSOLVE_HAVE_MPI
bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}
#endif
}  // namespace

bool started_by_mpi_launcher() {
#ifdef HEATSOLVE_HAVE_MPI
  if (const char* force = std::getenv("HEATSOLVE_MPI"); force && *force)
    return std::string(force) != "0";
  // Open MPI (mpirun), PMIx (Open MPI 5, srun --mpi=pmix), PMI-1/2 (MPICH/Intel MPI hydra,
  // srun --mpi=pmi2), MVAPICH, and any multi-task srun step.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                        "MPI_LOCALNRANKS", "MV2_COMM_WORLD_SIZE", "I_MPI_HYDRA_HOST_FILE"})
    if (env_set(v)) return true;
  const char* ntasks = std::getenv("SLURM_STEP_NUM_TASKS");
  return ntasks != nullptr && std::atoi(ntasks) > 1;
#else
  return false;
#endif
}

MpiSession::MpiSession(int& argc, char**& argv) {
#ifdef HEATSOLVE_HAVE_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  // Started without a launcher: stay a plain serial process. (Open MPI's singleton
  // MPI_Init forks an orted daemon and costs about a second per command.)
  if (!initialized && !started_by_mpi_launcher()) return;
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      std::fprintf(stderr, "error: MPI_Init_thread failed\n");
      std::exit(1);
    }
    owns_mpi_ = true;
  }
  // Errors come back as return codes (and become exceptions) instead of aborting inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_failure_comm);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) ==
          MPI_SUCCESS &&
      node != MPI_COMM_NULL) {
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_size(node, &local_size_);
    MPI_Comm_free(&node);
  }
  g_local_rank = local_rank_;
#else
  (void)argc;
  (void)argv;
#endif
}

MpiSession::~MpiSession() {
#ifdef HEATSOLVE_HAVE_MPI
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && g_failure_comm != MPI_COMM_NULL) MPI_Comm_free(&g_failure_comm);
  if (owns_mpi_ && !finalized) MPI_Finalize();
#endif
}

void MpiSession::abort(int code) const {
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef HEATSOLVE_HAVE_MPI
  if (size_ > 1 && mpi_active()) MPI_Abort(MPI_COMM_WORLD, code);
  if (owns_mpi_ && mpi_active()) MPI_Finalize();
#endif
  std::exit(code);
}

void abort_job(const std::string& what, int code, const char* kind) {
  const int size = world_size();
  bool once = size <= 1;  // one line for the job, without a rank
#ifdef HEATSOLVE_HAVE_MPI
  if (size > 1 && g_failure_comm != MPI_COMM_NULL) {
    // Every rank failing alike (a full disk under collective I/O) is one line from rank 0:
    // the failing ranks compare their messages (a hash, its maximum and that of its
    // complement: equal on every rank only when all hashes are) for up to a second; a rank left
    // alone, or a different message, prints its own line.
    const std::uint64_t h = std::hash<std::string>{}(std::string(kind) + what);
    std::uint64_t mine[2] = {h, ~h}, max[2] = {0, 0};
    MPI_Request agreed = MPI_REQUEST_NULL;
    if (MPI_Iallreduce(mine, max, 2, MPI_UINT64_T, MPI_MAX, g_failure_comm, &agreed) ==
            MPI_SUCCESS &&
        completes_within(agreed, 1.0))
      once = max[0] == h && max[1] == ~h;
  }
#endif
  if (once && world_rank() == 0)
    std::fprintf(stderr, "%s: %s\n", kind, what.c_str());
  else if (!once)
    std::fprintf(stderr, "rank %d: %s: %s\n", world_rank(), kind, what.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef HEATSOLVE_HAVE_MPI
  if (size > 1) {
    // Rank 0's line is out before any rank's abort can end it.
    MPI_Request printed = MPI_REQUEST_NULL;
    if (once && MPI_Ibarrier(g_failure_comm, &printed) == MPI_SUCCESS)
      completes_within(printed, 0.5);
    // One abort for the job (several at once make Open MPI's launcher report its own errors);
    // the other ranks abort themselves only if it has not ended them within a few seconds.
    if (once && world_rank() != 0) {
      std::signal(SIGTERM, SIG_DFL);  // the launcher's SIGTERM ends this rank, not a stop
      const struct timespec wait = {5, 0};
      nanosleep(&wait, nullptr);
    }
    MPI_Abort(MPI_COMM_WORLD, code);
  }
#endif
  std::exit(code);
}

void abort_job_for(const std::exception& e) {
  if (dynamic_cast<const std::logic_error*>(&e))
    abort_job(std::string(e.what()) + " (please report this)", exit_code::kInternalError,
              "internal error");
  abort_job(e.what(), exit_code::kRuntimeError);
}

bool mpi_active() {
#ifdef HEATSOLVE_HAVE_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
#else
  return false;
#endif
}

int world_rank() {
  int r = 0;
#ifdef HEATSOLVE_HAVE_MPI
  if (mpi_active()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
#endif
  return r;
}

int world_size() {
  int s = 1;
#ifdef HEATSOLVE_HAVE_MPI
  if (mpi_active()) MPI_Comm_size(MPI_COMM_WORLD, &s);
#endif
  return s;
}

int node_local_rank() {
  return mpi_active() ? g_local_rank : 0;
}

int gpu_for_this_rank(int device_count) {
  if (device_count <= 0 || world_size() <= 1) return -1;
  return node_local_rank() % device_count;
}

}  // namespace heatsolve
