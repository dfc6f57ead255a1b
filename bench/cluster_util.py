# bench/cluster's common ground: its names and limits (the prefix of what
# it makes, the interface, the warm-up), the exceptions that end a run,
# its note and warning lines, running a command (also inside a host's
# namespace, on the host's CPUs), the processes it started and their
# killing, and size and rate formatting.  The executable bench/cluster
# sets SCRIPT and CPUS_PER_HOST before it runs anything.
import os
import signal
import subprocess
import sys
import time

PROG = "bench/cluster"
# The executable bench/cluster: its header is the --help text, the
# helpers of the rate and latency checks run as python3 SCRIPT --helper,
# and bench/mpi_coll.c lies beside it.
SCRIPT = None
PREFIX = "tcb%d" % os.getpid()
IFNAME = "eth0"
WARMUP = 5

SELECTION = "(selection)"
OMPI = "Open MPI"


class Stop(Exception):
    """A signal asked us to stop."""

    def __init__(self, signum):
        super().__init__("signal %d" % signum)
        self.signum = signum


class Fatal(Exception):
    """A failure that ends the run; the message says which command and
    why.  Status 3: this machine cannot simulate hosts (not root, a
    command missing, a namespace, link or qdisc refused); else 1."""

    def __init__(self, msg, status=1):
        super().__init__(msg)
        self.status = status


def note(msg):
    print("# " + msg, flush=True)


def warn(msg):
    print("%s: %s" % (PROG, msg), file=sys.stderr, flush=True)


def fmt_size(b):
    for suf, m in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= m and b % m == 0:
            return "%d%s" % (b // m, suf)
    return str(b)


def rate_name(r):
    return "none" if r is None else "%g" % r


# ---- commands -------------------------------------------------------------

def sh(argv, check=True, timeout=30, status=1):
    """Runs @argv (a list), stdout and stderr together; (status, output).
    With @check, a failure raises Fatal(@status) naming the command."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout,
                           text=True)
        rc, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired:
        rc, out = 124, "timed out after %d s" % timeout
    except OSError as e:
        rc, out = 127, str(e)
    if check and rc != 0:
        raise Fatal("'%s' exited %d: %s" % (" ".join(argv), rc, out.strip()),
                    status)
    return rc, out


def in_ns(ns, host, argv, cpus=None):
    """@argv run in namespace @ns under its own hostname @host, on the
    CPUs @cpus (None: any)."""
    pin = ["taskset", "-c", ",".join(map(str, cpus))] if cpus else []
    return pin + ["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                  'hostname "$0" && exec "$@"', host] + list(argv)


CPUS = sorted(os.sched_getaffinity(0))
CPUS_PER_HOST = "auto"  # --cpus-per-host


def host_cpus(h, hosts):
    """The CPUs of host @h of @hosts: this machine's split into @hosts
    blocks (--cpus-per-host auto: len(CPUS) // hosts each, at least one,
    so hosts share CPUs only where there are more hosts than CPUs), or
    --cpus-per-host N each, in turn; None (any CPU) with 0."""
    per = len(CPUS) // hosts if CPUS_PER_HOST == "auto" else \
        int(CPUS_PER_HOST)
    if per == 0 and CPUS_PER_HOST != "auto":
        return None
    per = max(1, min(per, len(CPUS)))
    return [CPUS[(h * per + i) % len(CPUS)] for i in range(per)]


def cpus_text(hosts):
    sets = [host_cpus(h, hosts) for h in range(hosts)]
    if sets[0] is None:
        return "every host on every CPU"
    txt = ", ".join("host%d %s" % (h, ",".join(map(str, c)))
                    for h, c in enumerate(sets))
    shared = len(set(c for cs in sets for c in cs)) < sum(map(len, sets))
    return "CPUs " + txt + (" (hosts share CPUs: more hosts than CPUs)"
                            if shared else "")


class Procs:
    """The processes we started (each its own process group)."""

    def __init__(self):
        self.live = []

    def start(self, argv, stdout, stderr, env=None):
        p = subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=env,
                             stdin=subprocess.DEVNULL,
                             start_new_session=True)
        self.live.append(p)
        return p

    def forget(self, p):
        if p in self.live:
            self.live.remove(p)

    def kill_all(self):
        for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 2.0)):
            for p in self.live:
                if p.poll() is None:
                    try:
                        os.killpg(p.pid, sig)
                    except OSError:
                        pass
            end = time.monotonic() + grace
            for p in self.live:
                try:
                    p.wait(max(0.05, end - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        self.live = []


PROCS = Procs()


def wait_bounded(p, limit):
    """Exit status of @p, killed (its group) after @limit seconds."""
    try:
        return p.wait(limit)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        return p.wait(5)
