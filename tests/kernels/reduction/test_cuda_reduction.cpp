// CUDA reduction ladder: every rung, op and precision vs a long-double CPU reference on awkward
// sizes; exact integer data (any lost or doubled contribution changes the result); the
// warp-synchronous race detector for rung 5; determinism; the padded-grid solver norms vs the
// CPU equivalents. Skips itself without a CUDA device; compiles without CUDA.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/reduction/cpu/reduction_cpu.hpp"
#include "core/grid.hpp"
#ifdef HEATSOLVE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/reduction/cuda/reduction.cuh"
#endif

namespace {

using heatsolve::GridDesc;
using heatsolve::ReduceOp;

#define HS_SKIP_WITHOUT_GPU() \
  if (!heatsolve::cuda_device_available()) GTEST_SKIP() << "no CUDA device"

const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::SumSquares, ReduceOp::MaxAbs};

const char* op_name(ReduceOp op) {
  return op == ReduceOp::Sum ? "sum" : op == ReduceOp::SumSquares ? "sumsq" : "maxabs";
}

// Long-double reference; `scale` receives sum |transform(x)| (the error-bound scale).
template <class T>
long double reference(ReduceOp op, const T* x, std::size_t n, long double* scale = nullptr) {
  long double acc = 0, s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    switch (op) {
      case ReduceOp::Sum:
        acc += v;
        s += std::fabs(v);
        break;
      case ReduceOp::SumSquares:
        acc += v * v;
        s += v * v;
        break;
      case ReduceOp::MaxAbs:
        acc = std::max(acc, std::fabs(v));
        break;
    }
  }
  if (scale) *scale = s;
  return acc;
}

}  // namespace

#ifdef HEATSOLVE_HAVE_CUDA

