#!/usr/bin/env bash
# Instructions per warm small call: bench/warm_calls.c between 2 processes
# of this host (shm), under valgrind's callgrind, counting only the library
# calls (tutti_execute, tutti_request_wait, tutti_request_free) of N calls
# after 1000 warm-up calls, in lock step (the ranks take turns through a
# shared page, so neither spins inside the library waiting for the other:
# the count is the library's own work, repeatable to 0.5%).  Prints per
# collective and rank the instructions per call (the loop's own 47 or so
# included) and the top functions by inclusive count.
#
#   bench/instr_count.sh [--build DIR] [--calls N] [--top K] [COLL...]
#
# COLL: allreduce (8 B float32, the default selection), broadcast (8 B
# from rank 0), zero (an allreduce of 0 elements); default allreduce and
# broadcast.  Needs valgrind (apt-get install valgrind).
set -euo pipefail
top_dir=$(cd "$(dirname "$0")/.." && pwd)
build=$top_dir/build calls=20000 topk=12 colls=()
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift ;;
    --calls) calls=$2; shift ;;
    --top) topk=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench/instr_count.sh: unknown option '$1'" >&2; exit 2 ;;
    *) colls+=("$1") ;;
    esac
    shift
done
[ ${#colls[@]} -gt 0 ] || colls=(allreduce broadcast)
command -v valgrind >/dev/null || {
    echo "bench/instr_count.sh: needs valgrind (apt-get install valgrind)" >&2
    exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -g -Wall -Wextra -I"$top_dir/include" -o "$tmp/warm_calls" \
    "$top_dir/bench/warm_calls.c" -L"$build/core/.libs" -ltutti \
    -Wl,-rpath,"$build/core/.libs"
for coll in "${colls[@]}"; do
    "$build/tools/tutti-run" -n 2 valgrind -q --tool=callgrind \
        --collect-atstart=no \
        --callgrind-out-file="$tmp/$coll.%q{TUTTI_RANK}.out" \
        "$tmp/warm_calls" "$coll" "$calls" sync >/dev/null
    for r in 0 1; do
        f=$tmp/$coll.$r.out
        ir=$(callgrind_annotate "$f" 2>/dev/null |
             awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
        awk -v c="$coll" -v r="$r" -v ir="$ir" -v n="$calls" \
            'BEGIN {printf "%s rank %d: %.1f instructions per call\n", c, r, ir / n}'
        # The library's and the modules' functions (each once: callgrind
        # lists a function by its file and again by its object).
        callgrind_annotate --inclusive=yes --auto=no "$f" 2>/dev/null |
            awk -v n="$calls" -v k="$topk" '
                /^[ ]*[0-9,]+ / && /\[.*(libtutti|alg_|tp_)[^]]*\]$/ && c < k {
                    v = $1; gsub(",", "", v)
                    name = $0; sub(/^.*:/, "", name); sub(/ \[.*$/, "", name)
                    printf "    %8.1f %s\n", v / n, name; c++ }'
    done
done
