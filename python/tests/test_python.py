"""The tutti package under real launchers, processes and installs.

Each test starts a job (tutti-run, python -m tutti.run, mpirun, or plain
processes meeting through a store) and asserts on what its ranks print.
The environment says where things are (tests/python/test_python sets it):
TUTTI_BUILD_DIR (the build tree), TUTTI_TEST_PYTHON (the venv's python,
the package installed against that tree) and TUTTI_TEST_TMP.
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ["TUTTI_BUILD_DIR"]
PY = os.environ.get("TUTTI_TEST_PYTHON", sys.executable)
TMP = os.environ.get("TUTTI_TEST_TMP", "/tmp")
TUTTI_RUN = os.path.join(BUILD, "tools", "tutti-run")


def run(cmd, timeout=300, env=None, **kw):
    """@cmd's exit status and its output (stdout and stderr joined)."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout, env=env, **kw)
    return p.returncode, p.stdout


def clean_env():
    """The environment without a job's variables (a test's own launcher
    sets them)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("TUTTI_RANK", "TUTTI_SIZE", "TUTTI_JOB",
                                 "TUTTI_LOCAL", "TUTTI_CONFIG", "OMPI_",
                                 "PMI_", "SLURM_"))}


def mpirun():
    path = shutil.which("mpirun")
    if path is None:
        pytest.fail("mpirun not found: ./build.sh installs openmpi-bin")
    flags = ["--oversubscribe"]
    if os.geteuid() == 0:
        flags.append("--allow-run-as-root")
    return [path] + flags


LAUNCHERS = {
    "tutti-run-2": lambda: [TUTTI_RUN, "-n", "2", "--timeout", "600", PY],
    "tutti-run-3": lambda: [TUTTI_RUN, "-n", "3", "--timeout", "600", PY],
    "mpirun-2": lambda: mpirun() + ["-n", "2", PY],
    "python-m-tutti.run-2": lambda: [PY, "-m", "tutti.run", "-n", "2", PY],
}


@pytest.mark.parametrize("launcher", ["tutti-run-2", "tutti-run-3",
                                      "mpirun-2"])
def test_every_collective_dtype_op(launcher):
    cmd = LAUNCHERS[launcher]() + [os.path.join(HERE, "coll_worker.py")]
    rc, out = run(cmd, env=clean_env())
    n = int(launcher[-1])
    assert rc == 0, out[-4000:]
    m = re.search(r"coll_worker: %d ranks: (\d+) checks, (\d+) wrong" % n,
                  out)
    assert m, out[-4000:]
    assert int(m.group(1)) > 2000 * n and m.group(2) == "0", m.group(0)


@pytest.mark.parametrize("launcher", ["tutti-run-2", "python-m-tutti.run-2"])
def test_futures_callbacks_errors_timeouts(launcher):
    cmd = LAUNCHERS[launcher]()
    if launcher.startswith("python"):
        cmd = cmd[:-1]  # tutti.run puts this Python before the script
    cmd = cmd + [os.path.join(HERE, "behaviour_worker.py")]
    rc, out = run(cmd, env=clean_env())
    assert rc == 0, out[-4000:]
    for r in range(2):
        assert "behaviour: rank %d: ok" % r in out, out[-4000:]


def test_ctrl_c_interrupts_a_wait_and_aborts_the_job(tmp_path):
    pid_file = str(tmp_path / "pid")
    env = clean_env()
    env["TUTTI_TEST_PID_FILE"] = pid_file
    p = subprocess.Popen([TUTTI_RUN, "-n", "2", "--timeout", "120", PY,
                          os.path.join(HERE, "ctrlc_worker.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, env=env)
    deadline = time.monotonic() + 60
    while not os.path.exists(pid_file) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.exists(pid_file), "rank 0 never wrote its pid"
    time.sleep(0.3)  # into its wait
    t0 = time.monotonic()
    os.kill(int(open(pid_file).read()), signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    took = time.monotonic() - t0
    assert p.returncode == 0, out
    assert "ctrlc: rank 0: KeyboardInterrupt, aborted True" in out, out
    assert "ctrlc: rank 0: later call ERR_ABORTED" in out, out
    assert ("ctrlc: rank 1: ERR_ABORTED: group 0x7: aborted by task 0: "
            "rank 0 of group: allreduce interrupted") in out, out
    assert took < 30, "the job took %.1f s to end after SIGINT" % took


def start_store_tasks(tmp_path, size, ranks=None, extra=(), timeout=None):
    env = clean_env()
    if timeout is not None:
        env["TUTTI_TIMEOUT"] = str(timeout)
    return [subprocess.Popen([PY, os.path.join(HERE, "store_worker.py"),
                              str(r), str(size), str(tmp_path)] + list(extra),
                             stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=env)
            for r in (ranks if ranks is not None else range(size))]


def test_store_bootstrap_three_tasks(tmp_path):
    procs = start_store_tasks(tmp_path, 3)
    outs = [p.communicate(timeout=120)[0] for p in procs]
    for r, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, out
        assert "store: rank %d: ok 3 6 9 12" % r in out, out
    # The secret never reaches the log, the job id and hosts did pass.
    keys = sorted(os.listdir(tmp_path))
    assert "tutti_secret" in keys and "tutti_job_id" in keys, keys
    secret = open(tmp_path / "tutti_secret", "rb").read()
    for out in outs:
        assert secret.hex() not in out and secret.decode(
            "latin-1") not in out


def test_store_missing_task_times_out_naming_it(tmp_path):
    t0 = time.monotonic()
    procs = start_store_tasks(tmp_path, 3, ranks=[0, 1], timeout=2)
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert time.monotonic() - t0 < 30
    for p, out in zip(procs, outs):
        assert p.returncode == 1, out
        assert "TuttiTimeoutError: ERR_TIMEOUT" in out, out
    assert "task 2 never appeared in the store (no key 'tutti/host/2'" in \
        outs[0], outs[0]


def test_store_that_raises_names_the_exception(tmp_path):
    procs = start_store_tasks(tmp_path, 2,
                              extra=["--fail-get", "tutti/job_id"],
                              timeout=3)
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert procs[1].returncode == 1, outs[1]
    assert ("ERR_IO: the store's get of key 'tutti/job_id' failed" in
            outs[1]), outs[1]
    assert ("the store's get('tutti/job_id') raised ValueError: the store "
            "is down") in outs[1], outs[1]


def test_info_prints_what_tutti_info_prints():
    env = clean_env()
    env["TUTTI_JOB_ID"] = "info-test"
    rc, ours = run([PY, "-m", "tutti.info"], env=env)
    assert rc == 0, ours
    rc, theirs = run([os.path.join(BUILD, "tools", "tutti-info")], env=env)
    assert rc == 0 and ours == theirs
    assert "loaded   ring" in ours and "loaded   shm" in ours, ours


ALLREDUCE = ("import array, tutti; a = array.array('d', [tutti.rank() + 1] "
             "* 3); tutti.allreduce(a); print('rank', tutti.rank(), 'of', "
             "tutti.size(), list(a), tutti.__file__, tutti.library_path())")


def fresh_venv(path):
    """A new virtual environment with nothing but pip; its python."""
    subprocess.run([sys.executable if not os.path.exists("/usr/bin/python3")
                    else "/usr/bin/python3", "-m", "venv", str(path)],
                   check=True)
    return os.path.join(str(path), "bin", "python")


def check_two_ranks(py, where):
    rc, out = run([py, "-m", "tutti.run", "-n", "2", "--tag-output", "-c",
                   ALLREDUCE], env=clean_env(), cwd="/")
    assert rc == 0, out
    for r in range(2):
        assert "[%d] rank %d of 2 [3.0, 3.0, 3.0]" % (r, r) in out, out
    assert where in out, out
    return out


def test_wheel_runs_in_a_fresh_venv(tmp_path):
    """python -m build (an sdist, then a wheel made from it) bundles the
    install of the build tree; a fresh venv with only that wheel runs a
    2-process allreduce, its libtutti, modules and tools from inside the
    package."""
    dist = tmp_path / "dist"
    env = clean_env()
    env.pop("TUTTI_BUILD_DIR", None)
    env.pop("TUTTI_PREFIX", None)
    env["TUTTI_TORCH"] = "0"  # the C++ backend: test_torch's
    rc, out = run([PY, "-m", "build", "--no-isolation", "--outdir",
                   str(dist), os.path.join(TOP, "python")], env=env,
                  timeout=600)
    assert rc == 0, out[-4000:]
    wheels = glob.glob(str(dist / "tutti-*.whl"))
    assert len(wheels) == 1, out[-2000:]
    py = fresh_venv(tmp_path / "venv")
    rc, out = run([py, "-m", "pip", "install", "--no-index", "-q",
                   wheels[0]])
    assert rc == 0, out
    site = str(tmp_path / "venv")
    out = check_two_ranks(py, site)
    assert "_prefix/lib/libtutti.so" in out, out
    assert BUILD not in out, "the wheel used the build tree: " + out
    rc, info = run([py, "-m", "tutti.info"], env=clean_env(), cwd="/")
    assert rc == 0 and "loaded   ring" in info and site in info, info


def test_relocated_install_prefix(tmp_path):
    """make install into a staging directory, the prefix then moved; the
    package built against it (TUTTI_PREFIX) in a fresh venv finds the
    moved library, its modules and tools."""
    stage = tmp_path / "stage"
    rc, out = run(["make", "-s", "-C", BUILD, "install",
                   "DESTDIR=" + str(stage)], timeout=600)
    assert rc == 0, out[-4000:]
    prefix = subprocess.run(["sed", "-n", "s/^prefix = //p",
                             os.path.join(BUILD, "Makefile")],
                            capture_output=True, text=True).stdout.strip()
    moved = tmp_path / "moved"
    shutil.move(str(stage) + prefix, str(moved))
    env = clean_env()
    env["TUTTI_PREFIX"] = str(moved)
    env["TUTTI_TORCH"] = "0"
    env.pop("TUTTI_BUILD_DIR", None)
    rc, out = run([PY, "-m", "pip", "wheel", "--no-build-isolation",
                   "--no-deps", "-q", "-w", str(tmp_path / "whl"),
                   os.path.join(TOP, "python")], env=env, timeout=600)
    assert rc == 0, out[-4000:]
    py = fresh_venv(tmp_path / "venv")
    rc, out = run([py, "-m", "pip", "install", "--no-index", "-q"] +
                  glob.glob(str(tmp_path / "whl" / "tutti-*.whl")))
    assert rc == 0, out
    out = check_two_ranks(py, str(moved / "lib" / "libtutti.so"))
    assert BUILD not in out, out


def readme_block(name):
    """The python block of the README marked "readme-test: name"."""
    text = open(os.path.join(TOP, "README.md")).read()
    m = re.search(r"<!-- readme-test: %s -->\n```python\n(.*?)```" %
                  re.escape(name), text, re.S)
    assert m, "README.md has no python block marked readme-test: " + name
    return text, m.group(1)


def test_readme_numpy_example(tmp_path):
    text, code = readme_block("allreduce.py")
    (tmp_path / "allreduce.py").write_text(code)
    assert ("venv/bin/python -m tutti.run -n 2 --tag-output allreduce.py"
            in text)
    rc, out = run([PY, "-m", "tutti.run", "-n", "2", "--tag-output",
                   "allreduce.py"], env=clean_env(), cwd=str(tmp_path))
    assert rc == 0, out
    for want in ("[0] [1. 3. 5. 7.]", "[1] [1. 3. 5. 7.]"):
        assert want in out and "`%s`" % want in text, out
    for r in range(2):
        assert "[%d] (2, 4)" % r in out, out


def test_readme_store_example(tmp_path):
    text, code = readme_block("store.py")
    (tmp_path / "store.py").write_text(code)
    meet = tmp_path / "meet"
    meet.mkdir()
    assert "venv/bin/python store.py 0 2 /tmp/meet &" in text
    procs = [subprocess.Popen([PY, "store.py", str(r), "2", str(meet)],
                              cwd=str(tmp_path), env=clean_env(),
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
             for r in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    for r, (p, out) in enumerate(zip(procs, outs)):
        want = "%d [3. 3. 3.]" % r
        assert p.returncode == 0 and want in out, out
        assert "`%s`" % want in text


TORCHRUN = os.path.join(os.path.dirname(PY), "torchrun")


@pytest.mark.parametrize("nproc", [2, 3])
def test_torch_backend_against_references_and_gloo(nproc):
    """Every op of the "tutti" backend against references and gloo,
    point-to-point, subgroups, async work, errors, a timeout, CUDA tensors
    where there is a GPU (else a line saying so), DDP equal to gloo's."""
    rc, out = run([TORCHRUN, "--standalone", "--nproc-per-node", str(nproc),
                   os.path.join(HERE, "torch_worker.py")], env=clean_env(),
                  timeout=600)
    assert rc == 0, out[-6000:]
    for r in range(nproc):
        assert re.search(r"torch_worker: rank %d: ok \d+ checks" % r, out), \
            out[-6000:]
        # CUDA tensors ran, or a line says why not (no GPU here).
        assert re.search(r"torch_worker: rank %d: CUDA (checked on cuda|"
                         r"skipped: torch.cuda.is_available\(\) is False)"
                         % r, out), out[-6000:]
    # destroy_process_group says goodbye: no rank sees another vanish.
    assert "is gone" not in out, out[-6000:]


