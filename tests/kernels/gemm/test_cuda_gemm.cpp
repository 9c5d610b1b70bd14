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
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/gemm/cpu/gemm_cpu.hpp"
#include "core/grid.hpp"
#ifdef HEATSOLVE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/gemm/cuda/gemm.cuh"
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
  // 300x200x131 / 300x200x130: several k-slices (tensor_core: 16 deep, 3-stage ring) and
  // partial tiles in every dimension, on the 8-byte (odd K) and 16-byte copy paths.
  const Shape shapes[] = {{67, 45, 93},    {1, 1, 1},      {130, 257, 33},  {128, 128, 128},
                          {64, 96, 128},   {130, 260, 36}, {1, 300, 7},     {300, 1, 5},
                          {33, 17, 0},     {5, 7, 1},      {257, 129, 300}, {256, 256, 8},
                          {300, 200, 131}, {300, 200, 130}};
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

// Unaligned operands (offset by one element) take the scalar-load paths of the register-tiled
// rung and of the tensor-core rung (8-byte cp.async).
TYPED_TEST(CudaGemm, FastRungsUnalignedPointers) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const int M = 100, N = 132, K = 64;
  const auto A = random_vector<T>(std::size_t(M) * K + 1, 5u);
  const auto B = random_vector<T>(std::size_t(K) * N + 1, 6u);
  std::vector<double> ref(std::size_t(M) * N), refabs(ref.size());
  heatsolve::cpu::gemm_reference(M, N, K, A.data() + 1, B.data() + 1, ref.data(), refabs.data());
  DeviceArray<T> dA(A), dB(B), dC(ref.size() + 1);
  for (gpu::GemmVariant v : {gpu::GemmVariant::RegisterTiled, gpu::GemmVariant::TensorCore}) {
    dC.poison();
    gpu::gemm(v, M, N, K, dA.get() + 1, dB.get() + 1, dC.get() + 1, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto C = dC.download(ref.size() + 1);
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_LE(std::fabs(double(C[i + 1]) - ref[i]),
                2.0 * (K + 2) * std::numeric_limits<T>::epsilon() * refabs[i] + 1e-300)
          << gpu::gemm_variant_name(v) << " " << i;
    EXPECT_TRUE(std::isnan(double(C[0]))) << gpu::gemm_variant_name(v) << " wrote before C";
  }
}

struct TsShape {
  std::int64_t N;
  int m, n;
};

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

// The bench rows: tensor_core only in double (in float it would repeat register_tiled).
TEST(CudaGemmNames, LadderPerPrecision) {
  const auto has_tc = [](const std::vector<gpu::GemmVariant>& l) {
    return std::find(l.begin(), l.end(), gpu::GemmVariant::TensorCore) != l.end();
  };
  EXPECT_TRUE(has_tc(gpu::gemm_ladder<double>()));
  EXPECT_FALSE(has_tc(gpu::gemm_ladder<float>()));
  EXPECT_EQ(gpu::gemm_ladder<double>().size(), gpu::all_gemm_variants().size());
  EXPECT_EQ(gpu::gemm_ladder<float>().size() + 1, gpu::all_gemm_variants().size());
}

