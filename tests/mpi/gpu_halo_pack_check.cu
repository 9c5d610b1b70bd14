// GPU check of the halo pack/unpack kernels (kernels/halo/cuda/halo_pack.cu) against the CPU
// reference (cpu_pack_face / cpu_unpack_face): same buffers bit for bit, unpack touches the
// ghost layer of its face only. Needs a GPU and no MPI, HDF5 or other dependency:
//   nvcc -std=c++17 -O2 -arch=sm_90 -I. -Xcompiler -fopenmp -DHEATSOLVE_HAVE_CUDA=1 \
//        tests/mpi/gpu_halo_pack_check.cu kernels/halo/cuda/halo_pack.cu kernels/device.cpp \
//        kernels/cpu/cpu_backend.cpp kernels/multigrid/cpu/transfer_cpu.cpp \
//        kernels/reduction/cpu/reduction_cpu.cpp -o gpu_halo_pack_check
//   ./gpu_halo_pack_check        (exit 0: all passed)
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/device.hpp"
#include "kernels/halo/cuda/halo_pack.hpp"

using namespace heatsolve;

namespace {

int failures = 0, checks = 0;

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <typename T>
void check_grid(int dims, int nx, int ny, int nz, cudaStream_t stream) {
  GridDesc g;
  g.dims = dims;
  g.nx = nx, g.ny = ny, g.nz = dims == 3 ? nz : 1;
  std::mt19937 rng(nx * 131 + ny * 17 + nz);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<T> u(g.padded_size());
  for (T& v : u) v = T(dist(rng));
  T* du = nullptr;
  CUDA_CHECK(cudaMalloc(&du, u.size() * sizeof(T)));
  CUDA_CHECK(cudaMemcpy(du, u.data(), u.size() * sizeof(T), cudaMemcpyHostToDevice));
  for (int face = 0; face < 2 * dims; ++face) {
    const std::size_t n = face_cells(g, face);
    // pack
    std::vector<T> want(n), got(n);
    cpu_pack_face(u.data(), g, face, want.data());
    T* dbuf = nullptr;
    CUDA_CHECK(cudaMalloc(&dbuf, n * sizeof(T)));
    cuda_pack_face(du, g, face, dbuf, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaMemcpy(got.data(), dbuf, n * sizeof(T), cudaMemcpyDeviceToHost));
    ++checks;
    if (!same_bits(want, got)) {
      ++failures;
      std::printf("FAILED pack %dD %dx%dx%d face %d (%zu bytes/value)\n", dims, nx, ny, nz, face,
                  sizeof(T));
    }
    // unpack a fresh buffer into a copy of u; everything else must stay as it was
    std::vector<T> buf(n);
    for (T& v : buf) v = T(dist(rng));
    std::vector<T> ref = u, dev(u.size());
    cpu_unpack_face(ref.data(), g, face, buf.data());
    CUDA_CHECK(cudaMemcpy(dbuf, buf.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    T* du2 = nullptr;
    CUDA_CHECK(cudaMalloc(&du2, u.size() * sizeof(T)));
    CUDA_CHECK(cudaMemcpy(du2, u.data(), u.size() * sizeof(T), cudaMemcpyHostToDevice));
    cuda_unpack_face(du2, g, face, dbuf, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaMemcpy(dev.data(), du2, u.size() * sizeof(T), cudaMemcpyDeviceToHost));
    ++checks;
    if (!same_bits(ref, dev)) {
      ++failures;
      std::printf("FAILED unpack %dD %dx%dx%d face %d\n", dims, nx, ny, nz, face);
    }
    CUDA_CHECK(cudaFree(du2));
    CUDA_CHECK(cudaFree(dbuf));
  }
  CUDA_CHECK(cudaFree(du));
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  const int sizes[][3] = {{1, 1, 1},     {2, 3, 1},    {7, 5, 3},    {33, 17, 9}, {64, 64, 64},
                          {130, 67, 40}, {1000, 3, 2}, {3, 1000, 2}, {5, 4, 513}};
  for (const auto& s : sizes)
    for (int dims : {2, 3}) {
      check_grid<float>(dims, s[0], s[1], s[2], stream);
      check_grid<double>(dims, s[0], s[1], s[2], stream);
      check_grid<double>(dims, s[0], s[1], s[2], nullptr);  // legacy default stream
    }
  // pinned staging buffers
  void* p = device::pinned_alloc(1 << 20);
  ++checks;
  if (!p) {
    ++failures;
    std::printf("FAILED device::pinned_alloc\n");
  }
  device::pinned_free(p);
  // a face out of range throws
  bool threw = false;
  try {
    GridDesc g;
    g.dims = 2, g.nx = 4, g.ny = 4;
    cuda_pack_face<double>(nullptr, g, 4, nullptr);
  } catch (const std::exception&) {
    threw = true;
  }
  ++checks;
  if (!threw) ++failures, std::printf("FAILED: face 4 of a 2D grid must throw\n");
  CUDA_CHECK(cudaStreamDestroy(stream));
  std::printf("%s: %d checks, %d failed\n", failures ? "FAILED" : "PASSED", checks, failures);
  return failures ? 1 : 0;
}
