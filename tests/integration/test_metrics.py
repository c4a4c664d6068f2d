#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration: lockstepd's /metrics read by the real thing.

Two lockstepd over memif probe each other; n1 serves /metrics on a loopback
port. Checks:
  - GET /metrics answers text/plain in the exposition format, and
    `promtool check metrics` (Debian's prometheus package) finds no problem;
  - the figures are the control socket's: path RTT quantiles for every path
    of n2, peer counters, the reflector's replies, the info series;
  - a real Prometheus server, started here on another loopback port with a
    scrape interval of 1 s, scrapes the daemon and answers a PromQL query
    (lockstep_path_up summed over n2's paths = the paths configured);
  - other paths get 404, other methods 405; the control socket keeps
    answering while scrapes run;
  - `lockstepctl mesh --prometheus` draws the fleet's matrix from that
    server (both daemons scraped, and a third target nobody serves): the
    cells are the sockets' own mesh a moment apart, the dead target a row
    of "?" and exit status 3, the SVG renders.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "lab"))
import lslab  # noqa: E402

PATHS = 3


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def node(tmp, i, other, metrics_port):
    cfg = {
        "node": {"name": "n%d" % i, "id": i},
        "ports": [{"name": "p0",
                   "dev": "net_memif0,role=%s,id=0,socket=%s/m.sock" %
                          ("server" if i == 1 else "client", tmp),
                   "mac": "02:00:00:00:0%d:00" % i, "ipv4": "192.168.77.%d/24" % i}],
        "peers": [{"name": "n%d" % other, "addr": "192.168.77.%d" % other}],
        "probe": {"interval_us": 10000, "paths": PATHS},
        "control": {"socket": os.path.join(tmp, "n%d.sock" % i), "peers_file": ""},
        "sync": {"shm": ""},
        "idle": {"backoff": True, "sleep_us": 100},
    }
    if metrics_port:
        cfg["metrics"] = {"address": "127.0.0.1", "port": metrics_port}
    return lslab.Daemon(cfg, tmp, "n%d" % i)


def get(url, method="GET"):
    try:
        r = urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=5)
        return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, "", ""