// Tall-skinny A^T B against the CPU reference: every compiled tuning (the bench's ours_* /
// dacc_* rows), in T and in double, and the entry points (their own tuning choice; the
// host-result Gram Anderson calls, deterministic), on shapes of every width class incl. N = 0,
// plus the 1 x 1 dot product (reduction-rung path) with aligned, same-phase and
// different-phase operands, in row-major and column form.
TYPED_TEST(CudaGemm, TallSkinnyEveryTuningAndDot) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const TsShape shapes[] = {
      {1, 1, 1},      {1000003, 1, 1}, {0, 1, 1},    {0, 2, 2},    {100003, 16, 16}, {65537, 8, 8},
      {65536, 8, 1},  {70001, 16, 1},  {777, 4, 12}, {129, 7, 13}, {129, 16, 2},     {1000, 3, 5},
      {300001, 4, 4}, {5, 2, 2},       {5, 1, 16},   {4099, 2, 1}, {20011, 6, 5}};
  for (const TsShape& s : shapes) {
    const auto A = random_vector<T>(std::size_t(s.N) * s.m + 1, 17u + s.m);
    const auto B = random_vector<T>(std::size_t(s.N) * s.n + 1, 19u + s.n);
    const std::size_t E = std::size_t(s.m) * s.n;
    DeviceArray<T> dA(A), dB(B), dC(E);
    DeviceArray<double> dG(E);
    // Offsets (a, b): aligned; both by one (same phase, scalar head); A only (scalar loads).
    const int offsets[][2] = {{0, 0}, {1, 1}, {1, 0}};
    for (const auto& off : offsets) {
      if ((off[0] || off[1]) && E != 1 && s.N > 1000) continue;  // unaligned: dot mainly
      std::vector<double> ref(E), refabs(E);
      heatsolve::cpu::gemm_atb_reference(s.N, s.m, s.n, A.data() + off[0], B.data() + off[1],
                                         ref.data(), refabs.data());
      const double chain = 2048.0 + double(s.N) / 4096.0;
      auto check = [&](const std::string& what) {
        SCOPED_TRACE(::testing::Message() << what << " N=" << s.N << " m=" << s.m << " n=" << s.n
                                          << " off=" << off[0] << "," << off[1]);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const auto C = dC.download(E);
        const auto G = dG.download(E);
        for (std::size_t e = 0; e < E; ++e) {
          EXPECT_LE(std::fabs(double(C[e]) - ref[e]),
                    std::numeric_limits<T>::epsilon() * chain * refabs[e] + 1e-300)
              << "e=" << e << " got " << C[e] << " want " << ref[e];
          EXPECT_NEAR(G[e], ref[e], 1e-12 * refabs[e] + 1e-300) << "dacc e=" << e;
        }
      };
      for (const gpu::TallSkinnyTuning& tu : gpu::tall_skinny_tunings()) {
        dC.poison();
        dG.poison();
        gpu::gemm_atb_tall_skinny_tuned(tu, s.N, s.m, s.n, dA.get() + off[0], dB.get() + off[1],
                                        dC.get(), nullptr);
        gpu::gram_tall_skinny_tuned_async(tu, dA.get() + off[0], s.N, s.m, dB.get() + off[1], s.n,
                                          dG.get(), nullptr);
        check(gpu::tall_skinny_tuning_name(tu));
      }
      // The entry points (their own tuning choice, and the dot for 1 x 1).
      dC.poison();
      dG.poison();
      gpu::gemm_atb_tall_skinny(s.N, s.m, s.n, dA.get() + off[0], dB.get() + off[1], dC.get(),
                                nullptr);
      gpu::gram_tall_skinny_async(dA.get() + off[0], s.N, s.m, dB.get() + off[1], s.n, dG.get(),
                                  nullptr);
      check("default");
      // The host-result entry point (what Anderson calls): the same bound, deterministic.
      std::vector<double> G1(E, std::nan("")), G2(E);
      gpu::gram_tall_skinny(dA.get() + off[0], s.N, s.m, dB.get() + off[1], s.n, G1.data(),
                            nullptr);
      gpu::gram_tall_skinny(dA.get() + off[0], s.N, s.m, dB.get() + off[1], s.n, G2.data(),
                            nullptr);
      for (std::size_t e = 0; e < E; ++e)
        EXPECT_NEAR(G1[e], ref[e], 1e-12 * refabs[e] + 1e-300) << "host result e=" << e;
      if (E) {
        EXPECT_EQ(std::memcmp(G1.data(), G2.data(), E * sizeof(double)), 0);
      }
      if (E == 1) {  // column form: the dot path too; deterministic
        gpu::TallSkinnyColumns<T> ca, cb;
        ca.count = cb.count = 1;
        ca.cols[0] = dA.get() + off[0];
        cb.cols[0] = dB.get() + off[1];
        double g1 = std::nan(""), g2 = std::nan("");
        gpu::gram_tall_skinny(ca, cb, s.N, nullptr, &g1, nullptr);
        gpu::gram_tall_skinny(ca, cb, s.N, nullptr, &g2, nullptr);
        EXPECT_NEAR(g1, ref[0], 1e-12 * refabs[0] + 1e-300) << "columns N=" << s.N;
        EXPECT_EQ(std::memcmp(&g1, &g2, sizeof g1), 0);
      }
    }
  }
  std::vector<gpu::TallSkinnyTuning> all = gpu::tall_skinny_tunings();
  for (std::size_t i = 0; i < all.size(); ++i)
    for (std::size_t j = i + 1; j < all.size(); ++j)
      EXPECT_NE(gpu::tall_skinny_tuning_name(all[i]), gpu::tall_skinny_tuning_name(all[j]));
  DeviceArray<T> d(64);
  DeviceArray<T> c(4);
  EXPECT_THROW(gpu::gemm_atb_tall_skinny_tuned(gpu::TallSkinnyTuning{7, 9}, 16, 2, 2, d.get(),
                                               d.get(), c.get(), nullptr),
               std::invalid_argument);
}

// 1 x 1 masked (interior only): still the staged kernel, not the dot.
TYPED_TEST(CudaGemm, GramOneColumnMasked) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  heatsolve::GridDesc g;
  g.dims = 2;
  g.nx = 45;
  g.ny = 13;
  const std::int64_t N = static_cast<std::int64_t>(g.padded_size());
  const auto a = random_vector<T>(std::size_t(N), 41u), b = random_vector<T>(std::size_t(N), 42u);
  DeviceArray<T> da(a), db(b);
  double ref = 0;
  for (int j = 0; j < g.ny; ++j)
    for (int i = 0; i < g.nx; ++i) {
      const auto p = g.index(i, j, 0);
      ref += double(a[p]) * double(b[p]);
    }
  gpu::TallSkinnyColumns<T> ca, cb;
  ca.count = cb.count = 1;
  ca.cols[0] = da.get();
  cb.cols[0] = db.get();
  double got = std::nan("");
  gpu::gram_tall_skinny(ca, cb, N, &g, &got, nullptr);
  EXPECT_NEAR(got, ref, 1e-9);
}

}  // namespace

#endif  // HEATSOLVE_HAVE_CUDA
