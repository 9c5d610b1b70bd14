// What the distributed multigrid set-up's CUDA calls cost in a process of their own
// (docs/performance.md, "Where the set-up goes"): cudaMalloc + cudaMemset of a deep-halo face
// buffer (4 planes of 514^2 doubles) before and after the first IPC mapping, with the device
// idle and busy; the first, second and third cudaIpcOpenMemHandle of a neighbour's buffers,
// then the first of every other rank's (a device gather maps them all); creating, exporting and
// opening interprocess events; MPI_Comm_split_type. One GPU a rank (rank % devices),
// neighbours in a ring. PRE_GIB=n allocates n GiB first (heatsolve holds its fields when it
// sets up). PEER=enable calls cudaDeviceEnablePeerAccess to every other device first; PEER=thread
// does so on a thread of its own while this one allocates (whether the peer set-up that the
// first mapping of a device pays can be taken off the set-up's path). Built and run by
// scripts/gpu_ipc_setup_probe.sh.
#include <cuda_runtime.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_rank = 0;

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "rank %d: %s: %s\n", g_rank, what, cudaGetErrorString(e));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

void report(const std::string& what, double ms) {
  std::printf("r%d %-52s %8.3f ms\n", g_rank, what.c_str(), ms);
  std::fflush(stdout);
}

// Times a cudaMalloc and the cudaMemset heatsolve's allocations do after it.
void* timed_alloc(const std::string& what, std::size_t bytes) {
  void* p = nullptr;
  const double t0 = now_ms();
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  const double t1 = now_ms();
  check(cudaMemset(p, 0, bytes), "cudaMemset");
  const double t2 = now_ms();
  report(what + " cudaMalloc " + std::to_string(bytes >> 20) + " MiB", t1 - t0);
  report(what + "  cudaMemset", t2 - t1);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  check(cudaSetDevice(g_rank % devices), "cudaSetDevice");
  check(cudaFree(nullptr), "context");
  constexpr std::size_t kGiB = std::size_t(1) << 30;
  const char* pre = std::getenv("PRE_GIB");
  std::vector<void*> held;
  if (pre) {
    const double t = now_ms();
    for (int i = 0; i < std::atoi(pre); ++i) held.push_back(timed_alloc("held", kGiB));
    check(cudaDeviceSynchronize(), "sync");
    report(std::string("PRE_GIB=") + pre + " allocated", now_ms() - t);
  }
  const std::string peer_mode = std::getenv("PEER") ? std::getenv("PEER") : "none";
  const int my_device = g_rank % devices;
  const auto enable_peers = [&] {
    check(cudaSetDevice(my_device), "cudaSetDevice (peer thread)");
    for (int d = 0; d < devices; ++d) {
      int can = 0;
      if (d == my_device || cudaDeviceCanAccessPeer(&can, my_device, d) != cudaSuccess || !can)
        continue;
      const double t = now_ms();
      check(cudaDeviceEnablePeerAccess(d, 0), "cudaDeviceEnablePeerAccess");
      report("PEER=" + peer_mode + " enable peer device " + std::to_string(d), now_ms() - t);
    }
  };
  std::thread peer_thread;
  const double t_peer = now_ms();
  if (peer_mode == "enable") enable_peers();
  if (peer_mode == "thread") peer_thread = std::thread(enable_peers);
  const std::size_t face = std::size_t(4) * 514 * 514 * sizeof(double);
  const std::size_t granule = std::size_t(2) << 20;
  const std::size_t exported = (face + granule - 1) / granule * granule;
  timed_alloc("before IPC", face);
  void* big = timed_alloc("before IPC", kGiB);
  if (peer_thread.joinable()) {
    peer_thread.join();
    report("PEER=thread: the allocations and the thread joined", now_ms() - t_peer);
  }

  // Each rank exports three receive buffers to the previous rank, which maps them.
  const int next = (g_rank + 1) % size, prev = (g_rank + size - 1) % size;
  void* recv[3];
  cudaIpcMemHandle_t mine[3], theirs[3];
  for (int i = 0; i < 3; ++i) {
    check(cudaMalloc(&recv[i], exported), "cudaMalloc");
    check(cudaIpcGetMemHandle(&mine[i], recv[i]), "cudaIpcGetMemHandle");
  }
  MPI_Sendrecv(mine, sizeof mine, MPI_BYTE, prev, 1, theirs, sizeof theirs, MPI_BYTE, next, 1,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  for (int i = 0; i < 3; ++i) {
    void* mapped = nullptr;
    const double t = now_ms();
    check(cudaIpcOpenMemHandle(&mapped, theirs[i], cudaIpcMemLazyEnablePeerAccess),
          "cudaIpcOpenMemHandle");
    report("cudaIpcOpenMemHandle #" + std::to_string(i + 1), now_ms() - t);
  }
  // The first mapping of each other rank's buffer, in the order of distance along the ring.
  void* all = nullptr;
  cudaIpcMemHandle_t all_mine, all_handles[64];
  check(cudaMalloc(&all, exported), "cudaMalloc");
  check(cudaIpcGetMemHandle(&all_mine, all), "cudaIpcGetMemHandle");
  if (size <= 64)
    MPI_Allgather(&all_mine, sizeof all_mine, MPI_BYTE, all_handles, sizeof all_mine, MPI_BYTE,
                  MPI_COMM_WORLD);
  for (int d = 1; d < size && size <= 64; ++d) {
    const int r = (g_rank + d) % size;
    void* mapped = nullptr;
    const double t0 = now_ms();
    check(cudaIpcOpenMemHandle(&mapped, all_handles[r], cudaIpcMemLazyEnablePeerAccess),
          "cudaIpcOpenMemHandle (all)");
    report("cudaIpcOpenMemHandle of rank " + std::to_string(r) + " (device " +
               std::to_string(r % devices) + ")",
           now_ms() - t0);
  }
  timed_alloc("after IPC", face);
  timed_alloc("after IPC", kGiB);
  for (int i = 0; i < 20; ++i) check(cudaMemsetAsync(big, i, kGiB), "cudaMemsetAsync");
  timed_alloc("after IPC, device busy", face);
  double t = now_ms();
  check(cudaDeviceSynchronize(), "sync");
  report("  the busy work's drain", now_ms() - t);

  cudaEvent_t events[4];
  cudaIpcEventHandle_t event_handles[4], peer_event_handles[4];
  t = now_ms();
  for (int i = 0; i < 4; ++i) {
    check(cudaEventCreateWithFlags(&events[i], cudaEventDisableTiming | cudaEventInterprocess),
          "cudaEventCreateWithFlags");
    check(cudaIpcGetEventHandle(&event_handles[i], events[i]), "cudaIpcGetEventHandle");
  }
  report("4 interprocess events created and exported", now_ms() - t);
  MPI_Sendrecv(event_handles, sizeof event_handles, MPI_BYTE, prev, 2, peer_event_handles,
               sizeof peer_event_handles, MPI_BYTE, next, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  for (int i = 0; i < 4; ++i) {
    cudaEvent_t opened = nullptr;
    t = now_ms();
    check(cudaIpcOpenEventHandle(&opened, peer_event_handles[i]), "cudaIpcOpenEventHandle");
    report("cudaIpcOpenEventHandle #" + std::to_string(i + 1), now_ms() - t);
  }
  for (int i = 0; i < 2; ++i) {
    MPI_Comm node = MPI_COMM_NULL;
    t = now_ms();
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    report("MPI_Comm_split_type #" + std::to_string(i + 1), now_ms() - t);
    MPI_Comm_free(&node);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();  // the process exit releases the device memory and mappings
  return 0;
}
