// Times every stencil variant on random device fields with CUDA events (warm-up, median of
// repeats), next to a device-to-device copy of the same arrays measured in the same run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "app/bench/cuda/stencil_bench.hpp"
#include "kernels/cuda/cuda_array.cuh"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/device.hpp"
#include "kernels/stencil/cuda/stencil_launch.cuh"
#include "kernels/stencil/cuda/temporal_launch.cuh"

namespace heatsolve {

namespace {

// Copy with 16-byte accesses and several independent loads in flight per thread.
__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out,
                            std::size_t n4) {
  constexpr int U = 4;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  for (; t + (U - 1) * stride < n4; t += U * stride) {
    float4 v[U];
#pragma unroll
    for (int q = 0; q < U; ++q) v[q] = __ldg(in + t + q * stride);
#pragma unroll
    for (int q = 0; q < U; ++q) out[t + q * stride] = v[q];
  }
  for (; t < n4; t += stride) out[t] = in[t];
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (double(v[n / 2 - 1]) + v[n / 2]);
}

class Timer {
 public:
  Timer() {
    CUDA_CHECK(cudaEventCreate(&a_));
    CUDA_CHECK(cudaEventCreate(&b_));
  }
  ~Timer() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  // ms of one call of fn: burst (sustain_s = 0) or sustained (StencilBenchOptions::sustain_s).
  template <typename Fn>
  double ms_per_call(const StencilBenchOptions& o, Fn&& fn) {
    return o.sustain_s > 0 ? sustained_ms(o.sustain_s, fn) : median_ms(o.warmup, o.repeats, fn);
  }

  // Median ms of one call of fn over `repeats`, after `warmup` calls.
  template <typename Fn>
  double median_ms(int warmup, int repeats, Fn&& fn) {
    for (int w = 0; w < warmup; ++w) fn();
    std::vector<float> t;
    for (int r = 0; r < repeats; ++r) {
      CUDA_CHECK(cudaEventRecord(a_));
      fn();
      CUDA_CHECK(cudaEventRecord(b_));
      CUDA_CHECK(cudaEventSynchronize(b_));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
      t.push_back(ms);
    }
    return median(t);
  }

  // Calls fn back to back for `seconds` untimed (each call synchronised, so host time is GPU
  // time), then as many calls as took `seconds` there, queued back to back between two events:
  // the mean ms per call once the board's power and clocks have settled under this load.
  template <typename Fn>
  double sustained_ms(double seconds, Fn&& fn) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    long calls = 0;
    double elapsed = 0;
    do {
      fn();
      CUDA_CHECK(cudaEventRecord(b_));
      CUDA_CHECK(cudaEventSynchronize(b_));
      ++calls;
      elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    } while (elapsed < seconds);
    const long timed = std::max(1L, long(std::ceil(calls * seconds / elapsed)));
    CUDA_CHECK(cudaEventRecord(a_));
    for (long i = 0; i < timed; ++i) fn();
    CUDA_CHECK(cudaEventRecord(b_));
    CUDA_CHECK(cudaEventSynchronize(b_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
    return double(ms) / double(timed);
  }

 private:
  cudaEvent_t a_, b_;
};

template <typename T>
std::vector<StencilBenchRow> run(const StencilBenchOptions& o) {
  for (const std::string& name : o.variants) {
    if (name != kKernelTemporal && !parse_stencil_variant(name)) {
      std::string list;
      for (const StencilVariantRow& row : kStencilVariants) list += std::string(row.name) + ", ";
      throw std::invalid_argument("unknown stencil variant '" + name + "' (known: " + list +
                                  kKernelTemporal + ")");
    }
  }
  if (device::count() == 0) throw std::runtime_error("no CUDA device available");
  GridDesc g;
  g.dims = o.dims;
  g.nx = g.ny = o.size;
  g.nz = o.dims == 3 ? o.size : 1;
  g.hx = g.hy = g.hz = 1.0 / o.size;
  const std::size_t n = g.padded_size();
  const int steps = std::max(1, o.steps);

  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));

