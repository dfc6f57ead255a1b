#!/usr/bin/env bash
# Median of R runs of float32 sum allreduce at a few sizes, for Tutti
# (tutti-run + tutti-perf) and, where mpicc and mpirun exist, Open MPI
# (bench/mpi_allreduce.c) measured in the same run.  Prints one line per
# (procs, size): median time_us and busbw for each, and the busbw ratio.
#
#   bench/allreduce-vs-mpi.sh [BUILD_DIR] [RUNS]      (defaults: build 3)
# Environment: PROCS="2 4", SIZES="8 1048576 67108864", ITERS=20, WARMUP=5.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
runs=${2:-3}
procs=${PROCS:-2 4}
sizes=${SIZES:-8 1048576 67108864}
iters=${ITERS:-20}
warmup=${WARMUP:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

have_mpi=0
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
    mpicc -O2 -o "$tmp/mpi_allreduce" "$top/bench/mpi_allreduce.c" && have_mpi=1
fi
mpirun_flags=(--oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && mpirun_flags+=(--allow-run-as-root)

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

printf '%-5s %10s | %12s %12s | %12s %12s | %s\n' procs bytes tutti_us \
    tutti_busbw mpi_us mpi_busbw "busbw tutti/mpi"
for n in $procs; do
    for s in $sizes; do
        : > "$tmp/t"; : > "$tmp/m"
        for _ in $(seq "$runs"); do
            "$build/tools/tutti-run" -n "$n" "$build/tools/tutti-perf" -b "$s" \
                -e "$s" -n "$iters" -w "$warmup" | awk '!/^#/ {print $6, $8, $9}' >> "$tmp/t"
            if [ $have_mpi = 1 ]; then
                mpirun "${mpirun_flags[@]}" -n "$n" "$tmp/mpi_allreduce" "$s" \
                    "$iters" "$warmup" 2>/dev/null | awk '{print $2, $3}' >> "$tmp/m"
            fi
        done
        if awk '$3 != 0 {bad=1} END {exit !bad}' "$tmp/t"; then
            echo "tutti-perf reported wrong elements" >&2; exit 1
        fi
        tt=$(cut -d' ' -f1 "$tmp/t" | median); tb=$(cut -d' ' -f2 "$tmp/t" | median)
        mt=-; mb=-; ratio=-
        if [ $have_mpi = 1 ]; then
            mt=$(cut -d' ' -f1 "$tmp/m" | median); mb=$(cut -d' ' -f2 "$tmp/m" | median)
            ratio=$(awk -v a="$tb" -v b="$mb" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}')
        fi
        printf '%-5s %10s | %12s %12s | %12s %12s | %s\n' "$n" "$s" "$tt" "$tb" \
            "$mt" "$mb" "$ratio"
    done
done
