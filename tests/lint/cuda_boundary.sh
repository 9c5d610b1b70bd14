#!/usr/bin/env bash
# Only kernels/ and app/bench/ see CUDA (docs/kernels.md, "Where things live"): everywhere else
# (app/, core/, io/, solvers/ and their tests) uses Backend and kernels/device.hpp, plain C++.
# Fails, listing the lines, when a file there includes a CUDA-only header (cuda_runtime*.h,
# cuda.h, cuBLAS, a .cuh, anything under a kernels/**/cuda/ folder) or calls the CUDA runtime
# or cuBLAS; and when kernels/ uses or links cuBLAS (only the GEMM bench in app/bench/ does).
# usage: cuda_boundary.sh <source dir>
set -uo pipefail
cd "$1" || exit 2

found=0
report() {  # report <what> <grep output>
  if [[ -n $2 ]]; then
    echo "$1:"
    echo "$2" | sed 's/^/  /'
    found=1
  fi
}

# C/C++ sources outside the CUDA side (CUDA sources, .cu, are CUDA side wherever they are).
mapfile -t files < <(find app core io solvers tests -type f \
  \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cc' \) \
  -not -path 'app/bench/*' -not -path 'tests/kernels/*' | sort)
[[ ${#files[@]} -gt 0 ]] || { echo "no sources found under $PWD"; exit 2; }

# Code lines only: // comments (whole-line or trailing) are dropped before matching. The regex
# goes to awk through the environment, which keeps its backslashes as they are.
code_lines() {  # code_lines <regex> <files...>
  local re=$1
  shift
  grep -nHE "$re" "$@" 2>/dev/null |
    RE=$re awk '{ l = $0; sub(/^[^:]*:[0-9]+:/, "", l); sub(/\/\/.*$/, "", l); if (l ~ ENVIRON["RE"]) print }'
}

report "CUDA-only headers included outside kernels/ and app/bench/" \
  "$(code_lines '#[[:space:]]*include[[:space:]]*[<"](cuda[a-z_]*\.h|cuda\.h|cublas[a-z_0-9]*\.h|[^">]*\.cuh|kernels/([^">]*/)?cuda/[^">]*)[">]' "${files[@]}")"
report "CUDA runtime or cuBLAS calls outside kernels/ and app/bench/" \
  "$(code_lines '(^|[^A-Za-z0-9_])(cuda|cublas)[A-Z][A-Za-z0-9_]*[[:space:]]*\(' "${files[@]}")"

mapfile -t kfiles < <(find kernels -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' \
  -o -name '*.cuh' \) | sort)
report "cuBLAS used in kernels/ (it belongs to the GEMM bench, app/bench/cuda/gemm_bench.cu)" \
  "$(code_lines '#[[:space:]]*include[[:space:]]*[<"]cublas|(^|[^A-Za-z0-9_])cublas[A-Z][A-Za-z0-9_]*[[:space:]]*\(' "${kfiles[@]}")"
report "cuBLAS linked into heatsolve_kernels (kernels/CMakeLists.txt)" \
  "$(grep -nH 'CUDA::cublas' kernels/CMakeLists.txt)"

if [[ $found -ne 0 ]]; then
  echo "FAIL: CUDA outside kernels/ and app/bench/ (put it behind Backend or kernels/device.hpp)"
  exit 1
fi
echo "ok: ${#files[@]} files outside kernels/ and app/bench/ are free of CUDA"
