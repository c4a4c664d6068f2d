# SPDX-License-Identifier: BSD-3-Clause
# Sourced by tools/test and tools/test_sanitize.
#
# ls_meson_test BUILDDIR [meson test args]: run meson test in BUILDDIR, then
# print "tests: N passed, N failed, N skipped" from the testlog.json that this
# run wrote (deleted first, so a run that matched no test cannot print the
# previous run's counts). Returns 1 when meson failed, when no test ran, or
# when any test skipped (unless LS_ALLOW_SKIP=1, which says so loudly).
# OK and EXPECTEDFAIL count as passed; FAIL, TIMEOUT, ERROR, UNEXPECTEDPASS,
# INTERRUPT as failed.
ls_meson_test() {
	local dir=$1 rc=0
	shift
	rm -f "$dir/meson-logs/testlog.json"
	meson test -C "$dir" --print-errorlogs "$@" || rc=$?
	python3 - "$dir/meson-logs/testlog.json" "${LS_ALLOW_SKIP:-0}" <<'PY' || rc=1
import json, os, sys
log, allow = sys.argv[1], sys.argv[2] == "1"
if not os.path.exists(log):
    print("tests: 0 passed, 0 failed, 0 skipped -- FAIL: meson ran no test (%s not written)" % log)
    sys.exit(1)
n = {"passed": 0, "failed": 0, "skipped": 0}
skipped = []
for line in open(log):
    r = json.loads(line)
    res = r["result"]
    if res in ("OK", "EXPECTEDFAIL"):
        n["passed"] += 1
    elif res == "SKIP":
        n["skipped"] += 1
        skipped.append(r["name"])
    else:
        n["failed"] += 1
print("tests: %(passed)d passed, %(failed)d failed, %(skipped)d skipped" % n)
bad = n["failed"] > 0 or n["passed"] + n["failed"] + n["skipped"] == 0
if skipped:
    bar = "!" * 72
    if allow:
        print(bar)
        print("LS_ALLOW_SKIP=1: %d SKIPPED test(s) NOT RUN, and not counted as failures:" % len(skipped))
        print("  " + " ".join(skipped))
        print("This is not a CI result: CI runs everything (root, tools/deps).")
        print(bar)
    else:
        print(bar)
        print("FAIL: %d test(s) SKIPPED: %s" % (len(skipped), " ".join(skipped)))
        print("Everything runs on the README's machine (Debian 12, root, tools/deps):")
        print("a skip means this runner cannot run the suite. LS_ALLOW_SKIP=1 to opt out.")
        print(bar)
        bad = True
sys.exit(1 if bad else 0)
PY
	return $rc
}
