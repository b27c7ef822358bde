"""tap.py — what the python shell tests share: TAP output.

report(name, ok, detail) prints "ok N - name" / "not ok N - name" (detail as
"# " lines); done() prints the plan "1..N"."""
import sys

results = []


def report(name, ok, detail=""):
    results.append(name)
    print(("ok %d - %s" if ok else "not ok %d - %s") % (len(results), name))
    if not ok and detail:
        for line in str(detail).splitlines():
            print("# " + line)
    sys.stdout.flush()


def done():
    print("1..%d" % len(results))