def series(text):
    """{(name, frozenset(labels)): value} from the exposition text."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, val = line.rsplit(" ", 1)
        name, _, labels = key.partition("{")
        lab = frozenset(tuple(kv.split("=", 1)) for kv in labels.rstrip("}").split(",")
                        if kv) if labels else frozenset()
        out[(name, lab)] = float(val)
    return out


def fleet_mesh(c, tmp, pport, dead, n1, n2):
    """lockstepctl mesh --prometheus against the sockets' mesh."""
    ctl = os.path.join(os.environ.get("LS_BUILD", "build"), "tools", "lockstepctl", "lockstepctl")
    purl = "http://127.0.0.1:%d" % pport
    def count(expr):
        try:
            res = json.load(urllib.request.urlopen("%s/api/v1/query?query=%s" % (
                purl, urllib.parse.quote(expr)), timeout=2))["data"]["result"]
            return float(res[0]["value"][1]) if res else 0
        except (OSError, ValueError, KeyError):
            return -1
    c.check(lslab.wait_until(lambda: count('count(lockstep_path_rtt_seconds{quantile="0.5"})')
                             == 2 * PATHS and count("count(up == 0)") == 1, 40),
            "Prometheus has both nodes' %d path RTTs and the dead target's up 0" % (2 * PATHS))
    svg = os.path.join(tmp, "fleet.svg")
    r = subprocess.run([ctl, "mesh", "--prometheus", purl, "--color", "never", "--svg", svg],
                       capture_output=True, text=True, timeout=30)
    rows = {ln.split()[0]: ln.split()[1:] for ln in r.stdout.splitlines()[1:]
            if ln.strip() and not ln.startswith("NODE")}
    j = subprocess.run([ctl, "--json", "mesh", "--prometheus", purl], capture_output=True,
                       text=True, timeout=30)
    sock = subprocess.run([ctl, "--json", "-s", n1.sock, "-s", n2.sock, "mesh", "--window",
                           "10s"], capture_output=True, text=True, timeout=30)
    try:
        fleet, own = json.loads(j.stdout), json.loads(sock.stdout)
    except ValueError:
        fleet, own = {}, {}

    def cell(m, a, b):
        for pe in m.get(a, {}).get("peers", []):
            if pe["name"] == b:
                v = sorted(p["rtt_p50_ns"] for p in pe["paths"] if p.get("rtt_p50_ns"))
                return v[len(v) // 2] if v else None
        return None
    pairs = [(a, b, cell(fleet, a, b), cell(own, a, b)) for a, b in (("n1", "n2"), ("n2", "n1"))]
    c.check(r.returncode == 3 and rows.get("n1") and rows.get("n2") and
            rows.get("127.0.0.1:%d" % dead) == ["?", "?"],
            "mesh --prometheus: rows n1, n2 and the dead target's of '?', exit 3 (%d): %s"
            % (r.returncode, r.stdout.strip().replace("\n", " | ") + r.stderr.strip()))
    c.check(all(f and o and abs(f - o) <= 0.5 * o for _, _, f, o in pairs),
            "each cell is the sockets' mesh a moment apart (RTT p50 ns, Prometheus vs "
            "sockets): %s" % pairs)
    rs = subprocess.run(["rsvg-convert", "-o", svg + ".png", svg], capture_output=True)
    c.check(rs.returncode == 0 and os.path.getsize(svg + ".png") > 1000,
            "the fleet's SVG renders (rsvg-convert rc %d)" % rs.returncode)
    # grouped by a target label the scrape configuration sets (leaf)
    g = subprocess.run([ctl, "mesh", "--prometheus", purl, "--group-by", "leaf", "--color",
                        "never"], capture_output=True, text=True, timeout=30)
    grows = [ln.split() for ln in g.stdout.splitlines()[2:] if ln.strip()]
    c.check(grows and grows[0][:2] == ["GROUP", "NODE"] and
            [r[:2] for r in grows[1:]] == [["leaf1", "n1"], ["leaf2", "127.0.0.1:%d" % dead],
                                          ["leaf2", "n2"]],
            "mesh --prometheus --group-by leaf: %s" % g.stdout.strip().replace("\n", " | "))


def main():
    lslab.exit_on_signals()
    c = lslab.Checks("metrics")
    lslab.need_root()
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            c.check(False, "%s installed (tools/deps: prometheus)" % tool)
            c.finish()
    tmp = tempfile.mkdtemp(prefix="ls-metrics-")
    mport, pport, mport2, dead = free_port(), free_port(), free_port(), free_port()
    n1, n2 = node(tmp, 1, 2, mport), node(tmp, 2, 1, mport2)
    prom = None
    try:
        n1.start()
        n2.start()
        # both ways: n1's reflector counts n2's probes (below)
        c.check(lslab.wait_until(lambda: all(os.path.exists(n.sock) and any(
            p["received"] > 20 for p in lslab.call(n.sock, "peers")) for n in (n1, n2)), 30),
            "two lockstepd probing each other")
        c.check(lslab.wait_until(lambda: all(
            p["rtt_p50_ns"] is not None for p in lslab.call(
                n1.sock, "paths", {"window": "10s"})["peers"][0]["paths"]), 30),
            "every path has an RTT median in its 10 s window")
        url = "http://127.0.0.1:%d/metrics" % mport
        st, ctype, text = get(url)
        c.check(st == 200 and ctype.startswith("text/plain"),
                "GET /metrics: %d %s" % (st, ctype))
        r = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                           capture_output=True)
        c.check(r.returncode == 0, "promtool check metrics: clean (%s)" %
                (r.stdout + r.stderr).strip()[:300])
        s = series(text)
        rtt = {dict(k[1])['path']: v for k, v in s.items()
               if k[0] == "lockstep_path_rtt_seconds" and ("quantile", '"0.5"') in k[1]}
        paths = lslab.call(n1.sock, "paths", {"window": "10s"})["peers"][0]["paths"]
        c.check(len(rtt) == PATHS and all(0 < v < 0.1 for v in rtt.values()),
                "an RTT median per path of n2, in seconds: %s" % rtt)
        # the socket's median and the page's are the same figure a moment apart
        p0 = [p for p in paths if p["path"] == 0][0]
        c.check('"0"' in rtt and
                abs(rtt['"0"'] - p0["rtt_p50_ns"] / 1e9) <= 0.5 * p0["rtt_p50_ns"] / 1e9,
                "path 0's median as the socket has it: %.6f s vs %.6f s" %
                (rtt.get('"0"', -1), p0["rtt_p50_ns"] / 1e9))
        c.check(s.get(("lockstep_peer_up", frozenset({("peer", '"n2"')}))) == 1.0,
                "lockstep_peer_up{peer=n2} 1")
        c.check(s.get(("lockstep_reflector_replies_total", frozenset()), 0) > 0,
                "reflector replies counted: %s" %
                s.get(("lockstep_reflector_replies_total", frozenset())))
        c.check(("lockstep_info", frozenset({("node", '"n1"'), ("version", '"0.1.0"')}))
                in s, "lockstep_info{node=n1}")
        c.check(get("http://127.0.0.1:%d/other" % mport)[0] == 404, "other paths: 404")
        c.check(get(url, "POST")[0] == 405, "POST: 405")

        # a real Prometheus scrapes it and answers a query
        pdir = os.path.join(tmp, "prom")
        os.mkdir(pdir)
        with open(os.path.join(pdir, "prometheus.yml"), "w") as f:
            f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                    "scrape_configs:\n  - job_name: lockstep\n"
                    "    static_configs:\n"
                    "      - {targets: ['127.0.0.1:%d'], labels: {leaf: leaf1}}\n"
                    "      - {targets: ['127.0.0.1:%d', '127.0.0.1:%d'], labels: {leaf: leaf2}}\n"
                    % (mport, mport2, dead))
        prom = subprocess.Popen(
            ["prometheus", "--config.file", os.path.join(pdir, "prometheus.yml"),
             "--storage.tsdb.path", os.path.join(pdir, "data"),
             "--web.listen-address", "127.0.0.1:%d" % pport],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(pdir, "log"), "w"))
        q = "http://127.0.0.1:%d/api/v1/query?query=%s" % (
            pport, urllib.parse.quote('sum(lockstep_path_up{peer="n2"})'))

        def answered():
            try:
                r = json.load(urllib.request.urlopen(q, timeout=2))
                res = r["data"]["result"]
                return res and float(res[0]["value"][1]) == PATHS
            except (OSError, ValueError, KeyError):
                return False
        c.check(lslab.wait_until(answered, 40),
                "Prometheus scraped lockstepd: sum(lockstep_path_up{peer=\"n2\"}) = %d" % PATHS)
        c.check(lslab.call(n1.sock, "status")["node"] == "n1",
                "the control socket answers while Prometheus scrapes")
        # the shipped Grafana dashboard's queries run on that Prometheus
        dash = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                            "grafana", "lockstep-dashboard.json")
        with open(dash) as f:
            panels = json.load(f)["panels"]
        bad, empty = [], []
        for pnl in panels:
            for t in pnl["targets"]:
                u = "http://127.0.0.1:%d/api/v1/query?query=%s" % (pport,
                                                                  urllib.parse.quote(t["expr"]))
                try:
                    res = json.load(urllib.request.urlopen(u, timeout=5))
                except (OSError, ValueError) as e:
                    bad.append((pnl["title"], str(e)))
                    continue
                if res.get("status") != "success":
                    bad.append((pnl["title"], res.get("error")))
                elif not res["data"]["result"] and "rate(" not in t["expr"] and \
                        "sync" not in t["expr"] and "forward" not in t["expr"]:
                    empty.append(pnl["title"])
        c.check(not bad and not empty, "the dashboard's %d panels query Prometheus "
                "(errors %s, empty %s)" % (len(panels), bad, empty))
        # DPDK telemetry: the same commands through DPDK's own client
        r = subprocess.run(["dpdk-telemetry.py", "-f", n1.prefix],
                           input="/lockstep/status\n/lockstep/paths,n2\n/lockstep/sync\n",
                           text=True, capture_output=True, timeout=30)
        replies = {}
        for line in r.stdout.replace("--> ", "\n").splitlines():
            line = line.strip()
            if line.startswith("{"):
                replies.update(json.loads(line))
        st = replies.get("/lockstep/status", {})
        pa = replies.get("/lockstep/paths", {})
        c.check(st.get("node") == "n1" and st.get("counters/rx_pkts", 0) > 0,
                "dpdk-telemetry.py /lockstep/status: node n1, rx_pkts %s" %
                st.get("counters/rx_pkts"))
        c.check(pa.get("name") == "n2" and "paths/%d/rtt_p50_ns" % (PATHS - 1) in pa,
                "dpdk-telemetry.py /lockstep/paths,n2: n2's %d paths (%s)" %
                (PATHS, sorted(pa)[:6]))
        c.check("/lockstep/sync" in replies, "dpdk-telemetry.py /lockstep/sync answers")
        fleet_mesh(c, tmp, pport, dead, n1, n2)
    finally:
        if prom is not None:
            prom.terminate()
            prom.wait(10)
        n2.stop()
        rc = n1.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    c.check(rc == 0, "n1 exits 0 with the metrics server up (SIGTERM)")
    c.finish()


if __name__ == "__main__":
    main()
