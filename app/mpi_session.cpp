#include "app/mpi_session.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#ifdef HEATSOLVE_HAVE_MPI
#include <mpi.h>
#endif

namespace heatsolve {

namespace {
int g_local_rank = 0;  // cached by the session (MPI_Comm_split_type is collective)

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

void abort_job(const std::string& what, int code) {
  const int size = world_size();
  if (size > 1)
    std::fprintf(stderr, "rank %d: error: %s\n", world_rank(), what.c_str());
  else
    std::fprintf(stderr, "error: %s\n", what.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef HEATSOLVE_HAVE_MPI
  if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
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
