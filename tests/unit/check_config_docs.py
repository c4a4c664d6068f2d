#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""docs/config.md's annotated example is config/examples/lockstepd.json:
the jsonc block after "This is `config/examples/<file>`", its // notes
removed, must parse to the same JSON as the file (issue 30: docs that
disagreed with the example files; the example had probe.acquire_rate 1
and no capture.dir when the annotated copy had 4 and the directory).
Every key the file sets must also be in docs/config.md's tables. And
README.md's command that runs an example enables the lcores the example
polls on (it once gave -l 2 to a file that put a port on lcore 3).

  check_config_docs.py SOURCE_ROOT
"""
import json
import os
import re
import sys


def strip_notes(text):
    """The block without // notes (outside strings)."""
    out = []
    for line in text.split("\n"):
        quoted, keep = False, []
        for k, ch in enumerate(line):
            if ch == '"' and (k == 0 or line[k - 1] != "\\"):
                quoted = not quoted
            if not quoted and line.startswith("//", k):
                break
            keep.append(ch)
        out.append("".join(keep))
    return "\n".join(out)


def differences(a, b, where=""):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a:
                yield "%s.%s: in the file, not in the docs" % (where, k)
            elif k not in b:
                yield "%s.%s: in the docs, not in the file" % (where, k)
            else:
                yield from differences(a[k], b[k], where + "." + k)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from differences(x, y, "%s[%d]" % (where, i))
    elif a != b:
        yield "%s: docs %r, file %r" % (where, a, b)


def keys(obj, out):
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(k)
            keys(v, out)
    elif isinstance(obj, list):
        for v in obj:
            keys(v, out)
    return out


def lcore_list(text):
    """DPDK's -l: "2-3,5" -> {2, 3, 5}."""
    out = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def readme_commands(root):
    """Failures of README.md's `lockstepd -l LIST ... --config config/examples/F`."""
    readme = open(os.path.join(root, "README.md")).read()
    runs = re.findall(r"lockstepd -l (\S+) .*?--config (config/examples/\S+)", readme)
    if not runs:
        return ["README.md runs no example with lockstepd -l"]
    bad = []
    for lcores, path in runs:
        with open(os.path.join(root, path)) as f:
            cfg = json.load(f)
        want = {p["lcore"] for p in cfg.get("ports", []) if "lcore" in p}
        want |= set(cfg.get("bridge", {}).get("lcores", []))
        have = lcore_list(lcores)
        if not want <= have:
            bad.append("README.md runs %s with -l %s, but it polls on lcores %s" %
                       (path, lcores, sorted(want)))
        else:
            print("ok    README.md's -l %s enables %s's lcores %s" % (lcores, path, sorted(want)))
    return bad


def main():
    root = sys.argv[1]
    doc = open(os.path.join(root, "docs", "config.md")).read()
    blocks = re.findall(r"This is\s+`(config/examples/[^`]+)`:\s*```jsonc\n(.*?)```", doc, re.S)
    bad = 0
    if not blocks:
        print("FAIL  no annotated example in docs/config.md")
        return 1
    for path, block in blocks:
        with open(os.path.join(root, path)) as f:
            shipped = json.load(f)
        try:
            annotated = json.loads(strip_notes(block))
        except ValueError as e:
            print("FAIL  docs/config.md's copy of %s does not parse without its notes: %s" % (path, e))
            bad += 1
            continue
        diff = list(differences(annotated, shipped))
        for d in diff:
            print("FAIL  %s: %s" % (path, d))
        bad += len(diff)
        if not diff:
            print("ok    docs/config.md's annotated %s is the file" % path)
        missing = sorted(k for k in keys(shipped, set()) if "`%s`" % k not in doc)
        for k in missing:
            print("FAIL  %s sets %s, which no table in docs/config.md names" % (path, k))
        bad += len(missing)
        if not missing:
            print("ok    every key %s sets is in docs/config.md" % path)
    for b in readme_commands(root):
        print("FAIL  " + b)
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
