"""Builds the extension tutti._tutti over libtutti, in one of three ways.

TUTTI_PREFIX=DIR    link the library installed in DIR (its include/ and
                    lib/); nothing bundled.
TUTTI_BUILD_DIR=DIR link the library of a configured and built tree (DIR is
                    its build directory); nothing bundled, for development
                    and the test suite.
neither             bundle: the install of ../build (or TUTTI_STAGE, a
                    prefix a DESTDIR install made) is copied into the
                    package as tutti/_prefix (libtutti, its modules, its
                    default config, the tools, and the shared libraries
                    libtutti needs that the system may lack), so the wheel
                    runs anywhere; libtutti finds its modules and config
                    from where it lies.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
SOURCES = ["ext/module.c", "ext/group.c", "ext/future.c", "ext/wait.c",
           "ext/view.c", "ext/store.c", "ext/errors.c", "ext/mem.c"]
WARN = ["-Wall", "-Wextra", "-Werror", "-Wno-missing-field-initializers",
        "-Wno-cast-function-type", "-std=gnu11"]
# The libraries libtutti loads that a machine without Tutti's build
# dependencies lacks: bundled beside it.
BUNDLED_DEPS = ("libyaml-0.so", "libltdl.so", "libsodium.so")


def fail(msg):
    sys.exit("tutti setup.py: " + msg)


def staged_prefix():
    """A prefix holding an install of Tutti: TUTTI_STAGE, else ../build
    installed with DESTDIR into python/build/stage."""
    stage = os.environ.get("TUTTI_STAGE")
    if stage:
        return stage
    build = os.path.join(TOP, "build")
    noted = os.path.join(HERE, "BUILD_TREE")
    if not os.path.exists(os.path.join(build, "Makefile")) and \
            os.path.exists(noted):
        # A wheel built from an sdist (python -m build): the tree the
        # sdist was made beside.
        with open(noted) as f:
            build = f.read().strip()
    if not os.path.exists(os.path.join(build, "Makefile")):
        fail("no TUTTI_PREFIX, TUTTI_BUILD_DIR or TUTTI_STAGE, and no "
             "configured tree at %s (run ./build.sh build first)" % build)
    dest = os.path.join(HERE, "build", "stage")
    shutil.rmtree(dest, ignore_errors=True)
    subprocess.run(["make", "-s", "-C", build, "install", "DESTDIR=" + dest],
                   check=True, stdout=subprocess.DEVNULL)
    prefix = subprocess.run(["sed", "-n", "s/^prefix = //p",
                             os.path.join(build, "Makefile")],
                            check=True, capture_output=True,
                            text=True).stdout.strip()
    return dest + prefix


def deps_of(lib):
    """Paths of the shared libraries @lib needs that are bundled."""
    out = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.split("=>")
        if len(parts) == 2 and parts[0].strip().startswith(BUNDLED_DEPS):
            path = parts[1].split("(")[0].strip()
            if os.path.exists(path):
                found.append(path)
    return found


class BuildExt(build_ext):
    def finalize_options(self):
        super().finalize_options()
        # Rebuilt each time: the library it links (and its RUNPATH) may
        # have moved while the sources stayed the same.
        self.force = True

    def run(self):
        if MODE[0] == "bundle":
            self.bundle(MODE[1])
        super().run()

    def bundle(self, prefix):
        dest = os.path.join(self.build_lib, "tutti", "_prefix")
        shutil.rmtree(dest, ignore_errors=True)
        for sub in ("lib", "bin", "etc"):
            src = os.path.join(prefix, sub)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(dest, sub), symlinks=True,
                                ignore=shutil.ignore_patterns(
                                    "*.la", "*.a", "pkgconfig"))
        lib = os.path.join(dest, "lib")
        # A wheel stores no symbolic links: keep libtutti under its soname
        # only (what the extension and the tools ask for), once.
        sonames = [f for f in os.listdir(lib)
                   if f.startswith("libtutti.so.") and f.count(".") == 2]
        if len(sonames) != 1:
            fail("expected one libtutti.so.N in %s/lib, found %s"
                 % (prefix, sonames or "none"))
        soname = os.path.join(lib, sonames[0])
        real = os.path.realpath(soname)
        os.unlink(soname)
        shutil.copy2(real, soname)
        for f in os.listdir(lib):
            if f.startswith("libtutti.so") and f != sonames[0]:
                os.unlink(os.path.join(lib, f))
        libs = [soname] + [os.path.join(lib, "tutti", f)
                           for f in os.listdir(os.path.join(lib, "tutti"))
                           if f.endswith(".so")]
        for dep in sorted({d for so in libs for d in deps_of(so)}):
            shutil.copy2(dep, os.path.join(lib, os.path.basename(dep)))


class Sdist(sdist):
    """An sdist notes the build tree beside it, so that python -m build
    (a wheel made from the sdist, unpacked elsewhere) bundles its
    install."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        build = os.path.join(TOP, "build")
        if os.path.exists(os.path.join(build, "Makefile")):
            with open(os.path.join(base_dir, "BUILD_TREE"), "w") as f:
                f.write(build + "\n")


