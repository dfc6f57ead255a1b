#!/usr/bin/env bash
# What `verify` costs over tcp: tutti-perf's allreduce on N tasks of this
# host over tcp alone (or -t, e.g. shm, whose slots and single copies
# checksum differently), with verify off, checksum and mac, the three runs
# interleaved R times; prints per size the median time (us) of each and
# the ratio of checksum and mac to off measured in the same rounds.
#
#   bench/verify_cost.sh [--build DIR] [-n TASKS] [-r ROUNDS] [-t TRANSPORT]
#                        [-- PERF ARGS]
#
# Default: build/, 2 tasks, 5 rounds, tcp, tutti-perf -b 8 -e 64M -f 8
# -n 50 -w 5.  A second build (--vs DIR) adds a column for its verify-off time,
# e.g. a checkout before a change.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build vs="" n=2 rounds=5 tp=tcp
perf_args=(-b 8 -e 64M -f 8 -n 50 -w 5)
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift ;;
    --vs) vs=$2; shift ;;
    -n) n=$2; shift ;;
    -r) rounds=$2; shift ;;
    -t) tp=$2; shift ;;
    --) shift; perf_args=("$@"); break ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/verify_cost.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # build mode -> "size time" lines
    TUTTI_TRANSPORTS=$tp TUTTI_VERIFY=$2 "$1/tools/tutti-run" -n "$n" \
        "$1/tools/tutti-perf" "${perf_args[@]}" 2>/dev/null |
        awk '$1 ~ /^[0-9]+$/ && $9 == 0 {print $1, $6}'
}
for r in $(seq "$rounds"); do
    for m in off checksum mac; do run "$build" $m >>"$tmp/$m"; done
    [ -z "$vs" ] || run "$vs" off >>"$tmp/vs"
done
median() { # file size -> median time
    awk -v s="$2" '$1 == s {print $2}' "$1" | sort -g |
        awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'
}
printf '%12s %10s %10s %10s %8s %8s%s\n' size off_us checksum_us mac_us \
    sum/off mac/off "${vs:+   vs_off_us  off/vs}"
for s in $(awk '{print $1}' "$tmp/off" | sort -gu); do
    o=$(median "$tmp/off" "$s") c=$(median "$tmp/checksum" "$s")
    m=$(median "$tmp/mac" "$s")
    line=$(awk -v s="$s" -v o="$o" -v c="$c" -v m="$m" 'BEGIN {
        printf "%12s %10.2f %10.2f %10.2f %8.2f %8.2f", s, o, c, m,
               c / o, m / o }')
    if [ -n "$vs" ]; then
        v=$(median "$tmp/vs" "$s")
        line+=$(awk -v o="$o" -v v="$v" 'BEGIN {printf " %11.2f %7.2f", v,
                o / v}')
    fi
    echo "$line"
done
