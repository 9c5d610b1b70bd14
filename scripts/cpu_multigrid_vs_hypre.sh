#!/usr/bin/env bash
# CPU time to solution, heatsolve multigrid / mg-cg against HYPRE's Struct PFMG on the same
# problem (inputs/poisson_multigrid.yaml, tolerance 1e-8), measured in one run. Needs
# Debian's libhypre-dev (installed here if missing; HYPRE is not a heatsolve dependency).
# Run on an idle machine: OpenMP threads spin, and a loaded machine distorts both sides.
#   bash scripts/cpu_multigrid_vs_hypre.sh [build/cpu/app/heatsolve] [sizes...]
set -euo pipefail
cd "$(dirname "$0")/.."
HS=${1:-build/cpu/app/heatsolve}
shift || true
SIZES=${*:-64 128}
if [ ! -f /usr/include/hypre/HYPRE_struct_ls.h ]; then
  ${SUDO:-$([ "$(id -u)" -eq 0 ] || echo sudo)} apt-get install -y -q libhypre-dev >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -I/usr/include/hypre scripts/hypre_pfmg_bench.c -o "$work/pfmg" -lHYPRE -lm
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cores=$(nproc)
for n in $SIZES; do
  # method[:cycle[:precision]]: V-cycles, mg-cg, full multigrid, mixed precision.
  for v in multigrid mg-cg multigrid:fmg multigrid:v:mixed multigrid:fmg:mixed; do
    IFS=: read -r m cyc prec <<<"$v"
    OMP_NUM_THREADS=$cores "$HS" run inputs/poisson_multigrid.yaml -q --overwrite \
      --set grid.cells=["$n","$n","$n"] --set execution.backend=cpu --set solver.method=$m \
      --set solver.multigrid.cycle="${cyc:-v}" --set execution.precision="${prec:-double}" \
      --set output.directory="$work/$m" --set output.formats=[]
    /usr/bin/python3 - "$work/$m/summary.json" "$n" "$v" "$cores" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
m = s["multigrid"]
print(f"heatsolve {sys.argv[3]:20s} n={sys.argv[2]} threads={sys.argv[4]} iterations={s['iterations']} "
      f"rel_residual={s['final_residual']:.3e} setup={m['setup_seconds']:.4f} s "
      f"setup+solve={s['wall_seconds']:.4f} s")
PY
  done
  for relax in 1 2; do  # PFMG's weighted Jacobi (its default) and red/black Gauss-Seidel
    OMP_NUM_THREADS=1 mpirun -np "$cores" --oversubscribe "$work/pfmg" "$n" 1e-8 "$relax"
  done
done
