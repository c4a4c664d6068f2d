#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: peer.add is atomic from the operator's view (issue 28).

A peer.add whose lcore did not take the peer in time used to leave it half
added: the lcore probing it, the registry without it, so it could be neither
seen nor deleted, and adding it again failed with "File exists". Here
lockstepd waits only 1 us for its lcore (LOCKSTEPD_TEST_MSG_WAIT_US, a test
hook), so most peer.add calls time out. Each must answer either ok (and the
peer is listed) or "not added" (and it is not, and adding it again is not
refused as existing).
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import lslab  # noqa: E402
from test_control import Conn, config  # noqa: E402


def main():
    c = lslab.Checks("peer-atomic")
    lslab.need_root()
    tmp = tempfile.mkdtemp(prefix="ls-atomic-")
    os.environ["LOCKSTEPD_TEST_MSG_WAIT_US"] = "1"
    cfg = config(tmp, name="at1")
    cfg["peers"] = []
    d = lslab.Daemon(cfg, tmp, "at1", prefix="lsat%d" % os.getpid()).start()
    try:
        c.check(lslab.wait_until(lambda: os.path.exists(d.sock), 20), "daemon created its socket")
        k = Conn(d.sock)
        lslab.wait_until(lambda: k.call("status").get("ok"), 10)
        added, timed_out, other = set(), 0, []
        for rnd in range(3):           # the second and third rounds retry the failures
            for i in range(30):
                name = "z%d" % i
                if name in added:
                    continue
                r = k.call("peer.add", {"name": name, "addr": "10.7.1.%d" % (10 + i)})
                if r.get("ok"):
                    added.add(name)
                elif "not added" in r["error"]["message"]:
                    timed_out += 1
                else:
                    other.append(r["error"]["message"])
        c.check(timed_out > 0, "some peer.add timed out (%d), so the test tests something"
                % timed_out)
        c.check(not other, "no peer.add failed otherwise (a half-added peer answers "
                "'File exists' on retry): %s" % other[:3])
        listed = {p["name"] for p in k.call("peers")["result"]}
        c.check(listed == added, "peers lists exactly the peers added (%d listed, %d ok)"
                % (len(listed), len(added)))
    finally:
        d.stop()
    c.finish()


if __name__ == "__main__":
    main()
