"""The torch backend "tutti" across two simulated hosts, under torchrun.

Each host is a network namespace (its own interfaces, addresses, ports)
entered with its own UTS namespace (its own hostname), the two joined by
a veth pair, as tests/mp/test_netns.c does for the C library.  torchrun
runs on each (--nnodes 2 --nproc-per-node 2, static rendezvous at host
0's address) hosts_worker.py, which checks the world and its collectives
exactly; the tasks log at debug, from which the test reads that shm
served the peer on the same host and tcp the two on the other, and each
host's interface must have received megabytes (tcp carried the bytes).

Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN), `ip` (iproute2) and `unshare`
(util-linux); skipped, naming the command that failed, where these are
missing.  The namespaces (and with them the link) are deleted at the end,
also when the test fails.  Environment as in test_python.py:
TUTTI_BUILD_DIR, TUTTI_TEST_PYTHON, TUTTI_TEST_TMP.
"""
import glob
import os
import re
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.environ.get("TUTTI_TEST_PYTHON", sys.executable)
TORCHRUN = os.path.join(os.path.dirname(PY), "torchrun")
NS_PREFIX = "tuttip"  # namespaces: tuttip<pid>h<host>
CTRL_KEY = "0xc0c0c0c0c0c0c0c0"  # the library's control-plane group
MASTER_PORT = 29500  # free: nothing else lives in a fresh namespace
NHOSTS, NPROC = 2, 2
TIMEOUT = 180  # seconds a torchrun may take before it is killed


def sh(cmd):
    """@cmd's exit status and its output (stdout and stderr joined)."""
    try:
        p = subprocess.run(cmd, shell=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 127, str(e)
    return p.returncode, p.stdout


def must(cmd):
    """Runs @cmd, which sets the network up; skips the test if it fails."""
    rc, out = sh(cmd)
    if rc != 0:
        pytest.skip("test_torch_hosts: cannot simulate hosts: '%s' exited "
                    "%d (needs root, CAP_NET_ADMIN, iproute2 and "
                    "util-linux): %s" % (cmd, rc, out.strip()))


def sweep_stale():
    """Deletes namespaces left by runs of this test that were killed."""
    rc, out = sh("ip netns list")
    for line in out.splitlines() if rc == 0 else []:
        m = re.match(NS_PREFIX + r"(\d+)h\d+\b", line)
        if m and int(m.group(1)) != os.getpid() and \
                not os.path.exists("/proc/%s" % m.group(1)):
            sh("ip netns del %s" % m.group(0))


class Hosts:
    """Host h: namespace ns[h], interface ifname[h], address addr[h]."""

    def __init__(self):
        pid = os.getpid()
        self.ns = ["%s%dh%d" % (NS_PREFIX, pid, h) for h in range(NHOSTS)]
        self.ifname = ["tpv%d" % h for h in range(NHOSTS)]
        self.addr = ["10.214.%d.%d" % (1 + pid % 250, h + 1)
                     for h in range(NHOSTS)]
        self.name = ["tutti-torch-host%d" % h for h in range(NHOSTS)]
        self.made = []

    def rx_bytes(self, h):
        """Bytes received on host @h's interface, or -1."""
        rc, out = sh("ip netns exec %s cat /sys/class/net/%s/statistics/"
                     "rx_bytes" % (self.ns[h], self.ifname[h]))
        return int(out) if rc == 0 and out.strip().isdigit() else -1


@pytest.fixture
def hosts():
    """Two hosts on a veth pair; their namespaces deleted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("test_torch_hosts: not root (network namespaces need "
                    "CAP_NET_ADMIN and CAP_SYS_ADMIN)")
    rc, out = sh("ip -V")
    if rc != 0:
        pytest.skip("test_torch_hosts: no usable 'ip' command (iproute2): "
                    + out.strip())
    rc, out = sh("unshare --uts true")
    if rc != 0:
        pytest.skip("test_torch_hosts: 'unshare --uts true' failed (needs "
                    "util-linux and CAP_SYS_ADMIN): " + out.strip())
    sweep_stale()
    n = Hosts()
    try:
        for h in range(NHOSTS):
            must("ip netns add %s" % n.ns[h])
            n.made.append(n.ns[h])
            must("ip -n %s link set lo up" % n.ns[h])
        must("ip link add %s netns %s type veth peer name %s netns %s" % (
            n.ifname[0], n.ns[0], n.ifname[1], n.ns[1]))
        for h in range(NHOSTS):
            must("ip -n %s addr add %s/24 dev %s" % (n.ns[h], n.addr[h],
                                                     n.ifname[h]))
            must("ip -n %s link set %s up" % (n.ns[h], n.ifname[h]))
        yield n
    finally:
        for ns in n.made:
            rc, out = sh("ip netns del %s" % ns)
            if rc != 0:
                print("test_torch_hosts: ip netns del %s: %s" % (ns, out))


def job_env():
    """This environment without a job's variables, logging at debug."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TUTTI_RANK", "TUTTI_SIZE", "TUTTI_JOB",
                                "TUTTI_LOCAL", "TUTTI_CONFIG",
                                "TUTTI_RENDEZVOUS", "TUTTI_TRANSPORTS",
                                "TUTTI_TCP_", "OMPI_", "PMI_", "SLURM_",
                                "MASTER_", "RANK", "WORLD_SIZE",
                                "LOCAL_", "GROUP_", "TORCHELASTIC_"))}
    env["TUTTI_LOG_LEVEL"] = "debug"
    env["TUTTI_TIMEOUT"] = "60"
    return env


