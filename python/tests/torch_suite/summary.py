"""Summary of a pytest JUnit XML file written by ./run: failing and
erroring tests grouped by a one-line reason (the exception line of the
rank's traceback, else the parent's), skips grouped by reason with
counts, then the totals as one plain line:
    N passed, N failed, N skipped[, N errors]

    python summary.py JUNIT.xml
"""
import collections
import re
import sys
import xml.etree.ElementTree as ET

# "RuntimeError: ...", "torch.distributed.DistBackendError: ...",
# "AssertionError: ..." as a traceback's last line prints them, maybe
# behind pytest's "E" or a "[rank0]:" prefix.
EXC = re.compile(r"^(?:E\s)?\s*(?:\[rank\d+\]:)?\s*("
                 r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*"
                 r"(?:Error|Exception|Timeout)\b.*)$")


def reason(text):
    """One line saying why a test failed: the last exception line of
    the text, but not the parent's "Process N exited with error code 10
    and exception:" that leads the rank's traceback."""
    lines = [re.sub(r"^E\s", "", ln).strip()
             for ln in (text or "").splitlines()]
    found = None
    for i, line in enumerate(lines):
        m = EXC.match(line)
        if not m or "exited with error code" in line:
            continue
        found = m.group(1).strip()
        # A message that goes on below its first line ("Tensor-likes
        # are not close!" then the mismatch): keep the next line too.
        if found.endswith((":", "!")):
            nxt = [ln for ln in lines[i + 1:i + 3] if ln]
            if nxt:
                found = f"{found} {nxt[0]}"
    if found is None:
        m = re.search(r"Process \d+ exited with error code -?\d+", text)
        found = m.group(0) if m else "(no exception line)"
    # One group for the same error seen on different ranks.
    return re.sub(r"\brank \d+\b", "rank N", found)[:160]


def main(path):
    root = ET.parse(path).getroot()
    counts = collections.Counter()
    failed = collections.defaultdict(list)
    skipped = collections.Counter()
    for case in root.iter("testcase"):
        name = case.get("name")
        bad = case.find("failure")
        kind = "failed"
        if bad is None:
            bad = case.find("error")
            kind = "errors"
        skip = case.find("skipped")
        if bad is not None:
            counts[kind] += 1
            text = bad.text or bad.get("message") or ""
            failed[reason(text)].append(f"{name}"
                                        + (" (error)" if kind == "errors"
                                           else ""))
        elif skip is not None:
            counts["skipped"] += 1
            msg = (skip.get("message") or "").strip()
            msg = re.sub(r"^(?:Skipped|unittest\.case\.SkipTest):\s*", "",
                         msg)
            skipped[msg.splitlines()[0] if msg else "(no reason)"] += 1
        else:
            counts["passed"] += 1
    if failed:
        print("== failing tests, by reason")
        for why, names in sorted(failed.items(), key=lambda kv: -len(kv[1])):
            print(f"-- {len(names)}: {why}")
            for n in sorted(names):
                print(f"     {n}")
    if skipped:
        print("== skipped tests, by reason")
        for why, n in skipped.most_common():
            print(f"{n:4d} {why}")
    line = (f"{counts['passed']} passed, {counts['failed']} failed, "
            f"{counts['skipped']} skipped")
    if counts["errors"]:
        line += f", {counts['errors']} errors"
    print(line)
    return 1 if counts["failed"] or counts["errors"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