namespace {

namespace gpu = heatsolve::cuda;
using gpu::ReductionVariant;

template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) : n_(n) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p_), std::max<std::size_t>(n, 1) * sizeof(T)),
              cudaSuccess);
  }
  explicit DeviceArray(const std::vector<T>& h) : DeviceArray(h.size()) { upload(h); }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void upload(const std::vector<T>& h) {
    EXPECT_EQ(cudaMemcpy(p_, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  T* get() const { return p_; }

 private:
  T* p_ = nullptr;
  std::size_t n_;
};

template <class T>
std::vector<T> random_vector(std::size_t n, double lo, double hi, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

template <class T>
std::vector<T> random_ints(std::size_t n, int lo, int hi, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

// Every flat reducer under test: the eight rungs (r8_modern = the solver's configuration) and
// each compiled configuration of the modern rung (what the bench times side by side).
template <class T>
struct Reducer {
  std::string name;
  bool modern;  // Sum / SumSquares accumulated in double
  std::function<double(ReduceOp, const T*, std::size_t)> run;
};

template <class T>
std::vector<Reducer<T>> all_reducers() {
  std::vector<Reducer<T>> r;
  for (ReductionVariant v : gpu::all_reduction_variants())
    r.push_back({gpu::reduction_variant_name(v), v == ReductionVariant::Modern,
                 [v](ReduceOp op, const T* d, std::size_t n) {
                   return gpu::reduce(v, op, d, n, nullptr);
                 }});
  for (const gpu::ModernReductionConfig& c : gpu::modern_reduction_configs())
    r.push_back({gpu::modern_config_name(c), true, [c](ReduceOp op, const T* d, std::size_t n) {
                   return gpu::reduce_modern(c, op, d, n, nullptr);
                 }});
  return r;
}

template <class T>
class CudaReduction : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaReduction, Precisions);

// Every rung x op on random data of awkward sizes, against long double.
TYPED_TEST(CudaReduction, EveryRungMatchesLongDoubleReference) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const std::size_t sizes[] = {1,   2,   31,  32,   33,    255,     256,
                               257, 511, 513, 1025, 65537, 1000003, (std::size_t(1) << 24) + 3};
  for (std::size_t n : sizes) {
    const auto h = random_vector<T>(n, -1.0, 1.0, static_cast<std::uint32_t>(n));
    DeviceArray<T> d(h);
    for (ReduceOp op : kOps) {
      long double scale = 0;
      const long double ref = reference(op, h.data(), n, &scale);
      for (const auto& red : all_reducers<T>()) {
        const double r = red.run(op, d.get(), n);
        SCOPED_TRACE(::testing::Message() << red.name << " " << op_name(op) << " n=" << n);
        if (op == ReduceOp::MaxAbs) {
          EXPECT_EQ(r, static_cast<double>(ref));  // max is exact
        } else {
          // Ladder rungs accumulate in T, the modern rung in double. Serial chains are at most
          // a few hundred adds long (rung 7's grid-stride loop), trees log2(n).
          const double eps = red.modern ? std::numeric_limits<double>::epsilon()
                                        : std::numeric_limits<T>::epsilon();
          const double tol = eps * static_cast<double>(scale) * (64.0 + double(n) / 16384.0);
          EXPECT_NEAR(r, static_cast<double>(ref), tol);
        }
      }
    }
  }
}

// Small integers: every partial sum is exact in T, so any lost, stale or doubled contribution
// (a race, a wrong bound, a missing tail element) changes the result exactly.
TYPED_TEST(CudaReduction, ExactOnIntegerData) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const std::size_t sizes[] = {1, 31, 64, 255, 513, 1025, 4097, 65537, (std::size_t(1) << 20) + 7};
  for (std::size_t n : sizes) {
    for (int pattern = 0; pattern < 2; ++pattern) {
      auto h = pattern == 0 ? random_ints<T>(n, 1, 3, 7u + n) : random_ints<T>(n, -3, 3, 9u + n);
      // A unique maximum |x| at a random position (and one of the ends).
      std::mt19937 rng(static_cast<std::uint32_t>(n));
      h[rng() % n] = T(-7);
      DeviceArray<T> d(h);
      for (ReduceOp op : kOps) {
        const double ref = static_cast<double>(reference(op, h.data(), n));
        for (const auto& red : all_reducers<T>()) {
          EXPECT_EQ(red.run(op, d.get(), n), ref)
              << red.name << " " << op_name(op) << " n=" << n << " pattern=" << pattern;
        }
      }
    }
  }
}

// The warp-synchronous detector: one-hot data. For every position p inside the first two
// blocks the sum must be exactly 1 and the max-abs exactly 1: a last-warp step that reads a
// neighbour's slot before it was written (the pre-Volta bug) loses the one for some p.
// Repeated over many launches, with a second value in another lane so stale reads also
// show up as wrong sums, not only as zeros.
TYPED_TEST(CudaReduction, WarpTailRaceDetectorOneHot) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const std::size_t n = 1024;
  std::vector<Reducer<T>> rungs;
  for (auto& red : all_reducers<T>())
    if (red.modern || red.name.rfind("r5", 0) == 0 || red.name.rfind("r6", 0) == 0 ||
        red.name.rfind("r7", 0) == 0)
      rungs.push_back(std::move(red));
  std::vector<T> h(n, T(0));
  DeviceArray<T> d(n);
  int failures = 0;
  for (std::size_t p = 0; p < n; ++p) {
    std::fill(h.begin(), h.end(), T(0));
    h[p] = T(1);
    h[(p * 7 + 3) % n] += T(2);
    d.upload(h);
    for (const auto& red : rungs) {
      const double s = red.run(ReduceOp::Sum, d.get(), n);
      const double m = red.run(ReduceOp::MaxAbs, d.get(), n);
      const double want_m = static_cast<double>(*std::max_element(h.begin(), h.end()));
      if (s != 3.0 || m != want_m) {
        ++failures;
        ADD_FAILURE() << red.name << " p=" << p << " sum=" << s << " max=" << m;
      }
      if (failures > 20) return;
    }
  }
}

// Small and quick: every rung and op once on exact data. The GPU script runs this one under
// compute-sanitizer racecheck/memcheck (expects zero hazards and errors).
TYPED_TEST(CudaReduction, SmallAllRungsForSanitizers) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const std::size_t n = 5003;
  const auto h = random_ints<T>(n, -3, 3, 17u);
  DeviceArray<T> d(h);
  for (ReduceOp op : kOps)
    for (const auto& red : all_reducers<T>())
      EXPECT_EQ(red.run(op, d.get() + 1, n - 1),
                static_cast<double>(reference(op, h.data() + 1, n - 1)))
          << red.name << " " << op_name(op);
  GridDesc g;
  g.dims = 3;
  g.nx = 13;
  g.ny = 7;
  g.nz = 5;
  const auto u = random_vector<T>(g.padded_size(), -1.0, 1.0, 18u);
  DeviceArray<T> du(u);
  EXPECT_NEAR(
      gpu::reduce_residual_interior<T>(ReduceOp::SumSquares, du.get(), nullptr, g, nullptr),
      heatsolve::cpu::reduce_residual_interior<T>(ReduceOp::SumSquares, u.data(), nullptr, g),
      1e-6);
}