  cuda::CudaBuffer<T> a(n), b(n), f(o.with_source ? n : 0);
  cuda::fill_random_device<T>(a.get(), n, 1, -1.0, 1.0, nullptr);
  cuda::fill_random_device<T>(b.get(), n, 2, -1.0, 1.0, nullptr);
  if (o.with_source) cuda::fill_random_device<T>(f.get(), n, 3, -1.0, 1.0, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());

  Timer timer;
  // Copy bandwidth over the same arrays (bytes read + written).
  const double copy_bytes = 2.0 * double(n) * sizeof(T);
  const std::size_t n4 = n * sizeof(T) / sizeof(float4);
  const int copy_blocks = prop.multiProcessorCount * 8;
  const double copy_ms = timer.ms_per_call(o, [&] {
    for (int s = 0; s < steps; ++s) {
      const bool even = s % 2 == 0;
      copy_kernel<<<copy_blocks, 256>>>(reinterpret_cast<const float4*>(even ? a.get() : b.get()),
                                        reinterpret_cast<float4*>(even ? b.get() : a.get()), n4);
      CUDA_CHECK_LAUNCH();
    }
  }) / steps;
  const double memcpy_ms = timer.ms_per_call(o, [&] {
    for (int s = 0; s < steps; ++s) {
      const bool even = s % 2 == 0;
      CUDA_CHECK(cudaMemcpyAsync(even ? b.get() : a.get(), even ? a.get() : b.get(), n * sizeof(T),
                                 cudaMemcpyDeviceToDevice));
    }
  }) / steps;
  const double copy_gbs = copy_bytes / copy_ms * 1e-6;
  const double memcpy_gbs = copy_bytes / memcpy_ms * 1e-6;

  StencilCoeffs<T> c;  // a stable heat step
  c.center = T(1 - 2 * o.dims * 0.15);
  c.cx = c.cy = c.cz = T(0.15);
  c.source = T(0.01);

