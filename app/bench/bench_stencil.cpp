#include <fmt/core.h>

#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "app/bench/bench.hpp"
#include "app/bench/bench_variable.hpp"

namespace heatsolve {

int run_stencil_bench(const StencilBenchOptions& o, bool json) {
#ifndef HEATSOLVE_HAVE_CUDA
  (void)o;
  (void)json;
  fmt::print(stderr,
             "heatsolve bench: this build has no CUDA backend (configure with a CUDA compiler "
             "and HEATSOLVE_ENABLE_CUDA=AUTO|ON)\n");
  return 1;
#else
  try {
    const int size = o.size, dims = o.dims;
    const std::string& precision = o.precision;
    const std::vector<StencilBenchRow> rows = bench_stencils(o);
    if (rows.empty()) {
      fmt::print(stderr, "heatsolve bench: no variant ran\n");
      return 1;
    }
    const StencilBenchRow& r0 = rows.front();
    const std::vector<VariableBenchRow> variable =
        bench_variable(BackendKind::Cuda, size, dims, precision, r0.copy_gbs);
    if (json) {
      nlohmann::json j;
      j["device"] = r0.device;
      j["size"] = size;
      j["dims"] = dims;
      j["precision"] = precision;
      j["copy_gbs"] = r0.copy_gbs;
      j["memcpy_gbs"] = r0.memcpy_gbs;
      j["sustain_s"] = r0.sustain_s;
      j["rows"] = nlohmann::json::array();
      for (const StencilBenchRow& r : rows)
        j["rows"].push_back({{"variant", r.variant},
                             {"shape", r.shape},
                             {"is_default", r.is_default},
                             {"ms_per_step", r.ms_per_step},
                             {"gpoints_per_s", r.gpoints_per_s},
                             {"effective_gbs", r.effective_gbs},
                             {"pct_of_copy", r.pct_of_copy},
                             {"steps_per_pass", r.steps_per_pass},
                             {"x_roofline", r.x_roofline},
                             {"speedup_vs_naive", r.speedup_vs_naive}});
      j["variable_rows"] = variable_rows_json(variable);
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("stencil bench: {}, {}^{} {} ({} interior points)\n", r0.device, size, dims,
               precision, dims == 3 ? double(size) * size * size : double(size) * size);
    if (r0.sustain_s > 0)
      fmt::print("timing: sustained, each measurement {:g} s untimed then {:g} s timed\n",
                 r0.sustain_s, r0.sustain_s);
    else
      fmt::print("timing: burst, median of short repeats (--sustain S: a long run's rate)\n");
    fmt::print("copy bandwidth (read+write): kernel {:.0f} GB/s, cudaMemcpy {:.0f} GB/s\n",
               r0.copy_gbs, r0.memcpy_gbs);
    fmt::print("single-step roofline (copy / {} B per point): {:.1f} GPt/s\n",
               2 * (precision == "double" ? 8 : 4),
               r0.copy_gbs / (2.0 * (precision == "double" ? 8 : 4)));
    fmt::print("{:<18} {:<32} {:>9} {:>9} {:>9} {:>7} {:>8} {:>7}\n", "variant", "shape", "ms/step",
               "GPt/s", "GB/s", "%copy", "speedup", "xroof");
    for (const StencilBenchRow& r : rows) {
      // No speedup without a naive row (--variants without naive).
      const std::string speedup =
          r.speedup_vs_naive > 0 ? fmt::format("{:.2f}x", r.speedup_vs_naive) : "-";
      fmt::print("{:<18} {:<30} {} {:>9.4f} {:>9.2f} {:>9.0f} {:>6.1f}% {:>8} {:>6.2f}x\n",
                 r.variant, r.shape, r.is_default ? '*' : ' ', r.ms_per_step, r.gpoints_per_s,
                 r.effective_gbs, r.pct_of_copy, speedup, r.x_roofline);
    }
    fmt::print(
        "(* = the variant's default shape; temporal rows: k steps per pass, per-step figures "
        "count all k steps; temporal-memory: the same pass's loads, edge rows, barriers and "
        "stores without the arithmetic, at the same blocks per SM: what its memory traffic "
        "alone costs)\n");
    print_variable_rows(variable);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "heatsolve bench: {}\n", e.what());
    return 1;
  }
#endif
}

}  // namespace heatsolve
