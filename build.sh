#!/usr/bin/env bash
# Tutti's set-up and entry points, as used by the README's quick start.
#
#   ./build.sh run [tutti-perf options]   set up, build, run the main job:
#                                         tutti-run -n 4 tutti-perf (allreduce sweep)
#   ./build.sh check                      set up, build, make the Python
#                                         virtual environment (.venv, or
#                                         TUTTI_VENV), run the whole suite
#   ./build.sh build                      set up and build only
#   ./build.sh deps                       install missing Debian packages only
#
# The build lives in ./build (TUTTI_BUILD_DIR overrides), configured with
# --enable-werror; extra configure flags come from TUTTI_CONFIGURE_FLAGS
# (for example --enable-sanitizers).
set -euo pipefail
cd "$(dirname "$0")"
top=$(pwd)
build_dir=${TUTTI_BUILD_DIR:-build}

# python3-dev and python3-venv: the Python package (python/), built and
# tested in a virtual environment python/venv.sh makes with pip.
# libucx-dev: the ucx transport module (configure builds it where found).
# gnuplot-nox: bench/plot, and its test (libopenmpi-dev: the peer run it
# plots beside ours).  groff-base and man-db: tests/unit/test_man renders
# every man page with groff and man -l (skipped without them).
packages=(gcc make autoconf automake libtool pkg-config libltdl-dev
          libyaml-dev libsodium-dev libcmocka-dev openmpi-bin libopenmpi-dev iproute2
          libucx-dev
          util-linux gnuplot-nox groff-base man-db python3-dev python3-venv)

deps() {
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "build.sh: installing missing packages: ${missing[*]}"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || {
            echo "build.sh: need root or sudo to install: ${missing[*]}" >&2
            exit 1
        }
        sudo=sudo
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
}

build() {
    [ -x "$top/configure" ] || (cd "$top" && autoreconf -fi)
    if [ ! -f "$build_dir/Makefile" ]; then
        mkdir -p "$build_dir"
        (cd "$build_dir" && "$top/configure" --enable-werror \
            ${TUTTI_CONFIGURE_FLAGS:-})
    fi
    make -C "$build_dir" -j"$(nproc)"
}

cmd=${1:-run}
[ $# -gt 0 ] && shift
case "$cmd" in
    deps) deps ;;
    build) deps; build ;;
    run)
        deps; build
        exec "$build_dir/tools/tutti-run" -n 4 "$build_dir/tools/tutti-perf" \
            -c allreduce -b 8 -e 64M -f 2 "$@" ;;
    check)
        deps; build
        "$top/python/venv.sh" "${TUTTI_VENV:-$top/.venv}"
        exec "$top/tests/run-suite" "$build_dir" ;;
    *) echo "usage: ./build.sh run|check|build|deps" >&2; exit 2 ;;
esac