def test_readme_torchrun_example(tmp_path):
    text, code = readme_block("ddp.py")
    (tmp_path / "ddp.py").write_text(code)
    assert "torchrun --standalone --nproc-per-node 2 ddp.py" in text
    rc, out = run([TORCHRUN, "--standalone", "--nproc-per-node", "2",
                   "ddp.py"], env=clean_env(), cwd=str(tmp_path))
    assert rc == 0, out[-4000:]
    assert out.count("tensor([3., 3.])") == 2, out[-4000:]
    assert "`tensor([3., 3.])`" in text


# ---- registered memory ------------------------------------------------

SINGLE_COPY = re.compile(r"rank (\d+): received (\d+) message\(s\) by single "
                         r"copy \((\d+) of them from registered memory\)")


def registered_received(out):
    """The messages received by single copy from registered memory, summed
    over the teardown debug lines of every rank's shm channels."""
    found = SINGLE_COPY.findall(out)
    assert found, "no teardown debug line of shm in:\n" + out[-4000:]
    return sum(int(r) for _, _, r in found)


@pytest.mark.parametrize("registered", ["auto", "off"])
def test_collectives_on_registered_memory(registered):
    """allreduce, allgather, broadcast and alltoall on arrays of
    tutti.empty (float32, int64; 1, 4099 and 1 Mi + 3 elements) between 2
    processes, exact; the teardown debug lines count the messages received
    straight from the sender's registered memory: some with
    shm.registered auto (the default), none with it off."""
    env = clean_env()
    env["TUTTI_LOG_LEVEL"] = "debug"
    env["TUTTI_SHM_REGISTERED"] = registered
    rc, out = run([PY, "-m", "tutti.run", "-n", "2",
                   os.path.join(HERE, "mem_worker.py")], env=env)
    assert rc == 0, out[-4000:]
    for r in range(2):
        assert re.search(r"mem_worker: rank %d: ok \d+ checks" % r, out), \
            out[-4000:]
    n = registered_received(out)
    if registered == "auto":
        assert n > 0, "no message came from registered memory:\n" + \
            "\n".join(m.group(0) for m in SINGLE_COPY.finditer(out))
    else:
        assert n == 0, out[-4000:]


