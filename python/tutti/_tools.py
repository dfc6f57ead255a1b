"""Where the Tutti tools that belong to the loaded libtutti lie."""
import os
import shutil

from tutti import _tutti


def tool(name):
    """The path of tool @name (tutti-run, tutti-info) of the libtutti
    this package loaded: beside it in a prefix (bin/ of the wheel's
    bundled prefix, or of an install), in its build tree's tools/, else
    on PATH.  FileNotFoundError naming the places looked at."""
    lib = _tutti.library_path()
    tried = []
    if lib:
        libdir = os.path.dirname(os.path.realpath(lib))
        up = os.path.dirname(libdir)
        # A prefix: <prefix>/lib/libtutti.so; a build tree:
        # <build>/core/.libs/libtutti.so.
        cands = [os.path.join(up, "bin", name),
                 os.path.join(os.path.dirname(up), "tools", name)]
        for c in cands:
            tried.append(c)
            if os.path.isfile(c) and os.access(c, os.X_OK):
                return c
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError("%s: not beside libtutti (%s) nor on PATH"
                            % (name, ", ".join(tried) or lib))


def lib_env():
    """The environment for a tool of a bundled prefix: its lib/ first on
    LD_LIBRARY_PATH, so that libtutti finds the libraries bundled beside
    it (a tool's own RUNPATH serves only its direct dependencies)."""
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(__file__), "_prefix", "lib")
    if os.path.isdir(lib):
        old = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = lib + (":" + old if old else "")
    return env