  std::vector<StencilBenchRow> rows;
  const double points = double(g.interior_size());
  double naive_ms = 0;
  for (StencilVariant v : kAllStencilVariants) {
    if (!o.variants.empty() && std::find(o.variants.begin(), o.variants.end(),
                                         stencil_variant_name(v)) == o.variants.end())
      continue;
    if (!stencil_variant_supported(v)) continue;  // 2.5d-tma below sm_90
    std::vector<StencilShape> shapes = compiled_stencil_shapes(v, o.dims, int(sizeof(T)));
    if (!o.all_shapes) shapes.resize(std::min<std::size_t>(shapes.size(), 1));
    // Streaming variants: each timed shape at each chunk too.
    if (stencil_variant_row(v).streaming && !o.chunks.empty()) {
      std::vector<StencilShape> with_chunks;
      for (const StencilShape& shape : shapes) {
        with_chunks.push_back(shape);
        for (int chunk : o.chunks) {
          StencilShape s = shape;
          s.bz = chunk;
          with_chunks.push_back(s);
        }
      }
      shapes = with_chunks;
    }
    for (std::size_t si = 0; si < shapes.size(); ++si) {
      const StencilShape& shape = shapes[si];
      const double ms = timer.ms_per_call(o, [&] {
        for (int s = 0; s < steps; ++s) {
          const bool even = s % 2 == 0;
          cuda::launch_stencil<T>(v, shape, even ? a.get() : b.get(), even ? b.get() : a.get(),
                                  o.with_source ? f.get() : nullptr, g, c, nullptr);
        }
      }) / steps;
      StencilBenchRow r;
      r.variant = stencil_variant_name(v);
      r.shape = shape.str();
      r.is_default = si == 0;
      r.ms_per_step = ms;
      r.gpoints_per_s = points / ms * 1e-6;
      r.effective_gbs = 2.0 * points * sizeof(T) / ms * 1e-6;
      r.pct_of_copy = 100.0 * r.effective_gbs / copy_gbs;
      if (v == StencilVariant::Naive && si == 0) naive_ms = ms;
      r.device = prop.name;
      r.copy_gbs = copy_gbs;
      r.memcpy_gbs = memcpy_gbs;
      r.sustain_s = o.sustain_s;
      r.size = o.size;
      r.dims = o.dims;
      r.precision = o.precision;
      rows.push_back(r);
    }
  }
  // Temporal blocking: passes of k fused steps (Dirichlet faces, ghost rules in the pass).
  if (o.variants.empty() ||
      std::find(o.variants.begin(), o.variants.end(), kKernelTemporal) != o.variants.end()) {
    std::vector<cuda::TemporalShape> shapes;  // to time; defaults[i]: shape i is its k's default
    std::vector<bool> defaults;
    for (const cuda::TemporalShape& shape : cuda::temporal_shapes<T>(o.dims)) {
      const bool is_default =
          std::none_of(shapes.begin(), shapes.end(),
                       [&](const cuda::TemporalShape& s) { return s.k == shape.k; });
      if (!o.all_shapes && !is_default) continue;
      shapes.push_back(shape);
      defaults.push_back(is_default);
      if (shape.design != cuda::TemporalDesign::Rings) {  // what its memory traffic costs
        cuda::TemporalShape twin = shape;
        twin.memory_only = true;
        shapes.push_back(twin);
        defaults.push_back(false);
      }
      for (int chunk : o.chunks) {
        cuda::TemporalShape s = shape;
        s.chunk = chunk;
        shapes.push_back(s);
        defaults.push_back(false);
      }
    }
    BoundaryFaces bc{};
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const cuda::TemporalShape& shape = shapes[i];
      const bool is_default = defaults[i];
      const double ms = timer.ms_per_call(o, [&] {
        for (int s = 0; s < steps; ++s) {
          const bool even = s % 2 == 0;
          cuda::launch_temporal<T>(shape, even ? a.get() : b.get(), even ? b.get() : a.get(),
                                   o.with_source ? f.get() : nullptr, g, c, bc, nullptr);
        }
      }) / (double(steps) * shape.k);
      StencilBenchRow r;
      r.variant = std::string(kKernelTemporal) + (shape.memory_only ? "-memory" : "");
      r.shape = shape.str();
      r.is_default = is_default;
      r.steps_per_pass = shape.k;
      r.ms_per_step = ms;
      r.gpoints_per_s = points / ms * 1e-6;
      r.effective_gbs = 2.0 * points * sizeof(T) / ms * 1e-6;
      r.pct_of_copy = 100.0 * r.effective_gbs / copy_gbs;
      r.device = prop.name;
      r.copy_gbs = copy_gbs;
      r.memcpy_gbs = memcpy_gbs;
      r.sustain_s = o.sustain_s;
      r.size = o.size;
      r.dims = o.dims;
      r.precision = o.precision;
      rows.push_back(r);
    }
  }
  for (StencilBenchRow& r : rows) {
    r.speedup_vs_naive = naive_ms > 0 ? naive_ms / r.ms_per_step : 0;
    r.x_roofline = r.pct_of_copy / 100.0;
  }
  return rows;
}

}  // namespace

std::vector<StencilBenchRow> bench_stencils(const StencilBenchOptions& o) {
  if (o.dims != 2 && o.dims != 3) throw std::invalid_argument("bench: dims must be 2 or 3");
  if (o.size < 1) throw std::invalid_argument("bench: size must be positive");
  if (o.repeats < 1) throw std::invalid_argument("bench: repeats must be positive");
  if (!(o.sustain_s >= 0) || o.sustain_s > 600)
    throw std::invalid_argument("bench: sustain must be between 0 and 600 seconds");
  if (o.precision == "float") return run<float>(o);
  if (o.precision == "double") return run<double>(o);
  throw std::invalid_argument("bench: precision must be float or double");
}

}  // namespace heatsolve
