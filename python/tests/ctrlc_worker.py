"""Ctrl-C during a wait, two ranks.  Rank 0 blocks in an allreduce rank 1
never calls and writes its pid to $TUTTI_TEST_PID_FILE; the test sends it
SIGINT.  Rank 0 must raise KeyboardInterrupt, its group then refusing calls
with ERR_ABORTED; rank 1, blocked in another group's allreduce rank 0
never calls, must fail with ERR_ABORTED naming rank 0's interruption.
Each prints "ctrlc: rank R: <what happened>".
"""
import os
import sys

import numpy as np

import tutti


def say(line):
    """One write per line: ranks' lines never interleave."""
    os.write(1, (line + "\n").encode())

g = tutti.init()
rank = g.rank
other = g.context.join(7)
tutti.barrier()
if rank == 0:
    path = os.environ["TUTTI_TEST_PID_FILE"]
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(path + ".tmp", path)
    try:
        tutti.allreduce(np.ones(4), timeout=120)
        say("ctrlc: rank 0: returned")
    except KeyboardInterrupt:
        say("ctrlc: rank 0: KeyboardInterrupt, aborted %s"
            % g.context.aborted)
    try:
        tutti.allreduce(np.ones(4), timeout=5)
        say("ctrlc: rank 0: later call returned")
    except tutti.TuttiError as e:
        say("ctrlc: rank 0: later call %s" % e.name)
else:
    try:
        other.allreduce(np.ones(4), timeout=120)
        say("ctrlc: rank 1: returned")
    except tutti.TuttiError as e:
        say("ctrlc: rank 1: %s: %s" % (e.name, e.detail))
sys.stdout.flush()
os._exit(0)