// Negative control: the pre-Volta rung 5 (no volatile, no __syncwarp). Informational only --
// whether it goes wrong depends on the compiler and the hardware; compute-sanitizer racecheck
// (scripts/gpu_reduce_gemm.sh) reports its hazards, and the detector above would fail on it.
TYPED_TEST(CudaReduction, UnsafeRung5ControlInformational) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const std::size_t n = 1024;
  std::vector<T> h(n, T(0));
  DeviceArray<T> d(n);
  int wrong = 0;
  // HS_UNSAFE_POSITIONS limits the positions tried (the sanitizer run uses a few).
  const char* env = std::getenv("HS_UNSAFE_POSITIONS");
  const std::size_t positions = env ? std::min<std::size_t>(std::strtoul(env, nullptr, 10), n) : n;
  for (std::size_t p = 0; p < positions; ++p) {
    std::fill(h.begin(), h.end(), T(0));
    h[p] = T(1);
    d.upload(h);
    if (gpu::testing::reduce_r5_unsafe(ReduceOp::Sum, d.get(), n, nullptr) != 1.0) ++wrong;
  }
  std::printf("[ info ] unsafe rung 5: %d of %zu one-hot sums wrong\n", wrong, positions);
  this->RecordProperty("unsafe_rung5_wrong", wrong);
}

TYPED_TEST(CudaReduction, BitwiseDeterministic) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const std::size_t n = (std::size_t(1) << 24) + 3;
  const auto h = random_vector<T>(n, -1.0, 1.0, 4242u);
  DeviceArray<T> d(h);
  for (ReduceOp op : kOps)
    for (const auto& red : all_reducers<T>()) {
      const double a = red.run(op, d.get(), n);
      const double b = red.run(op, d.get(), n);
      EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0)
          << red.name << " " << op_name(op) << ": " << a << " vs " << b;
    }
  // The solver's rung is its configuration's kernel: bitwise the same as reduce_modern with
  // modern_config<T>() whenever that is one of the candidates.
  const gpu::ModernReductionConfig solver = gpu::modern_config<T>();
  for (const auto& c : gpu::modern_reduction_configs())
    if (c == solver)
      for (ReduceOp op : kOps) {
        const double a = gpu::reduce(ReductionVariant::Modern, op, d.get(), n, nullptr);
        const double b = gpu::reduce_modern(c, op, d.get(), n, nullptr);
        EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << op_name(op);
      }
}

TYPED_TEST(CudaReduction, MisalignedStartAndEdgeCases) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const std::size_t n = 100003;
  const auto h = random_ints<T>(n + 8, -3, 3, 55u);
  DeviceArray<T> d(h);
  for (std::size_t off = 0; off < 5; ++off)
    for (std::size_t len : {std::size_t(1), std::size_t(3), std::size_t(5), n}) {
      const double ref = static_cast<double>(reference(ReduceOp::Sum, h.data() + off, len));
      for (const auto& red : all_reducers<T>())
        EXPECT_EQ(red.run(ReduceOp::Sum, d.get() + off, len), ref)
            << red.name << " off=" << off << " len=" << len;
    }
  // Empty input: the identity.
  for (ReduceOp op : kOps) {
    EXPECT_EQ(gpu::reduce(ReductionVariant::Modern, op, d.get(), 0, nullptr), 0.0);
    for (const auto& c : gpu::modern_reduction_configs())
      EXPECT_EQ(gpu::reduce_modern(c, op, d.get(), 0, nullptr), 0.0) << gpu::modern_config_name(c);
  }
  // NaN propagates through max-abs in every rung.
  std::vector<T> hn(3000, T(1));
  hn[1234] = std::numeric_limits<T>::quiet_NaN();
  DeviceArray<T> dn(hn);
  for (const auto& red : all_reducers<T>())
    EXPECT_TRUE(std::isnan(red.run(ReduceOp::MaxAbs, dn.get(), hn.size()))) << red.name;
}

