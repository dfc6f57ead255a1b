"""What the test workers share (imported from beside them: a script's
folder is first on sys.path): one write per line, checks counted and
failures kept, and the closing lines a test asserts on."""
import os

failed = []
_count = [0]


def say(line):
    """One write per line: ranks' lines never interleave."""
    os.write(1, (line + "\n").encode())


def expect(cond, what):
    """Counts a check; keeps @what if @cond is false."""
    _count[0] += 1
    if not cond:
        failed.append(what)


def report(who, ok_detail=""):
    """Says "<who>: FAILED <what>" for the first 30 failures, or "<who>:
    ok N checks<ok_detail>"; the exit status a worker ends with."""
    for what in failed[:30]:
        say("%s: FAILED %s" % (who, what))
    if not failed:
        say("%s: ok %d checks%s" % (who, _count[0], ok_detail))
    return 1 if failed else 0