def test_torch_collectives_on_registered_memory():
    """all_reduce, all_gather_into_tensor, broadcast and all_to_all_single
    of the "tutti" backend on tensors of tutti.torch.empty, exact, some
    messages received straight from registered memory."""
    if subprocess.run([PY, "-c", "import torch"],
                      capture_output=True).returncode != 0:
        pytest.skip("torch is not importable by %s: pip install torch, "
                    "then reinstall tutti (--no-build-isolation)" % PY)
    env = clean_env()
    env["TUTTI_LOG_LEVEL"] = "debug"
    rc, out = run([TORCHRUN, "--standalone", "--nproc-per-node", "2",
                   os.path.join(HERE, "torch_mem_worker.py")], env=env)
    assert rc == 0, out[-6000:]
    for r in range(2):
        assert re.search(r"torch_mem_worker: rank %d: ok \d+ checks" % r,
                         out), out[-6000:]
    assert registered_received(out) > 0, out[-6000:]


MEM_UNITS = r'''
import gc, weakref
import numpy as np
import tutti
from tutti import Memory, TuttiError

for bad in (0, -1, -(1 << 70), 1 << 63):
    try:
        Memory(bad)
    except ValueError as e:
        assert "nbytes is %d" % bad in str(e), e
    else:
        raise AssertionError("Memory(%d) was taken" % bad)
try:
    Memory(1 << 62)  # beyond what the system maps: the library refuses
except TuttiError as e:
    assert e.name == "ERR_NO_MEMORY" and "tutti_mem_alloc" in e.detail, e
else:
    raise AssertionError("Memory(1 << 62) was taken")
for shape in (-1, (2, -3)):
    try:
        tutti.empty(shape)
    except ValueError as e:
        assert "negative" in str(e) and repr(shape) in str(e), e
    else:
        raise AssertionError("tutti.empty(%r) was taken" % (shape,))

m = Memory(10)
assert len(m) == m.nbytes == 10 and m.exports == 0
v = memoryview(m)
assert not v.readonly and v.format == "B" and v.ndim == 1
assert bytes(v) == bytes(10) and m.exports == 1
v.release()
assert m.exports == 0
assert tutti.registered(m) and not tutti.registered(bytearray(10))

# An array keeps its Memory: freed only once the last view goes.
a = tutti.zeros((3, 5), "int64")
assert a.shape == (3, 5) and a.dtype == np.int64 and not a.any()
mem = a
while not isinstance(mem, Memory):  # numpy's bases, a memoryview's obj
    mem = mem.obj if isinstance(mem, memoryview) else mem.base
ref = weakref.ref(mem)
del mem
b = a[1:, ::2]
del a
gc.collect()
assert ref() is not None and tutti.registered(b)
b[...] = 7
del b
gc.collect()
assert ref() is None, "the Memory outlived its arrays"

assert not tutti.registered(np.empty(4099, "float32"))
assert not tutti.registered(np.zeros(1 << 20))
e = tutti.empty(0)
assert e.shape == (0,) and tutti.registered(e)
assert tutti.empty((), "int64").shape == ()
print("mem units: ok")

try:
    import torch
    import tutti.torch
except ImportError as e:
    print("mem units: torch skipped:", e)
    raise SystemExit(0)
t = tutti.torch.empty((4, 3), torch.float64)
assert t.shape == (4, 3) and t.dtype == torch.float64
assert not t.any() and tutti.registered(t) and tutti.registered(t[:, 1])
assert not tutti.registered(torch.empty(4, 3))
assert not tutti.registered(t.clone())
assert tutti.registered(t.requires_grad_())
assert tutti.torch.zeros(0).shape == (0,)
# torch.frombuffer holds the Memory (not a buffer of it) until the
# tensor's storage goes.
m = Memory(64)
t = torch.frombuffer(m, dtype=torch.int32)
assert m.exports == 0
ref = weakref.ref(m)
del m
gc.collect()
assert ref() is not None
t += 1
del t
gc.collect()
assert ref() is None, "the Memory outlived its tensor"
print("mem units: torch ok")
'''


def test_registered_memory_units():
    """Memory refuses sizes <= 0 and past Py_ssize_t (ValueError naming
    them), the library's refusal is a TuttiError; the buffer protocol,
    lifetimes through numpy's and torch's views, registered() of views,
    copies, numpy's and torch's own memory."""
    rc, out = run([PY, "-c", MEM_UNITS], env=clean_env())
    assert rc == 0 and "mem units: ok" in out, out
    assert "mem units: torch" in out, out