// Each modern configuration at a size that fills its grid cap with 1-2 tiles per block plus a
// partial tile and scalar head/tail (offset start): exact integer data, so any lost or doubled
// tile, partial or tail element shows. Called twice in a row and interleaved with a one-block
// size: the fused combine must re-arm its arrival counter every time.
TYPED_TEST(CudaReduction, ModernConfigsFullGridExact) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  constexpr std::size_t V = 16 / sizeof(T);
  for (const gpu::ModernReductionConfig& c : gpu::modern_reduction_configs()) {
    const std::size_t tile = std::size_t(c.block) * c.unroll * V;  // elements per tile
    const std::size_t n = tile * std::size_t(c.max_blocks) * 3 / 2 + tile / 3 + 2 * V + 1;
    const auto h = random_ints<T>(n + 1, -3, 3, 31u + static_cast<std::uint32_t>(c.max_blocks));
    DeviceArray<T> d(h);
    const std::size_t small = 77;
    for (ReduceOp op : kOps) {
      const double ref = static_cast<double>(reference(op, h.data() + 1, n));
      const double ref_small = static_cast<double>(reference(op, h.data() + 1, small));
      for (int rep = 0; rep < 2; ++rep) {
        EXPECT_EQ(gpu::reduce_modern(c, op, d.get() + 1, n, nullptr), ref)
            << gpu::modern_config_name(c) << " " << op_name(op) << " n=" << n << " rep " << rep;
        EXPECT_EQ(gpu::reduce_modern(c, op, d.get() + 1, small, nullptr), ref_small)
            << gpu::modern_config_name(c) << " " << op_name(op) << " small, rep " << rep;
      }
    }
  }
}

TYPED_TEST(CudaReduction, ModernConfigNamesAndUnknownConfig) {
  const auto configs = gpu::modern_reduction_configs();
  ASSERT_FALSE(configs.empty());
  for (std::size_t i = 0; i < configs.size(); ++i)
    for (std::size_t j = i + 1; j < configs.size(); ++j) {
      EXPECT_NE(configs[i], configs[j]);
      EXPECT_NE(gpu::modern_config_name(configs[i]), gpu::modern_config_name(configs[j]));
    }
  for (const auto& c : configs) EXPECT_LE(gpu::modern_config_name(c).size(), 28u);  // bench column
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  DeviceArray<T> d(16);
  EXPECT_THROW(gpu::reduce_modern(gpu::ModernReductionConfig{96, 3, 77, false}, ReduceOp::Sum,
                                  d.get(), 16, nullptr),
               std::invalid_argument);
}

TYPED_TEST(CudaReduction, VariantNamesRoundTrip) {
  for (ReductionVariant v : gpu::all_reduction_variants()) {
    ReductionVariant w{};
    ASSERT_TRUE(gpu::parse_reduction_variant(gpu::reduction_variant_name(v), &w));
    EXPECT_EQ(v, w);
  }
  ReductionVariant w{};
  EXPECT_FALSE(gpu::parse_reduction_variant("r9", &w));
}

// ---- Padded GridDesc fields -------------------------------------------------------------------
GridDesc make_grid(int dims, int nx, int ny, int nz) {
  GridDesc g;
  g.dims = dims;
  g.nx = nx;
  g.ny = ny;
  g.nz = dims == 3 ? nz : 1;
  g.hx = 1.0 / (nx + 1);
  g.hy = 0.7 / (ny + 1);
  g.hz = 1.3 / (g.nz + 1);
  return g;
}

bool is_ghost(const GridDesc& g, std::size_t p) {
  const std::size_t x = p % g.px(), row = p / g.px();
  const std::size_t y = row % g.py(), z = row / g.py();
  const bool in = x >= 1 && x <= std::size_t(g.nx) && y >= 1 && y <= std::size_t(g.ny) &&
                  (g.dims == 2 || (z >= 1 && z <= std::size_t(g.nz)));
  return !in;
}

