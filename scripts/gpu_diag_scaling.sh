set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=4
cmake --preset gpu-machine >/dev/null 2>&1 && cmake --build --preset gpu-machine -j 32 --target heatsolve >/dev/null 2>&1 || { echo build failed; exit 1; }
HS=build/gpu-machine/app/heatsolve
(nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader -lms 300 > $OUT/smi.log) & SMI=$!
for ov in true false; do
for np in 1 2; do
 mpirun -np $np --bind-to none $HS run inputs/bench512.yaml --set output.directory=/tmp/d$np$ov --set "grid.cells=[512,512,$((512*np))]" --set "execution.decomposition=[1,1,$np]" --set time.steps=2000 --set execution.overlap=$ov 2>&1 | grep -E "rank|done"
done; done
kill $SMI
sort $OUT/smi.log | uniq -c | sort -rn | head -12