def wait_all(procs):
    """The exit statuses of @procs; once one has failed, the others get
    10 s to end before they are stopped (SIGTERM, which timeout passes
    on to torchrun, then SIGKILL), rather than waiting out their
    timeouts for ranks that will never come."""
    deadline = time.monotonic() + TIMEOUT + 15
    while True:
        rcs = [p.poll() for p in procs]
        if None not in rcs:
            return rcs
        if any(rc not in (None, 0) for rc in rcs):
            deadline = min(deadline, time.monotonic() + 10)
        if time.monotonic() > deadline:
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
            return [p.wait() for p in procs]
        time.sleep(0.1)


def quiet(log):
    """@log without the library's debug lines."""
    return "".join(line for line in log.splitlines(True)
                   if not re.match(r"tutti\[task [^]]*\] debug ", line))


def transport_lines(log, task):
    """{group key: its transport line} that task @task logged."""
    got = {}
    pat = (r"^tutti\[task %d(?: [^]]*)?\] debug transport: "
           r"group (0x[0-9a-f]+) rank %d: (.*)$" % (task, task))
    for m in re.finditer(pat, log, re.M):
        got[m.group(1)] = m.group(2)
    return got


def test_torchrun_two_hosts_shm_within_tcp_between(hosts, tmp_path):
    """2 hosts x 2 ranks under torchrun: world, hostnames, all_reduce,
    broadcast, all_gather_into_tensor and all_to_all_single exact; shm
    within a host and tcp between them (the control plane tcp to all)."""
    rx0 = [hosts.rx_bytes(h) for h in range(NHOSTS)]
    procs, outs = [], []
    for h in range(NHOSTS):
        outs.append(str(tmp_path / ("host%d.out" % h)))
        cmd = ["timeout", "-k", "5", str(TIMEOUT), "ip", "netns", "exec",
               hosts.ns[h], "unshare", "--uts", "sh", "-c",
               'hostname "$0" && exec "$@"', hosts.name[h],
               TORCHRUN, "--nnodes", str(NHOSTS), "--nproc-per-node",
               str(NPROC), "--node-rank", str(h), "--rdzv-backend", "static",
               "--master-addr", hosts.addr[0], "--master-port",
               str(MASTER_PORT), os.path.join(HERE, "hosts_worker.py")]
        with open(outs[-1], "w") as f:
            procs.append(subprocess.Popen(cmd, stdout=f,
                                          stderr=subprocess.STDOUT,
                                          env=job_env()))
    try:
        rcs = wait_all(procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    logs = [open(o, errors="replace").read() for o in outs]
    if rcs != [0] * NHOSTS:
        pytest.fail("torchrun exit statuses %r (124: timed out; a host "
                    "stopped once the other failed shows 1 or 143); "
                    "without debug lines:\n%s" % (rcs, "".join(
                        "---- host %d (%s):\n%s\n" % (h, outs[h], quiet(
                            logs[h])[-4000:]) for h in range(NHOSTS))))
    for t in range(NHOSTS * NPROC):
        h = t // NPROC
        log = logs[h]
        assert re.search(r"^hosts_worker: rank %d of %d on %s: ok \d+ "
                         r"checks \(init [0-9.]+ s, collectives [0-9.]+ "
                         r"s\)$" % (t, NHOSTS * NPROC, hosts.name[h]),
                         log, re.M), quiet(log)[-6000:]
        # The store told each task its host has 2 of the 4.
        assert re.search(r"^tutti\[task %d\] info bootstrap: task %d of %d "
                         r".*, local rank %d of %d$" % (
                             t, t, NHOSTS * NPROC, t % NPROC, NPROC),
                         log, re.M), "task %d: no bootstrap line " \
            "with local rank %d of %d\n%s" % (t, t % NPROC, NPROC,
                                              log[-6000:])
        lines = transport_lines(log, t)
        assert lines.get(CTRL_KEY) == "tcp to 3 peer(s)", \
            "task %d: control plane %r\n%s" % (t, lines, log[-6000:])
        data = {k: v for k, v in lines.items() if k != CTRL_KEY}
        assert len(data) == 1, "task %d: data groups %r" % (t, lines)
        line = list(data.values())[0]
        for want in ("shm to 1 peer(s)", "tcp to 2 peer(s)"):
            assert want in line, "task %d: data group line %r lacks %r" % (
                t, line, want)
    # destroy_process_group says goodbye: no rank sees another vanish.
    assert not any("is gone" in log for log in logs), logs[0][-6000:]
    # tcp carried the bytes: the allreduce of 1 Mi + 3 floats crosses.
    for h in range(NHOSTS):
        rx = hosts.rx_bytes(h)
        assert rx0[h] >= 0 and rx - rx0[h] >= 1 << 20, \
            "host %d (%s) received only %d bytes" % (h, hosts.ifname[h],
                                                     rx - rx0[h])
    # Nothing of the job left in /dev/shm.
    jobs = set(re.findall(r"met through the store: job '([^']+)'",
                          "".join(logs)))
    assert len(jobs) == 1, jobs
    left = glob.glob("/dev/shm/tutti-%s*" % jobs.pop())
    assert not left, left
