"""python -m tutti.info [tutti-info options]: what tutti-info prints, for
the libtutti this package loaded (its modules, implementations, settings
and configuration); --help lists the options."""
import os
import sys

from tutti._tools import lib_env, tool


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    path = tool("tutti-info")
    sys.stdout.flush()
    os.execve(path, [path] + list(args), lib_env())


if __name__ == "__main__":
    main()
