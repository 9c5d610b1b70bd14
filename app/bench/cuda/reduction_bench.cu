#include <algorithm>
#include <cmath>
#include <cstring>
#include <cub/device/device_reduce.cuh>
#include <cuda/functional>
#include <cuda/std/functional>
#include <functional>
#include <limits>
#include <vector>

#include "kernels/reduction/cpu/reduction_cpu.hpp"
#include "app/bench/cuda/bench_util.cuh"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/reduction/cuda/reduction.cuh"
#include "app/bench/cuda/reduction_bench.hpp"

namespace heatsolve::cuda {

namespace {

struct SquareF {
  template <class T>
  __host__ __device__ T operator()(T x) const {
    return x * x;
  }
};
struct AbsF {
  template <class T>
  __host__ __device__ T operator()(T x) const {
    return x < T(0) ? -x : x;
  }
};

// CUB in the same run: Sum, and TransformReduce for sum of squares / max-abs.
template <class T>
class CubReducer {
 public:
  CubReducer(const T* in, std::size_t n, cudaStream_t s) : in_(in), n_(n), s_(s) {
    CUDA_CHECK(cudaMalloc(&out_, sizeof(T)));
    std::size_t a = 0, b = 0, c = 0;
    run_impl(ReduceOp::Sum, nullptr, a);
    run_impl(ReduceOp::SumSquares, nullptr, b);
    run_impl(ReduceOp::MaxAbs, nullptr, c);
    bytes_ = std::max({a, b, c, std::size_t(16)});
    CUDA_CHECK(cudaMalloc(&tmp_, bytes_));
  }
  ~CubReducer() {
    cudaFree(out_);
    cudaFree(tmp_);
  }
  void run(ReduceOp op) {
    std::size_t b = bytes_;
    run_impl(op, tmp_, b);
  }
  double result() {
    T h{};
    CUDA_CHECK(cudaMemcpyAsync(&h, out_, sizeof(T), cudaMemcpyDeviceToHost, s_));
    CUDA_CHECK(cudaStreamSynchronize(s_));
    return static_cast<double>(h);
  }

 private:
  void run_impl(ReduceOp op, void* tmp, std::size_t& bytes) {
    if (n_ < (std::size_t(1) << 31)) {
      dispatch(op, tmp, bytes, static_cast<int>(n_));
    } else {
      dispatch(op, tmp, bytes, n_);
    }
  }
  template <class N>
  void dispatch(ReduceOp op, void* tmp, std::size_t& bytes, N n) {
    switch (op) {
      case ReduceOp::Sum:
        CUDA_CHECK(cub::DeviceReduce::Sum(tmp, bytes, in_, out_, n, s_));
        break;
      case ReduceOp::SumSquares:
        CUDA_CHECK(cub::DeviceReduce::TransformReduce(tmp, bytes, in_, out_, n,
                                                      ::cuda::std::plus<>{}, SquareF{}, T(0), s_));
        break;
      case ReduceOp::MaxAbs:
        CUDA_CHECK(cub::DeviceReduce::TransformReduce(tmp, bytes, in_, out_, n, ::cuda::maximum<>{},
                                                      AbsF{}, T(0), s_));
        break;
    }
  }
  const T* in_;
  std::size_t n_;
  cudaStream_t s_;
  T* out_ = nullptr;
  void* tmp_ = nullptr;
  std::size_t bytes_ = 0;
};

double rel_err(double v, double ref) {
  return std::fabs(v - ref) / std::max(std::fabs(ref), 1e-300);
}

template <class T>
void bench_precision(std::size_t n, const std::string& prec, ReductionBenchResult& res) {
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DeviceBuffer<T> d(n);
  fill_uniform(d.get(), n, -1.0, 1.0, 12345u, s);
  std::vector<T> h(n);
  CUDA_CHECK(cudaMemcpyAsync(h.data(), d.get(), n * sizeof(T), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));

  ReductionWorkspace ws;
  CubReducer<T> cub_r(d.get(), n, s);
  const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::SumSquares, ReduceOp::MaxAbs};
  for (ReduceOp op : ops) {
    const double ref = cpu::reduce_flat(op, h.data(), n);
    double t_r1 = 0;
    auto add = [&](const std::string& kernel, double ms, double value, bool det) {
      ReductionBenchRow r;
      r.kernel = kernel;
      r.op = reduce_op_name(op);
      r.precision = prec;
      r.n = n;
      r.bytes = double(n) * sizeof(T);
      r.ms = ms;
      r.gbs = r.bytes / (ms * 1e6);
      r.pct_copy = 100.0 * r.gbs / res.copy_gbs;
      if (kernel == "r1_interleaved") t_r1 = ms;
      r.speedup_vs_r1 = t_r1 > 0 ? t_r1 / ms : 0;
      r.value = value;
      r.rel_err = rel_err(value, ref);
      r.deterministic = det;
      res.rows.push_back(r);
    };
    for (ReductionVariant v : all_reduction_variants()) {
      const double v1 = reduce(v, op, d.get(), n, s, &ws);
      const double v2 = reduce(v, op, d.get(), n, s, &ws);
      const double ms = time_median_ms([&] { reduce_async(v, op, d.get(), n, s, ws); }, s);
      add(reduction_variant_name(v), ms, v1, std::memcmp(&v1, &v2, sizeof v1) == 0);
    }
    // Every compiled r8 configuration in the same run ("r8_<threads>t_x<vectors per
    // thread>_g<grid cap>_<fused|2launch>"); r8_modern above is modern_config<T>(), so the
    // matching row here is a second sample of it (run-to-run noise).
    for (const ModernReductionConfig& c : modern_reduction_configs()) {
      const double v1 = reduce_modern(c, op, d.get(), n, s, &ws);
      const double v2 = reduce_modern(c, op, d.get(), n, s, &ws);
      const double ms = time_median_ms([&] { reduce_modern_async(c, op, d.get(), n, s, ws); }, s);
      add(modern_config_name(c), ms, v1, std::memcmp(&v1, &v2, sizeof v1) == 0);
    }
    cub_r.run(op);
    const double c1 = cub_r.result();
    cub_r.run(op);
    const double c2 = cub_r.result();
    const double ms = time_median_ms([&] { cub_r.run(op); }, s);
    add("cub", ms, c1, std::memcmp(&c1, &c2, sizeof c1) == 0);
  }

