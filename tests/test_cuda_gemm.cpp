// CUDA GEMM ladder and tall-skinny A^T B vs the CPU (double) references: non-square shapes
// that are not multiples of any tile, float and double, tolerances scaled by K (or N) and by
// |A||B|; outputs poisoned with NaN before each run. Skips itself without a CUDA device;
// compiles without CUDA.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/gemm_cpu.hpp"
#include "kernels/grid.hpp"
#ifdef HEATSOLVE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/gemm.cuh"
#endif

namespace {

template <class T>
std::vector<T> random_vector(std::size_t n, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

}  // namespace

TEST(CpuGemm, SmallKnownProduct) {
  const double A[] = {1, 2, 3, 4, 5, 6};  // 2 x 3
  const double B[] = {1, 0, 0, 1, 1, 1};  // 3 x 2
  double C[4], Cabs[4];
  heatsolve::cpu::gemm_reference(2, 2, 3, A, B, C, Cabs);
  EXPECT_EQ(C[0], 4);
  EXPECT_EQ(C[1], 5);
  EXPECT_EQ(C[2], 10);
  EXPECT_EQ(C[3], 11);
  double G[4];
  heatsolve::cpu::gemm_atb_reference<double>(3, 2, 2, B, B, G);  // B^T B, B: 3 x 2
  EXPECT_EQ(G[0], 2);
  EXPECT_EQ(G[1], 1);
  EXPECT_EQ(G[3], 2);
}

#ifdef HEATSOLVE_HAVE_CUDA

namespace {

namespace gpu = heatsolve::cuda;

#define HS_SKIP_WITHOUT_GPU() \
  if (!heatsolve::cuda_device_available()) GTEST_SKIP() << "no CUDA device"

template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) : n_(std::max<std::size_t>(n, 1)) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p_), n_ * sizeof(T)), cudaSuccess);
  }
  explicit DeviceArray(const std::vector<T>& h) : DeviceArray(h.size()) {
    if (!h.empty()) {
      EXPECT_EQ(cudaMemcpy(p_, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice),
                cudaSuccess);
    }
  }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  void poison() { EXPECT_EQ(cudaMemset(p_, 0xFF, n_ * sizeof(T)), cudaSuccess); }  // NaN
  std::vector<T> download(std::size_t n) const {
    std::vector<T> h(n);
    if (n) {
      EXPECT_EQ(cudaMemcpy(h.data(), p_, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return h;
  }

 private:
  T* p_ = nullptr;
  std::size_t n_;
};

template <class T>
class CudaGemm : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaGemm, Precisions);

struct Shape {
  int M, N, K;
};

TYPED_TEST(CudaGemm, EveryRungMatchesCpuReference) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const Shape shapes[] = {{67, 45, 93},  {1, 1, 1},      {130, 257, 33},  {128, 128, 128},
                          {64, 96, 128}, {130, 260, 36}, {1, 300, 7},     {300, 1, 5},
                          {33, 17, 0},   {5, 7, 1},      {257, 129, 300}, {256, 256, 8}};
  for (const Shape& s : shapes) {
    const auto A = random_vector<T>(std::size_t(s.M) * s.K, 1u + s.M);
    const auto B = random_vector<T>(std::size_t(s.K) * s.N, 2u + s.N);
    std::vector<double> ref(std::size_t(s.M) * s.N), refabs(ref.size());
    heatsolve::cpu::gemm_reference(s.M, s.N, s.K, A.data(), B.data(), ref.data(), refabs.data());
    DeviceArray<T> dA(A), dB(B), dC(ref.size());
    for (gpu::GemmVariant v : gpu::all_gemm_variants()) {
      dC.poison();
      gpu::gemm(v, s.M, s.N, s.K, dA.get(), dB.get(), dC.get(), nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto C = dC.download(ref.size());
      int bad = 0;
      for (std::size_t i = 0; i < ref.size() && bad < 5; ++i) {
        const double tol = 2.0 * (s.K + 2) * std::numeric_limits<T>::epsilon() * refabs[i] + 1e-300;
        if (!(std::fabs(double(C[i]) - ref[i]) <= tol)) {
          ++bad;
          ADD_FAILURE() << gpu::gemm_variant_name(v) << " " << s.M << "x" << s.N << "x" << s.K
                        << " C[" << i << "] = " << C[i] << ", want " << ref[i] << " +- " << tol;
        }
      }
    }
  }
}

// Unaligned operands (offset by one element) take the scalar-load path of the fastest rung.
TYPED_TEST(CudaGemm, RegisterTiledUnalignedPointers) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const int M = 100, N = 132, K = 64;
  const auto A = random_vector<T>(std::size_t(M) * K + 1, 5u);
  const auto B = random_vector<T>(std::size_t(K) * N + 1, 6u);
  std::vector<double> ref(std::size_t(M) * N), refabs(ref.size());
  heatsolve::cpu::gemm_reference(M, N, K, A.data() + 1, B.data() + 1, ref.data(), refabs.data());
  DeviceArray<T> dA(A), dB(B), dC(ref.size() + 1);
  dC.poison();
  gpu::gemm(gpu::GemmVariant::RegisterTiled, M, N, K, dA.get() + 1, dB.get() + 1, dC.get() + 1,
            nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto C = dC.download(ref.size() + 1);
  for (std::size_t i = 0; i < ref.size(); ++i)
    ASSERT_LE(std::fabs(double(C[i + 1]) - ref[i]),
              2.0 * (K + 2) * std::numeric_limits<T>::epsilon() * refabs[i] + 1e-300)
        << i;
}

struct TsShape {
  std::int64_t N;
  int m, n;
};

TYPED_TEST(CudaGemm, TallSkinnyMatchesCpuReference) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const TsShape shapes[] = {{1, 1, 1},     {1000, 3, 5}, {100003, 16, 16},
                            {65536, 8, 1}, {777, 7, 13}, {129, 16, 2},
                            {5, 1, 16},    {0, 2, 2},    {1000001, 4, 4}};
  for (const TsShape& s : shapes) {
    const auto A = random_vector<T>(std::size_t(s.N) * s.m, 7u + s.m);
    const auto B = random_vector<T>(std::size_t(s.N) * s.n, 8u + s.n);
    const std::size_t E = std::size_t(s.m) * s.n;
    std::vector<double> ref(E), refabs(E);
    heatsolve::cpu::gemm_atb_reference(s.N, s.m, s.n, A.data(), B.data(), ref.data(),
                                       refabs.data());
    DeviceArray<T> dA(A), dB(B), dC(E);
    dC.poison();
    gpu::gemm_atb_tall_skinny(s.N, s.m, s.n, dA.get(), dB.get(), dC.get(), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto C = dC.download(E);
    // Accumulated in T: per-thread chains, the row-group tree and the block partials.
    const double chain = 2048.0 + double(s.N) / 4096.0;
    for (std::size_t e = 0; e < E; ++e)
      EXPECT_LE(std::fabs(double(C[e]) - ref[e]),
                std::numeric_limits<T>::epsilon() * chain * refabs[e] + 1e-300)
          << "N=" << s.N << " m=" << s.m << " n=" << s.n << " e=" << e << " got " << C[e];
    // Double accumulation (the Anderson entry point): near-exact.
    std::vector<double> G(E, std::nan(""));
    gpu::gram_tall_skinny(dA.get(), s.N, s.m, dB.get(), s.n, G.data(), nullptr);
    for (std::size_t e = 0; e < E; ++e)
      EXPECT_NEAR(G[e], ref[e], 1e-12 * refabs[e] + 1e-300) << "dacc N=" << s.N << " e=" << e;
    // Deterministic.
    std::vector<double> G2(E);
    gpu::gram_tall_skinny(dA.get(), s.N, s.m, dB.get(), s.n, G2.data(), nullptr);
    if (E) {
      EXPECT_EQ(std::memcmp(G.data(), G2.data(), E * sizeof(double)), 0);
    }
  }
}

// Column-block history (what Anderson keeps): m separate padded fields, interior mask, B == A
// (F^T F, columns read once), and the strided form Backend::gram passes.
TYPED_TEST(CudaGemm, GramColumnsMaskedAndSymmetric) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  heatsolve::GridDesc g;
  g.dims = 3;
  g.nx = 37;
  g.ny = 11;
  g.nz = 6;
  const std::int64_t N = static_cast<std::int64_t>(g.padded_size());
  for (int m : {1, 5, 8, 16}) {
    std::vector<std::vector<T>> cols(m);
    std::vector<std::unique_ptr<DeviceArray<T>>> dcols;
    gpu::TallSkinnyColumns<T> F;
    F.count = m;
    for (int j = 0; j < m; ++j) {
      cols[j] = random_vector<T>(std::size_t(N), 100u + j);
      dcols.push_back(std::make_unique<DeviceArray<T>>(cols[j]));
      F.cols[j] = dcols.back()->get();
    }
    // Host reference over interior cells, and over all cells.
    std::vector<double> ref_in(std::size_t(m) * m, 0.0), ref_all(ref_in.size(), 0.0);
    for (int k = 0; k < (g.dims == 3 ? g.nz : 1); ++k)
      for (int jy = 0; jy < g.ny; ++jy)
        for (int i = 0; i < g.nx; ++i) {
          const auto p = g.index(i, jy, k);
          for (int a = 0; a < m; ++a)
            for (int b = 0; b < m; ++b)
              ref_in[a * m + b] += double(cols[a][p]) * double(cols[b][p]);
        }
    for (std::int64_t p = 0; p < N; ++p)
      for (int a = 0; a < m; ++a)
        for (int b = 0; b < m; ++b) ref_all[a * m + b] += double(cols[a][p]) * double(cols[b][p]);
    std::vector<double> G(ref_in.size());
    gpu::gram_tall_skinny(F, F, N, &g, G.data(), nullptr);  // B == A: symmetric path
    for (std::size_t e = 0; e < G.size(); ++e)
      EXPECT_NEAR(G[e], ref_in[e], 1e-9) << "masked m=" << m;
    gpu::gram_tall_skinny(F, F, N, nullptr, G.data(), nullptr);
    for (std::size_t e = 0; e < G.size(); ++e) EXPECT_NEAR(G[e], ref_all[e], 1e-9) << "all m=" << m;
    // A and B different column sets (A = first m, B = last 1 column).
    gpu::TallSkinnyColumns<T> Bc;
    Bc.count = 1;
    Bc.cols[0] = F.cols[m - 1];
    std::vector<double> g1(m);
    gpu::gram_tall_skinny(F, Bc, N, &g, g1.data(), nullptr);
    for (int a = 0; a < m; ++a) EXPECT_NEAR(g1[a], ref_in[a * m + (m - 1)], 1e-9);
    // Strided column-major history: ld = N (unaligned when N*sizeof(T) % 16 != 0) and ld
    // rounded up to 16 bytes (vector path).
    for (std::size_t ld : {std::size_t(N), (std::size_t(N) + 3) / 4 * 4}) {
      std::vector<T> hist(ld * m, T(0));
      for (int j = 0; j < m; ++j) std::copy(cols[j].begin(), cols[j].end(), hist.begin() + j * ld);
      DeviceArray<T> dh(hist);
      gpu::gram_tall_skinny_strided(dh.get(), m, dh.get(), m, ld, std::size_t(N), G.data(),
                                    nullptr);
      for (std::size_t e = 0; e < G.size(); ++e)
        EXPECT_NEAR(G[e], ref_all[e], 1e-9) << "strided ld=" << ld << " m=" << m;
    }
  }
}

TEST(CudaGemmNames, RoundTrip) {
  for (gpu::GemmVariant v : gpu::all_gemm_variants()) {
    gpu::GemmVariant w{};
    ASSERT_TRUE(gpu::parse_gemm_variant(gpu::gemm_variant_name(v), &w));
    EXPECT_EQ(v, w);
  }
}

}  // namespace

#endif  // HEATSOLVE_HAVE_CUDA
