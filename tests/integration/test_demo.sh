#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The README's first command, end to end and non-interactive: tools/demo
# --count 3 (dependencies, build, lockstep-fabric with a lockstepd per
# host, the live mesh three times). Checked: it exits 0; each of the three
# mesh tables has a row per host and an RTT in every off-diagonal cell; it
# leaves no lab directory and no process behind.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIP: must run as root"; exit 77; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
timeout 240 tools/demo --count 3 > "$out" 2>&1 || rc=$?
dir=$(grep -o '/tmp/lockstep-demo\.[A-Za-z0-9]*' "$out" | head -n 1 || true)
/usr/bin/python3 - "$out" "$rc" "$dir" <<'PY'
import os, re, subprocess, sys
text = open(sys.argv[1], errors="replace").read()
rc, d = int(sys.argv[2]), sys.argv[3]
tables = text.split("every 1.0s")[1:]
ok = True
def check(cond, what):
    global ok
    print("%s  %s" % ("ok  " if cond else "FAIL", what))
    ok = ok and cond
check(rc == 0, "tools/demo --count 3 exits 0 (%d)" % rc)
check(len(tables) == 3, "three mesh tables (%d)" % len(tables))
for t in tables:
    rows = [l.split() for l in t.splitlines() if re.match(r"^h\d+ ", l)]
    cells = [c for r in rows for i, c in enumerate(r[1:]) if c != "-"]
    check(len(rows) == 4 and len(cells) == 4 * 6 and
          all(re.match(r"^\d+(\.\d+)?$", c) for c in cells),
          "a row per host, an RTT in every off-diagonal cell: %s" % [r[0] for r in rows])
check(bool(d) and not os.path.exists(d), "the lab directory %s is gone" % d)
left = [p for p in subprocess.run(["pgrep", "-f", d or "lockstep-demo"], capture_output=True,
                                  text=True).stdout.split() if int(p) != os.getpid()]
check(d != "" and not left, "no process of the demo left (%s)" % left)
print("%s" % ("1 passed, 0 failed" if ok else "0 passed, 1 failed"))
if not ok:
    print(text[-3000:])
sys.exit(0 if ok else 1)
PY