  // Solver norms on a padded 3D grid of about n cells (interior cells only; bytes count the
  // padded arrays read once).
  {
    const int side = std::max(3, static_cast<int>(std::cbrt(double(n))) - 2);
    GridDesc g;
    g.dims = 3;
    g.nx = g.ny = g.nz = side;
    g.hx = g.hy = g.hz = 1.0 / (side + 1);
    const std::size_t np = g.padded_size();
    DeviceBuffer<T> u(np), f(np);
    fill_uniform(u.get(), np, -1.0, 1.0, 777u, s);
    fill_uniform(f.get(), np, -1.0, 1.0, 778u, s);
    std::vector<T> hu(np), hf(np);
    CUDA_CHECK(cudaMemcpyAsync(hu.data(), u.get(), np * sizeof(T), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(hf.data(), f.get(), np * sizeof(T), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    struct Case {
      const char* name;
      int arrays;
      std::function<double()> sync;
      std::function<void()> async;
      std::function<double()> cpu;
    };
    const ReduceOp op = ReduceOp::SumSquares;
    const Case cases[] = {
        {"interior_r8", 1, [&] { return reduce_interior(op, u.get(), g, s, &ws); },
         [&] { reduce_interior_async(op, u.get(), g, s, ws); },
         [&] { return cpu::reduce_interior(op, hu.data(), g); }},
        {"diff_r8", 2, [&] { return reduce_diff_interior(op, u.get(), f.get(), g, s, &ws); },
         [&] { reduce_diff_interior_async(op, u.get(), f.get(), g, s, ws); },
         [&] { return cpu::reduce_diff_interior(op, hu.data(), hf.data(), g); }},
        {"residual_r8", 2,
         [&] { return reduce_residual_interior(op, u.get(), f.get(), g, s, &ws); },
         [&] { reduce_residual_interior_async(op, u.get(), f.get(), g, s, ws); },
         [&] { return cpu::reduce_residual_interior(op, hu.data(), hf.data(), g); }},
    };
    for (const Case& c : cases) {
      const double v1 = c.sync(), v2 = c.sync();
      const double ms = time_median_ms(c.async, s);
      ReductionBenchRow r;
      r.kernel = c.name;
      r.op = reduce_op_name(op);
      r.precision = prec;
      r.n = np;
      r.bytes = double(np) * sizeof(T) * c.arrays;
      r.ms = ms;
      r.gbs = r.bytes / (ms * 1e6);
      r.pct_copy = 100.0 * r.gbs / res.copy_gbs;
      r.value = v1;
      r.rel_err = rel_err(v1, c.cpu());
      r.deterministic = std::memcmp(&v1, &v2, sizeof v1) == 0;
      res.rows.push_back(r);
    }
  }
  CUDA_CHECK(cudaStreamDestroy(s));
}

}  // namespace

std::string cuda_device_name() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  return p.name;
}

double measure_copy_bandwidth(std::size_t bytes) {
  const std::size_t nvec = (bytes + 15) / 16;
  DeviceBuffer<uint4> in(nvec), out(nvec);
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_CHECK(cudaMemsetAsync(in.get(), 1, nvec * 16, s));
  const double ms = time_median_ms(
      [&] {
        bench_detail::copy_kernel<uint4><<<4096, 256, 0, s>>>(in.get(), out.get(), nvec);
        CUDA_CHECK_LAUNCH();
      },
      s);
  CUDA_CHECK(cudaStreamDestroy(s));
  return 2.0 * nvec * 16 / (ms * 1e6);
}

double measure_memcpy_bandwidth(std::size_t bytes) {
  DeviceBuffer<unsigned char> in(bytes), out(bytes);
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_CHECK(cudaMemsetAsync(in.get(), 1, bytes, s));
  const double ms = time_median_ms(
      [&] { CUDA_CHECK(cudaMemcpyAsync(out.get(), in.get(), bytes, cudaMemcpyDeviceToDevice, s)); },
      s);
  CUDA_CHECK(cudaStreamDestroy(s));
  return 2.0 * bytes / (ms * 1e6);
}

ReductionBenchResult run_reduction_benchmark(std::size_t n, const std::string& precision) {
  ReductionBenchResult res;
  res.device = cuda_device_name();
  const std::size_t elem = precision == "double" ? sizeof(double) : sizeof(float);
  res.copy_gbs = measure_copy_bandwidth(n * elem);
  res.memcpy_gbs = measure_memcpy_bandwidth(n * elem);
  if (precision == "double")
    bench_precision<double>(n, precision, res);
  else
    bench_precision<float>(n, precision, res);
  return res;
}

}  // namespace heatsolve::cuda
