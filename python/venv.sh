#!/usr/bin/env bash
# Makes the project's Python virtual environment (default ./.venv, or the
# directory given) with what the package's tests and benchmarks need:
# numpy, pytest, build, wheel, setuptools and torch (PyPI's wheel, which
# runs without a GPU; about 5 GB with its CUDA libraries), from PyPI
# through pip (pip's cache kept).  Made with the system's python3 (Debian's, with its headers
# from python3-dev); an existing environment only gets what it lacks.
#
#   python/venv.sh [VENV] [EXTRA PACKAGES...]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${TUTTI_VENV:-$top/.venv}}
[ $# -gt 0 ] && shift
python=${TUTTI_PYTHON:-/usr/bin/python3}
[ -x "$python" ] || python=$(command -v python3)
if [ ! -x "$venv/bin/python" ]; then
    echo "venv.sh: making $venv with $python"
    "$python" -m venv "$venv"
fi
need=(numpy pytest build wheel "setuptools>=61" torch "$@")
missing=()
for p in "${need[@]}"; do
    name=${p%%[<>=]*}
    "$venv/bin/python" -m pip show -q "$name" >/dev/null 2>&1 \
        || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "venv.sh: installing ${missing[*]} into $venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        "${missing[@]}"
fi
