# bench/cluster's jobs: a cell's tutti-perf tasks started in the host
# namespaces as a launcher would start them (the TUTTI_* variables, each
# host on its CPUs, a bounded wait), Open MPI's mpirun in host0 with its
# daemons reaching the other hosts through a launch agent, and the rows
# both print (tutti-perf's and bench/mpi_coll.c's).
import glob
import os
import re
import secrets
import shutil
import signal
import time

import cluster_util
from cluster_util import (IFNAME, PREFIX, PROCS, PROG, WARMUP, host_cpus,
                          in_ns, sh, wait_bounded)
from cluster_net import MPI_SHM, kill_ns_pids

RDV_PORT = 29400      # rendezvous ports: RDV_PORT + job number % 5000

# Launcher variables each task gets from us, never from our environment.
LAUNCH_VARS = ("TUTTI_RANK", "TUTTI_SIZE", "TUTTI_LOCAL_RANK",
               "TUTTI_LOCAL_SIZE", "TUTTI_JOB_ID", "TUTTI_JOB_SECRET",
               "TUTTI_RENDEZVOUS", "TUTTI_RENDEZVOUS_FILE",
               "TUTTI_SECRET_FILE", "TUTTI_TCP_IFNAME", "TUTTI_TCP_PORTS",
               "TUTTI_TCP_FAMILY", "TUTTI_TRANSPORTS", "TUTTI_TEST_STORE_DIR",
               "TUTTI_BIND")

# Where the transports name ucx, UCX's tcp on the host's test interface:
# its shared memory (sm) would cross the simulated hosts, whose /dev/shm
# is one.  Tutti's own ucx.tls and ucx.devices variables would override
# these, so the tasks never get them from our environment either.
UCX_VARS = ("UCX_TLS", "UCX_NET_DEVICES", "TUTTI_UCX_TLS",
            "TUTTI_UCX_DEVICES")


# ---- jobs ------------------------------------------------------------------

class Jobs:
    def __init__(self, net, tools, args, outdir):
        self.net, self.tools, self.args, self.outdir = net, tools, args, outdir
        self.seq = 0

    def job_timeout(self, hosts, per_host, rate, sizes, iters):
        if self.args.timeout is not None:
            return self.args.timeout
        gbps = rate if rate is not None else 5.0
        # A host link carries about 2 L S per call (allreduce's ring
        # moves 2 (n-1)/n S per rank); 5 ms a call for oversubscribed
        # CPUs.  Three times that, and a minute to start.
        est = sum((iters + WARMUP) * (2.0 * per_host * s * 8 / (gbps * 1e9)
                                      + 0.005) for s in sizes)
        return int(60 + 3 * est)

    def run_tutti(self, hosts, per_host, argv, tag, limit, cpu_hosts=None):
        """Runs @argv (tutti-perf's arguments) as hosts x per_host tasks,
        each host on its CPUs in a split of @cpu_hosts (default: @hosts);
        (status, rank 0's stdout path, a line saying why it failed)."""
        self.seq += 1
        n = hosts * per_host
        job = "%sj%d" % (PREFIX, self.seq)
        secret = secrets.token_hex(16)
        ucx = "ucx" in self.args.transports
        env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS
               and not (ucx and k in UCX_VARS)}
        env.update(TUTTI_SIZE=str(n), TUTTI_LOCAL_SIZE=str(per_host),
                   TUTTI_JOB_ID=job, TUTTI_JOB_SECRET=secret,
                   TUTTI_RENDEZVOUS="%s:%d" % (self.net.addr[0],
                                               RDV_PORT + self.seq % 5000),
                   TUTTI_TCP_IFNAME=IFNAME,
                   TUTTI_TRANSPORTS=",".join(self.args.transports),
                   # The tasks are unpinned within their host's CPUs:
                   # Tutti counts that mask as the host's processors.
                   TUTTI_BIND="none",
                   TUTTI_TIMEOUT=str(min(300, limit)))
        if ucx:
            env.update(UCX_TLS="tcp", UCX_NET_DEVICES=IFNAME)
        procs, files = [], []
        for t in range(n):
            h = t // per_host
            env_t = dict(env, TUTTI_RANK=str(t),
                         TUTTI_LOCAL_RANK=str(t % per_host))
            base = os.path.join(self.outdir, "%s.rank%d" % (tag, t))
            fo, fe = open(base + ".out", "w"), open(base + ".err", "w")
            files += [fo, fe]
            cmd = ["timeout", "-k", "5", str(limit)] + \
                in_ns(self.net.ns[h], "host%d" % h,
                      [self.tools["tutti-perf"]] + argv,
                      host_cpus(h, cpu_hosts or hosts))
            procs.append(PROCS.start(cmd, fo, fe, env_t))
        status = self.wait_job(procs, limit)
        for f in files:
            f.close()
        for path in glob.glob("/dev/shm/tutti-%s-*" % job):
            try:
                os.unlink(path)
            except OSError:
                pass
        out0 = os.path.join(self.outdir, "%s.rank0.out" % tag)
        why = ""
        bad = [t for t, st in enumerate(status) if st != 0]
        if bad:
            t = bad[0]
            err = os.path.join(self.outdir, "%s.rank%d.err" % (tag, t))
            last = ""
            try:
                with open(err) as f:
                    lines = [l.strip() for l in f if l.strip()]
                    last = lines[-1] if lines else ""
            except OSError:
                pass
            why = "rank %d exited %d%s: %s (%s)" % (
                t, status[t], " (timed out)" if status[t] in (124, 137) else
                "", last[:300] or "nothing on stderr", err)
        return (1 if bad else 0), out0, why

    def wait_job(self, procs, limit):
        """Every task's status; once one fails, the rest get 10 s."""
        end = time.monotonic() + limit + 15
        status = [None] * len(procs)
        while None in status and time.monotonic() < end:
            for i, p in enumerate(procs):
                if status[i] is None:
                    status[i] = p.poll()
            if any(s not in (None, 0) for s in status):
                end = min(end, time.monotonic() + 10)
            if None in status:
                time.sleep(0.05)
        for i, p in enumerate(procs):
            if status[i] is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait(5)
                status[i] = 137
            PROCS.forget(p)
        return status