def configure():
    """(mode, include dirs, library dirs, runtime library dirs)."""
    prefix = os.environ.get("TUTTI_PREFIX")
    build = os.environ.get("TUTTI_BUILD_DIR")
    if prefix:
        lib = os.path.join(prefix, "lib")
        return ("prefix", prefix), [os.path.join(prefix, "include")], \
            [lib], [lib]
    if build:
        build = os.path.abspath(build)
        lib = os.path.join(build, "core", ".libs")
        if not os.path.exists(os.path.join(lib, "libtutti.so")):
            fail("no %s/libtutti.so: build the tree first (./build.sh "
                 "build)" % lib)
        return ("build", build), [os.path.join(TOP, "include")], [lib], [lib]
    stage = staged_prefix()
    lib = os.path.join(stage, "lib")
    return ("bundle", stage), [os.path.join(stage, "include")], [lib], []


def torch_extension():
    """tutti._torch (the c10d backend of tutti.torch), where torch is
    importable here and TUTTI_TORCH is not 0: compiled with torch's
    include and library paths and its C++ ABI, by the same build_ext as
    the C extension (torch's own would compile the C files as C++)."""
    if os.environ.get("TUTTI_TORCH", "") == "0":
        return []
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError:
        return []
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", 1))
    # torch's headers as system headers: their warnings are not ours.
    system = [f for p in cpp_extension.include_paths()
              for f in ("-isystem", p)]
    ext = cpp_extension.CppExtension(
        "tutti._torch", ["torch/backend.cpp"], include_dirs=list(INCS),
        library_dirs=list(LIBDIRS), runtime_library_dirs=list(RPATHS),
        libraries=["tutti"],
        extra_compile_args=["-std=c++20", "-O2", "-Wall", "-Wextra", "-Werror",
                            "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi,
                            "-DTORCH_EXTENSION_NAME=_torch",
                            "-DTORCH_API_INCLUDE_EXTENSION_H"] + system,
        extra_link_args=LINK_ARGS)
    # CUDA tensors: where torch has CUDA and the toolkit's headers are
    # here (CUDA_HOME, else /usr/local/cuda), the backend takes the
    # current stream of a tensor's device from c10_cuda.
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    if (torch.version.cuda and os.environ.get("TUTTI_TORCH_CUDA", "") != "0"
            and os.path.exists(os.path.join(cuda, "include",
                                            "cuda_runtime_api.h"))):
        ext.extra_compile_args += ["-DTUTTI_TORCH_CUDA=1", "-isystem",
                                   os.path.join(cuda, "include")]
        ext.libraries.append("c10_cuda")
    ext.include_dirs = list(INCS)
    return [ext]


MODE, INCS, LIBDIRS, RPATHS = configure()
LINK_ARGS = ["-Wl,-rpath,$ORIGIN/_prefix/lib"] if MODE[0] == "bundle" else []


setup(
    ext_modules=[Extension(
        "tutti._tutti", SOURCES, include_dirs=INCS, library_dirs=LIBDIRS,
        runtime_library_dirs=RPATHS, libraries=["tutti"],
        extra_compile_args=WARN, extra_link_args=LINK_ARGS,
        depends=["ext/tutti_py.h"])] + torch_extension(),
    package_data={"tutti": ["py.typed", "*.pyi"]},
    cmdclass={"build_ext": BuildExt, "sdist": Sdist},
    # One build directory per mode: an extension linked for one is never
    # taken as up to date for another.
    options={"build": {"build_base": os.path.join("build", MODE[0])}},
)
