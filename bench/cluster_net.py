# bench/cluster's network: the namespaces (one per host and a switch
# holding a bridge), their veths and the tc tbf shaping of every host
# link; the rate check (tcp streams) and the latency check (ping, else a
# UDP echo), whose ends run in the namespaces as python3 bench/cluster
# --helper; and cleanup: killing what runs in the namespaces, deleting
# them and the run's /dev/shm names, and the sweep of what killed runs
# left.
import glob
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import cluster_util
from cluster_util import (CPUS, IFNAME, PREFIX, PROCS, host_cpus, in_ns,
                          note, rate_name, sh, wait_bounded, warn)

# What tcp carries of a tbf rate at MTU 1500: tbf counts whole frames
# (14 + 20 + 32 header bytes with timestamps, 1448 of payload).
TCP_SHARE = 1448.0 / 1514.0


# ---- stale runs, topology, cleanup ---------------------------------------

def pid_is_cluster(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return b"cluster" in f.read()
    except OSError:
        return False


def ns_list():
    rc, out = sh(["ip", "netns", "list"], check=False)
    return [l.split()[0] for l in out.splitlines() if l.strip()] \
        if rc == 0 else []


def kill_ns_pids(names):
    """Kills every process in the namespaces @names (TERM, then KILL)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        found = False
        for ns in names:
            rc, out = sh(["ip", "netns", "pids", ns], check=False)
            for tok in out.split() if rc == 0 else []:
                if tok.isdigit() and int(tok) != os.getpid():
                    found = True
                    try:
                        os.kill(int(tok), sig)
                    except OSError:
                        pass
        if not found:
            return
        time.sleep(0.5)


def sweep_stale():
    """Deletes what runs of this script that are gone left behind."""
    stale = set()
    for ns in ns_list():
        m = re.fullmatch(r"tcb(\d+)(h\d+|s)", ns)
        if m and int(m.group(1)) != os.getpid() and \
                not pid_is_cluster(int(m.group(1))):
            stale.add(ns)
    if stale:
        kill_ns_pids(sorted(stale))
        for ns in sorted(stale):
            sh(["ip", "netns", "del", ns], check=False)
        note("deleted %d namespace(s) of earlier runs that were killed: %s"
             % (len(stale), " ".join(sorted(stale))))
    scratch = os.path.join(tempfile.gettempdir(), "tutti-cluster-tcb*")
    for path in glob.glob("/dev/shm/tutti-tcb*") + glob.glob(scratch) + \
            glob.glob("/dev/shm/tutti-cluster-tcb*"):
        m = re.match(r"tutti-(?:tcb(\d+)j\d+-|cluster-tcb(\d+)-)",
                     os.path.basename(path))
        m = m and (m.group(1) or m.group(2))
        if m and int(m) != os.getpid() and not pid_is_cluster(int(m)):
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass


class Net:
    """The namespaces, their links and the shaping of the links."""

    def __init__(self, nhosts):
        pid = os.getpid()
        self.nhosts = nhosts
        self.sw = PREFIX + "s"
        self.ns = [PREFIX + "h%d" % h for h in range(nhosts)]
        self.net = "10.%d.%d" % (100 + (pid >> 8) % 150, pid % 256)
        self.addr = ["%s.%d" % (self.net, h + 1) for h in range(nhosts)]
        self.made = []

    def up(self):
        def must(argv):
            sh(argv, status=3)
        self.made.append(self.sw)
        must(["ip", "netns", "add", self.sw])
        must(["ip", "-n", self.sw, "link", "add", "br0", "type", "bridge"])
        must(["ip", "-n", self.sw, "link", "set", "br0", "up"])
        for h, ns in enumerate(self.ns):
            self.made.append(ns)
            must(["ip", "netns", "add", ns])
            must(["ip", "-n", ns, "link", "set", "lo", "up"])
            must(["ip", "link", "add", IFNAME, "netns", ns, "type", "veth",
                  "peer", "name", "p%d" % h, "netns", self.sw])
            must(["ip", "-n", self.sw, "link", "set", "p%d" % h, "master",
                  "br0", "up"])
            must(["ip", "-n", ns, "addr", "add", self.addr[h] + "/24", "dev",
                  IFNAME])
            must(["ip", "-n", ns, "link", "set", IFNAME, "up"])
        # unshare --uts inside a namespace: what every task does.
        must(in_ns(self.ns[0], "host0", ["true"]))

    def links(self):
        """(namespace, device) of both ends of every host link: the
        host's egress and the switch port's (towards the host)."""
        for h, ns in enumerate(self.ns):
            yield ns, IFNAME
            yield self.sw, "p%d" % h

    def shape(self, rate, burst_ms):
        """Every host link at @rate Gbit/s each way (None: unshaped)."""
        if rate is None:
            for ns, dev in self.links():
                sh(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"],
                   check=False)
            return None
        bps = rate * 1e9
        burst = max(64 << 10, int(bps / 8 * burst_ms / 1000))
        for ns, dev in self.links():
            sh(["tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf",
                "rate", "%dbit" % int(bps), "burst", str(burst),
                "latency", "10ms"], status=3)
        return burst

    def down(self):
        kill_ns_pids(self.made)
        for ns in reversed(self.made):
            rc, out = sh(["ip", "netns", "del", ns], check=False)
            if rc != 0:
                warn("ip netns del %s: %s" % (ns, out.strip()))
        self.made = []


MPI_SHM = "/dev/shm/tutti-cluster-%s-ompi" % PREFIX


def remove_shm():
    for path in glob.glob("/dev/shm/tutti-%sj*" % PREFIX):
        try:
            os.unlink(path)
        except OSError:
            pass
    shutil.rmtree(MPI_SHM, ignore_errors=True)


# ---- helpers run inside the namespaces (python3 SCRIPT --helper ...) -----

def stream_recv(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(port)))
    s.listen(1)
    s.settimeout(20)
    c, _ = s.accept()
    c.settimeout(20)
    buf = bytearray(1 << 20)
    while c.recv_into(buf) > 0:
        pass
    return 0


def stream_send(addr, port, secs):
    """Sends for @secs seconds; prints Gbit/s, counted until the receiver
    has read everything."""
    for _ in range(100):  # the receiver may not listen yet
        try:
            c = socket.create_connection((addr, int(port)), timeout=10)
            break
        except OSError:
            time.sleep(0.05)
    else:
        print("no connection to %s:%s" % (addr, port))
        return 1
    buf, n = b"x" * (4 << 20), 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < float(secs):
        c.sendall(buf)
        n += len(buf)
    c.shutdown(socket.SHUT_WR)
    c.recv(1)
    print("%.6f" % (n * 8 / (time.monotonic() - t0) / 1e9))
    return 0


def echo_server(port, count):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", int(port)))
    s.settimeout(10)
    for _ in range(int(count) + 10):
        try:
            data, peer = s.recvfrom(64)
        except socket.timeout:
            break
        if data == b"end":
            break
        s.sendto(data, peer)
    return 0


def echo_client(addr, port, count):
    """Prints the round trips in us, the first 5 (caches, ARP) left out."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1)
    rtts = []
    for i in range(int(count) + 5):
        t0 = time.perf_counter()
        s.sendto(b"%d" % i, (addr, int(port)))
        try:
            while s.recvfrom(64)[0] != b"%d" % i:
                pass
        except socket.timeout:
            continue
        if i >= 5:
            rtts.append((time.perf_counter() - t0) * 1e6)
    s.sendto(b"end", (addr, int(port)))
    print(" ".join("%.2f" % r for r in rtts))
    return 0


HELPERS = {"stream-recv": stream_recv, "stream-send": stream_send,
           "echo-server": echo_server, "echo-client": echo_client}


def helper(argv):
    """--helper PREFIX MODE ARGS: the ends of the rate and latency checks
    (PREFIX only names the run in the command line)."""
    fn = HELPERS.get(argv[1]) if len(argv) > 1 else None
    return fn(*argv[2:]) if fn else 2


def helper_cmd(net, h, argv, limit):
    """@argv of helper() run in host @h's namespace; the run's prefix
    first, so that their command lines name the run."""
    cpus = host_cpus(h, 2)
    pin = ["taskset", "-c", ",".join(map(str, cpus))] if cpus else []
    return ["timeout", "-k", "2", str(limit)] + pin + [
        "ip", "netns", "exec", net.ns[h], sys.executable, cluster_util.SCRIPT,
        "--helper", PREFIX] + argv


def run_helper(net, h, argv, out, limit):
    return PROCS.start(helper_cmd(net, h, argv, limit), stdout=out,
                       stderr=subprocess.STDOUT)


def udp_echo(net, src, dst_addr, dst, port, count, scratch):
    """Round trips in us of a UDP echo from host @src to @dst_addr (served
    in host @dst)."""
    with open(os.path.join(scratch, "echo"), "w") as o:
        srv = run_helper(net, dst, ["echo-server", str(port), str(count)],
                         o, 20)
        time.sleep(0.3)
        rc, out = sh(helper_cmd(net, src, ["echo-client", dst_addr,
                                           str(port), str(count)], 20),
                     check=False, timeout=30)
        wait_bounded(srv, 15)
        PROCS.forget(srv)
    try:
        return [float(x) for x in out.split()] if rc == 0 else []
    except ValueError:
        return []


def measure_latency(net, scratch):
    """Median round trip host0 -> host1 in us, and how it was taken."""
    if shutil.which("ping"):
        rc, out = sh(["ip", "netns", "exec", net.ns[0], "ping", "-n", "-c",
                      "55", "-i", "0.01", "-W", "1", net.addr[1]],
                     check=False, timeout=30)
        rtts = [float(x) * 1e3 for x in re.findall(r"time=([\d.]+) ms", out)]
        if len(rtts) > 5:
            return statistics.median(rtts[5:]), "ping, %d probes" % \
                len(rtts[5:])
    rtts = udp_echo(net, 0, net.addr[1], 1, 7007, 200, scratch)
    if not rtts:
        return None, "ping is not installed and a UDP echo in python3 failed"
    base = udp_echo(net, 0, "127.0.0.1", 0, 7008, 200, scratch)
    how = "UDP echo in python3 (ping is not installed), %d probes" % len(rtts)
    if base:
        how += "; the same echo over host0's loopback %.1f us (python's " \
               "share)" % statistics.median(base)
    return statistics.median(rtts), how


def measure_stream(net, src, dst, secs, scratch, port):
    """Gbit/s of one tcp stream host src -> host dst, or None."""
    rpath = os.path.join(scratch, "stream-recv")
    with open(rpath, "w") as o:
        recv = run_helper(net, dst, ["stream-recv", str(port)], o, 30)
        rc, out = sh(helper_cmd(net, src, ["stream-send", net.addr[dst],
                                           str(port), str(secs)],
                                int(secs) + 20),
                     check=False, timeout=int(secs) + 30)
        wait_bounded(recv, 10)
        PROCS.forget(recv)
    try:
        return float(out.strip().splitlines()[-1]) if rc == 0 else None
    except (ValueError, IndexError):
        return None


# ---- the rate check -------------------------------------------------------

def check_rate(net, rate, burst, quick, scratch, ceiling):
    """Prints what tcp streams carry between host0 and host1; @ceiling is
    what one carried before any shaping (Gbit/s, or None)."""
    secs = 1.0 if quick else 2.0
    pairs = [(0, 1)] if quick else [(0, 1), (1, 0)]
    got = []
    for i, (s, d) in enumerate(pairs):
        got.append(measure_stream(net, s, d, secs, scratch, 5201 + i))
    txt = ", ".join("host%d->host%d %s" % (s, d, "failed" if g is None else
                                            "%.2f Gbit/s" % g)
                    for (s, d), g in zip(pairs, got))
    if rate is None:
        note("unshaped links: tcp stream %s (this machine's ceiling)" % txt)
        return got
    want = rate * TCP_SHARE
    note("rate %s Gbit/s (tbf both ways on every host link, burst %d B, "
         "queue 10 ms): tcp stream %s; tcp can carry %.2f Gbit/s of it"
         % (rate_name(rate), burst, txt, want))
    ok = [g for g in got if g is not None]
    if ok and min(ok) >= 0.9 * want:
        return got
    if ceiling is not None and ceiling < want:
        note("warning: the links carry less than %s Gbit/s here: unshaped, "
             "this machine's %d CPUs moved %.2f Gbit/s; cells at this rate "
             "measure the machine, not the rate" % (rate_name(rate),
                                                    len(CPUS), ceiling))
    else:
        note("warning: the shaped links carry less than %s Gbit/s (%s "
             "unshaped); a larger --burst-ms may help" % (
                 rate_name(rate), "%.2f Gbit/s" % ceiling if ceiling
                 else "unknown"))
    return got