def parse_rows(path):
    """tutti-perf's (or mpi_coll's) rows: [(size, time_us, busbw, wrong,
    impl)]."""
    rows = []
    try:
        with open(path) as f:
            for line in f:
                w = line.split()
                if line.startswith("#") or len(w) < 11:
                    continue
                try:
                    rows.append((int(w[0]), float(w[5]), float(w[7]), w[8],
                                 w[9]))
                except ValueError:
                    continue
    except OSError:
        pass
    return rows


# ---- Open MPI --------------------------------------------------------------

class Mpi:
    """Open MPI's mpirun started in host0, its daemons in the other hosts'
    namespaces through a launch agent."""

    def __init__(self, net, scratch):
        self.net, self.scratch, self.ok, self.why = net, scratch, False, ""
        self.binary = os.path.join(scratch, "mpi_coll")
        self.shm = MPI_SHM

    def prepare(self):
        mpicc = shutil.which("mpicc.openmpi") or shutil.which("mpicc")
        mpirun = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
        src = os.path.join(os.path.dirname(cluster_util.SCRIPT),
                           "mpi_coll.c")
        if mpicc is None or mpirun is None:
            self.why = "no mpicc or mpirun on PATH (openmpi-bin, " \
                       "libopenmpi-dev)"
            return False
        rc, out = sh([mpirun, "--version"], check=False)
        if not re.search(r"Open MPI|Open ?RTE", out):
            self.why = "%s is not Open MPI's: %s" % (
                mpirun, (out.strip().splitlines() or [""])[0][:80])
            return False
        rc, out = sh([mpicc, "-O2", "-o", self.binary, src], check=False,
                     timeout=120)
        if rc != 0:
            self.why = "%s cannot build %s: %s" % (
                mpicc, src, out.strip().splitlines()[-1:] or "")
            return False
        self.mpirun = mpirun
        self.agent = os.path.join(self.scratch, "agent")
        # mpirun calls the agent as ssh: host, then a command line for a
        # remote shell.  hostN is namespace PREFIXhN.
        with open(self.agent, "w") as f:
            f.write("#!/bin/sh\n"
                    "# %s: Open MPI's launch agent: host, command line.\n"
                    "host=$1; shift\n"
                    "case $host in host[0-9]*) ;; *) echo \"agent: unknown "
                    "host '$host'\" >&2; exit 1 ;; esac\n"
                    "cpus=$(sed -n \"s/^$host //p\" \"$0.cpus\")\n"
                    "pin=\"taskset -c $cpus\"\n"
                    "[ \"$cpus\" = - ] && pin=\n"
                    "exec $pin ip netns exec %sh${host#host} unshare --uts "
                    "sh -c 'hostname \"$0\" && exec sh -c \"$1\"' \"$host\" "
                    "\"$*\"\n" % (PROG, PREFIX))
        os.chmod(self.agent, 0o755)
        os.makedirs(os.path.join(self.scratch, "ompi-tmp"), exist_ok=True)
        # Open MPI's shared memory files, in a directory of ours that
        # cleanup() removes (a killed mpirun leaves them).
        os.makedirs(self.shm, exist_ok=True)
        self.ok = True
        return True

    def run(self, hosts, per_host, coll, sizes_args, iters, tag, outdir,
            limit):
        hf = os.path.join(self.scratch, "hosts%d.%d" % (hosts, per_host))
        with open(hf, "w") as f:
            for h in range(hosts):
                f.write("host%d slots=%d\n" % (h, per_host))
        b, e, fct = sizes_args
        # The agent pins host N's daemon (and so its ranks) as the tasks
        # of Tutti are pinned.
        with open(self.agent + ".cpus", "w") as f:
            for h in range(hosts):
                c = host_cpus(h, hosts)
                f.write("host%d %s\n" % (h, ",".join(map(str, c)) if c
                                         else "-"))
        cmd = ["timeout", "-k", "5", str(limit)] + in_ns(
            self.net.ns[0], "host0",
            [self.mpirun, "--allow-run-as-root", "--hostfile", hf,
             "--mca", "plm_rsh_agent", self.agent,
             "--mca", "plm_rsh_no_tree_spawn", "1",
             "--mca", "pml", "ob1",
             "--mca", "btl", "self,vader,tcp",
             "--mca", "btl_tcp_if_include", IFNAME,
             "--mca", "oob_tcp_if_include", IFNAME,
             "--mca", "btl_vader_single_copy_mechanism", "none",
             "--mca", "btl_vader_backing_directory", self.shm,
             "--mca", "mpi_yield_when_idle", "1",
             "--mca", "orte_tmpdir_base",
             os.path.join(self.scratch, "ompi-tmp"),
             "--bind-to", "none", "--map-by", "ppr:%d:node" % per_host,
             "-n", str(hosts * per_host), self.binary, coll, str(b), str(e),
             "%g" % fct, str(iters), str(WARMUP)], host_cpus(0, hosts))
        out = os.path.join(outdir, tag + ".out")
        err = os.path.join(outdir, tag + ".err")
        with open(out, "w") as fo, open(err, "w") as fe:
            p = PROCS.start(cmd, fo, fe)
            rc = wait_bounded(p, limit + 15)
            PROCS.forget(p)
        # Its daemons (started with --daemonize) end with mpirun; any
        # left would hold the namespaces.
        kill_ns_pids(self.net.ns)
        why = ""
        if rc != 0 or not parse_rows(out):
            why = "mpirun exited %d%s: %s (%s)" % (
                rc, " (timed out)" if rc in (124, 137) else "",
                mpi_error(err), err)
        return rc, out, why


def mpi_error(path):
    """What Open MPI said first: its first help block (between lines of
    dashes) in one line, else its last lines."""
    try:
        with open(path) as f:
            lines = [l.strip() for l in f]
    except OSError:
        return "no output"
    dash = [i for i, l in enumerate(lines) if l.startswith("-----")]
    part = lines[dash[0] + 1:dash[1]] if len(dash) >= 2 else lines[-3:]
    text = " ".join(l for l in part if l)
    return text[:400] or "no output"

