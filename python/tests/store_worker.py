"""One task of a job that meets through a store written here (files in a
directory every task sees), started without any launcher:

    store_worker.py RANK SIZE DIR [--fail-get KEY] [--timeout S]

Joins with tutti.init(store, rank=, size=), allreduces and prints
"store: rank R: ok <values>", or "store: rank R: <ErrorName>: <message>"
and exits 1.
"""
import os
import sys
import time

import numpy as np

import tutti


def say(line):
    """One write per line: ranks' lines never interleave."""
    os.write(1, (line + "\n").encode())


class FileStore:
    """A key-value store over a shared directory: set() writes a file
    (renamed into place, so a reader never sees half of it), get() polls
    for it until the timeout."""

    def __init__(self, path, fail_get=None):
        self.path = path
        self.fail_get = fail_get

    def _file(self, key):
        return os.path.join(self.path, key.replace("/", "_"))

    def set(self, key, value):
        tmp = self._file(key) + ".%d.tmp" % os.getpid()
        with open(tmp, "wb") as f:
            f.write(value)
        os.rename(tmp, self._file(key))

    def get(self, key, timeout):
        if key == self.fail_get:
            raise ValueError("the store is down (as the test asked)")
        deadline = time.monotonic() + timeout
        while True:
            try:
                with open(self._file(key), "rb") as f:
                    return f.read()
            except FileNotFoundError:
                if time.monotonic() >= deadline:
                    return None
                time.sleep(0.005)


rank, size, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
fail_get = sys.argv[sys.argv.index("--fail-get") + 1] \
    if "--fail-get" in sys.argv else None
try:
    tutti.init(FileStore(path, fail_get), rank=rank, size=size)
    a = np.arange(4.0) + rank
    tutti.allreduce(a)
    say("store: rank %d: ok %s" % (rank, " ".join("%g" % v for v in a)))
    tutti.finalize()
except tutti.TuttiError as e:
    say("store: rank %d: %s: %s" % (rank, type(e).__name__, e))
    sys.exit(1)
