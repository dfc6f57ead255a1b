#!/usr/bin/env bash
# Where one implementation of a collective stops being faster than another:
# median of R runs of tutti-perf for each, per size and group size, and the
# sizes where the faster one changes.  This is the benchmark that sets the
# size limits of the selection rules in conf/tutti.yaml.
#
#   bench/crossover.sh COLLECTIVE IMPL_A IMPL_B [BUILD_DIR] [RUNS]
#   e.g. bench/crossover.sh allreduce RecursiveDoublingAllreduce RingAllreduce
# Environment: PROCS="2 4", BEGIN=8, END=1M, FACTOR=4, ITERS=200,
# WARMUP=20, DTYPE=float32.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
coll=$1 a=$2 b=$3
top=$(cd "$(dirname "$0")/.." && pwd)
build=${4:-$top/build}
runs=${5:-3}
procs=${PROCS:-2 4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# Prints "size time_us wrong" for each row of one tutti-perf run.
perf() {
    "$build/tools/tutti-run" -n "$1" "$build/tools/tutti-perf" -c "$coll" \
        -a "$2" -d "${DTYPE:-float32}" -b "${BEGIN:-8}" -e "${END:-1M}" \
        -f "${FACTOR:-4}" -n "${ITERS:-200}" -w "${WARMUP:-20}" |
        awk '/^#.*time_us/ {for (i = 2; i <= NF; i++) col[$i] = i - 1}
             !/^#/ && NF > 0 {print $col["size"], $col["time_us"], $col["#wrong"]}'
}

for n in $procs; do
    for impl in "$a" "$b"; do
        : > "$tmp/$impl"
        for _ in $(seq "$runs"); do perf "$n" "$impl" >> "$tmp/$impl"; done
        if awk '$3 != 0 {bad=1} END {exit !bad}' "$tmp/$impl"; then
            echo "$impl: tutti-perf reported wrong elements" >&2; exit 1
        fi
    done
    printf '\n%s, %d members: median time_us of %d runs\n' "$coll" "$n" "$runs"
    printf '%12s %14s %14s  %s\n' bytes "$a" "$b" faster
    prev=""
    for s in $(awk '{print $1}' "$tmp/$a" | sort -gu); do
        ta=$(awk -v s="$s" '$1 == s {print $2}' "$tmp/$a" | median)
        tb=$(awk -v s="$s" '$1 == s {print $2}' "$tmp/$b" | median)
        f=$(awk -v x="$ta" -v y="$tb" -v a="$a" -v b="$b" \
            'BEGIN {print (x + 0 <= y + 0) ? a : b}')
        note=""
        [ -n "$prev" ] && [ "$f" != "$prev" ] && note="  <- crossover"
        printf '%12s %14s %14s  %s%s\n' "$s" "$ta" "$tb" "$f" "$note"
        prev=$f
    done
done