TYPED_TEST(CudaReduction, GridNormsMatchCpu) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const GridDesc grids[] = {
      make_grid(3, 37, 23, 19), make_grid(3, 1, 1, 1),    make_grid(3, 5, 3, 2),
      make_grid(3, 300, 7, 5),  make_grid(3, 64, 64, 64), make_grid(2, 130, 7, 1),
      make_grid(2, 1, 1, 1),    make_grid(2, 257, 3, 1),  make_grid(2, 1000, 999, 1)};
  for (const GridDesc& g : grids) {
    const std::size_t np = g.padded_size();
    // Ghosts of a/b/f poisoned with huge values: a wrong mask shows at once. u's ghosts are
    // finite (the residual reads them) but large.
    auto a = random_vector<T>(np + 1, -1.0, 1.0, 1u + np);
    auto b = random_vector<T>(np + 1, -1.0, 1.0, 2u + np);
    auto f = random_vector<T>(np, -1.0, 1.0, 3u + np);
    auto u = random_vector<T>(np, -1.0, 1.0, 4u + np);
    for (std::size_t p = 0; p < np; ++p)
      if (is_ghost(g, p)) {
        a[p] = b[p] = f[p] = T(1e30);
        u[p] = T(50);
      }
    DeviceArray<T> da(a), db(b), df(f), du(u);
    for (ReduceOp op : kOps) {
      SCOPED_TRACE(::testing::Message() << op_name(op) << " grid " << g.dims << "D " << g.nx << "x"
                                        << g.ny << "x" << g.nz);
      auto close = [](double got, double want) {
        EXPECT_NEAR(got, want, 1e-9 * std::max(1.0, std::fabs(want)));
      };
      close(gpu::reduce_interior(op, da.get(), g, nullptr),
            heatsolve::cpu::reduce_interior(op, a.data(), g));
      close(gpu::reduce_diff_interior(op, da.get(), db.get(), g, nullptr),
            heatsolve::cpu::reduce_diff_interior(op, a.data(), b.data(), g));
      // b + 1: a different 16-byte phase from a -> the scalar-load path.
      close(gpu::reduce_diff_interior(op, da.get(), db.get() + 1, g, nullptr),
            heatsolve::cpu::reduce_diff_interior(op, a.data(), b.data() + 1, g));
      close(gpu::reduce_residual_interior(op, du.get(), df.get(), g, nullptr),
            heatsolve::cpu::reduce_residual_interior(op, u.data(), f.data(), g));
      close(gpu::reduce_residual_interior<T>(op, du.get(), nullptr, g, nullptr),
            heatsolve::cpu::reduce_residual_interior<T>(op, u.data(), nullptr, g));
      // Deterministic.
      const double r1 = gpu::reduce_residual_interior(op, du.get(), df.get(), g, nullptr);
      const double r2 = gpu::reduce_residual_interior(op, du.get(), df.get(), g, nullptr);
      EXPECT_EQ(std::memcmp(&r1, &r2, sizeof r1), 0);
    }
  }
}

TYPED_TEST(CudaReduction, AsyncWithOwnWorkspaceAndStream) {
  HS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const GridDesc g = make_grid(3, 40, 30, 20);
  const auto u = random_vector<T>(g.padded_size(), -2.0, 2.0, 99u);
  DeviceArray<T> du(u);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  {
    gpu::ReductionWorkspace ws;
    gpu::reduce_interior_async(ReduceOp::MaxAbs, du.get(), g, s, ws);
    double r = 0;
    ASSERT_EQ(cudaMemcpyAsync(&r, ws.d_result(), sizeof r, cudaMemcpyDeviceToHost, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(r, heatsolve::cpu::reduce_interior(ReduceOp::MaxAbs, u.data(), g));
  }
  cudaStreamDestroy(s);
}

}  // namespace

#endif  // HEATSOLVE_HAVE_CUDA

// CPU equivalents (run everywhere, also in CI without a GPU).
TEST(CpuReduction, FlatAndInteriorMatchLongDouble) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> x(100001);
  for (auto& v : x) v = d(rng);
  for (ReduceOp op : kOps) {
    long double scale = 0;
    const long double ref = reference(op, x.data(), x.size(), &scale);
    EXPECT_NEAR(heatsolve::cpu::reduce_flat(op, x.data(), x.size()), static_cast<double>(ref),
                1e-13 * static_cast<double>(scale) + 1e-300);
  }
  GridDesc g;
  g.dims = 2;
  g.nx = 3;
  g.ny = 2;
  std::vector<float> u(g.padded_size(), 100.0f);
  for (int j = 0; j < g.ny; ++j)
    for (int i = 0; i < g.nx; ++i) u[g.index(i, j, 0)] = static_cast<float>(i + 10 * j);
  EXPECT_EQ(heatsolve::cpu::reduce_interior(ReduceOp::Sum, u.data(), g), 0 + 1 + 2 + 10 + 11 + 12);
  EXPECT_EQ(heatsolve::cpu::reduce_interior(ReduceOp::MaxAbs, u.data(), g), 12.0);
  EXPECT_EQ(heatsolve::cpu::reduce_flat(ReduceOp::Sum, u.data(), 0), 0.0);
}
