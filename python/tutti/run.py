"""python -m tutti.run [tutti-run options] -n N script.py [args]: start N
ranks of this Python running script.py, through the tutti-run of the
libtutti this package loaded (its options: --timeout, --grace,
--tag-output, --bind-to, --job-id; --help prints them).  A program that is
not a Python file (or "-m module", "-c code") is given to this Python as
is: python -m tutti.run -n 2 -m mypkg.train."""
import os
import sys

from tutti._tools import lib_env, tool

# tutti-run's options that take a value.
_WITH_VALUE = {"-n", "--np", "--timeout", "--grace", "--bind-to",
               "--job-id"}


def command(args):
    """tutti-run's argument list for python -m tutti.run @args."""
    opts = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-m", "-c"):  # Python's: the program starts here
            break
        if not a.startswith("-") or a == "-":
            break
        opts.append(a)
        if a in _WITH_VALUE and i + 1 < len(args):
            opts.append(args[i + 1])
            i += 1
        i += 1
    prog = args[i:]
    if not prog:
        return opts  # --help, --version, or tutti-run's own error
    return opts + [sys.executable] + prog


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    path = tool("tutti-run")
    sys.stdout.flush()
    os.execve(path, [path] + command(list(args)), lib_env())


if __name__ == "__main__":
    main()
