#!/usr/bin/env python3
"""Analysis half of bench/wire_precision.sh.

Three commands:

  wire_analysis.py scenario --details FILE --summary FILE --wire FILE --label L \
      --traffic {constant,poisson,gamma0.5} --rate RPS --workers W [--load TEXT] >> rows.jsonl
      One JSON row for one run: the wire view of surge's sends.
  wire_analysis.py table rows.jsonl
      The table of all rows, the precision targets and the highest rate whose wire lateness
      p99 stays <= 1 ms.
  wire_analysis.py selfcheck
      Runs `scenario` on a small made-up run (a pre-flight GET /v1/models, a tokenize call, a
      warm-up, a keep-alive retry, a GET that carries a request's header) and checks its row;
      exit 0 when every check holds (bench/wire_precision.sh --self-check).

Inputs of `scenario`:
  --details  the run's {dataset}_details.jsonl (planned_offset_s, actual_offset_s, index,
             attempt, worker per request; offsets in s from the run's t0 on the coordinator's
             steady clock, docs/DESIGN.md).
  --summary  the run's {dataset}.json (surge's own summary: lateness_s, clock_sync).
  --wire     tshark fields, one line per captured packet:
             `frame.time_epoch<TAB>tcp.stream<TAB>tcp.payload` (payload hex, cut at the snap
             length; files of two fields, without tcp.stream, are read too): packets whose TCP
             payload starts with "POST " or "GET " (each request's first packet) and SYNs (no
             payload).

Which requests count. Only scheduled sends are matched to the plan: a request whose HTTP
request line is `POST <path>` with a path ending in /completions (what --endpoint allows) and
that carries surge's `X-Surge-Request: INDEX/ATTEMPT` header naming a planned (not warm-up)
record. Everything else on the wire is left out of every time and rate, by its method and
path, and counted in `wire_excluded` ("GET /v1/models": surge's pre-flight and model lookup;
"POST /tokenize": a --tokenizer server call; ...) -- also when it carries the header.
Warm-up sends (records with "warmup": true) are counted in `wire_warmups` and left out too.
Connections: `connections_opened` counts the connections (SYNs) that carried a scheduled
send; those that carried only excluded requests (the pre-flight's) are `connections_other`,
those with no request captured (a connect-only reachability check, an unused connection)
`connections_idle`. Without tcp.stream every SYN counts as opened.

Clock alignment. The run folder records no wall-clock t0 (only the run's start second), and
the capture's times are CLOCK_REALTIME while the plan lives on the coordinator's steady clock.
For each matched request, wire_i - actual_i = C + e_w + d_i, where C is the unknown constant
(realtime - steady, plus t0), e_w is worker w's clock-mapping error (on one host every steady
clock is the same clock, so the offset the worker estimated, `clock_sync[w].offset_ns` in the
summary, *is* that error: its stamps were mapped back through it), and d_i >= 0 is the kernel
path from surge's stamp (taken right before send(2)) to the capture point (a few us). We take
C = median_i(wire_i - actual_i - e_w(i)) and define

    wire lateness_i = wire_i - C - planned_i

i.e. the packet's time on the coordinator's clock (t0 = 0) minus its planned offset, with the
median stamp-to-wire path (a few us) subtracted. p50/p99/max depend on this alignment (and so
rest on surge's stamps being right on median, which the spread of wire - actual checks);
the spread p99 - p1 of wire lateness and the KS distance of wire gaps do not depend on it at
all. `stamp_to_wire_p99_us` (p99 - p50 of wire - actual - e_w) shows how far the wire ever
was from surge's own stamps.

KS: scipy.stats.ks_2samp of the wire's inter-send gaps (sorted wire times, differenced)
against the plan's gaps (sorted planned offsets, differenced), two-sided; it passes at
alpha = 0.01 when p >= 0.01 (the asymptotic critical distance 1.628 * sqrt((n+m)/(n m)) is
printed beside it). For constant traffic every planned gap is the same, so any jitter fails
the test: it is printed but carries no target.

Send floor. One worker's thread writes one request at a time, so two sends planned closer than
one send(2) go out one send(2) apart, whatever the plan says. The floor is measured, not
assumed: the median wire gap between consecutive sends of one worker (in planned order) that
were planned less than 5 us apart (`send_floor_us`, from `send_floor_pairs` such pairs). The
KS test above it (`ks_above_floor_*`) compares the wire's gaps of at least twice the floor
with the plan's gaps of at least twice the floor: the part of the distribution one thread can
honour (a gap held to the floor lands near the floor itself, jittered; at twice it, none).
"""

import argparse
import json
import math
import sys

import numpy as np
from scipy import stats

HEADER = b"X-Surge-Request: "
KS_ALPHA = 0.01


def ks_crit(n, m, alpha=KS_ALPHA):
    """Asymptotic two-sample KS critical distance: c(alpha) * sqrt((n + m) / (n m))."""
    c = math.sqrt(-math.log(alpha / 2) / 2)
    return c * math.sqrt((n + m) / (n * m))


COMPLETION_SUFFIX = "/completions"


def request_line(payload):
    """(method, path without its query) of an HTTP request's first line; (None, None) if the
    payload does not start with one."""
    end = payload.find(b"\r\n")
    line = payload[:end if end >= 0 else len(payload)]
    parts = line.split(b" ")
    if len(parts) < 3 or not parts[2].startswith(b"HTTP/"):
        return None, None
    method = parts[0].decode("ascii", "replace")
    path = parts[1].decode("ascii", "replace").split("?", 1)[0]
    return method, path


def is_scheduled_send(method, path):
    """A completion request, the only kind the plan schedules: POST to a path ending in
    /completions (--endpoint must end so: /v1/chat/completions, /v1/completions)."""
    return method == "POST" and path.endswith(COMPLETION_SUFFIX)


class Wire:
    """The capture read by read_wire."""

    def __init__(self):
        self.first = {}        # (index, attempt) -> first wire time (epoch s) of a scheduled send
        self.dup = 0           # scheduled sends written again (keep-alive retry, reassignment)
        self.unparsed = 0      # scheduled-send request lines without a readable X-Surge-Request
        self.excluded = {}     # "METHOD path" -> requests that are not scheduled sends
        self.syns = 0
        self.syn_times = []    # wire time (epoch s) of each SYN
        self.syn_streams = set()
        self.send_streams = set()
        self.other_streams = set()
        self.has_streams = False

    def connections(self):
        """(opened, other, idle): see the module docstring."""
        if not self.has_streams:
            return self.syns, 0, 0
        opened = self.syn_streams & self.send_streams
        other = (self.syn_streams & self.other_streams) - self.send_streams
        idle = self.syn_streams - self.send_streams - self.other_streams
        return len(opened), len(other), len(idle)


def read_wire(path):
    """The capture: scheduled sends by (index, attempt), excluded requests, connections."""
    w = Wire()
    with open(path, "rb") as f:
        for line in f:
            parts = line.rstrip(b"\n").split(b"\t")
            if len(parts) >= 3:
                w.has_streams = True
                t_text, stream, hex_payload = parts[0], parts[1], parts[2]
            elif len(parts) == 2:
                t_text, stream, hex_payload = parts[0], b"", parts[1]
            else:
                continue
            if not hex_payload:
                w.syns += 1  # the capture keeps only request packets and SYNs
                w.syn_times.append(float(t_text))
                w.syn_streams.add(stream)
                continue
            t = float(t_text)
            payload = bytes.fromhex(hex_payload.replace(b":", b"").decode())
            method, target = request_line(payload)
            if method is None:
                w.unparsed += 1
                continue
            if not is_scheduled_send(method, target):
                key = f"{method} {target}"
                w.excluded[key] = w.excluded.get(key, 0) + 1
                w.other_streams.add(stream)
                continue
            w.send_streams.add(stream)
            k = payload.find(HEADER)
            end = payload.find(b"\r\n", k) if k >= 0 else -1
            if end < 0:
                w.unparsed += 1
                continue
            idx, _, att = payload[k + len(HEADER):end].partition(b"/")
            key = (int(idx), int(att))
            if key in w.first:
                w.dup += 1  # a keep-alive retry (or a reassignment) writes the request again
                if t < w.first[key]:
                    w.first[key] = t
            else:
                w.first[key] = t
    return w


def pct(a, q):
    return float(np.percentile(a, q)) if len(a) else float("nan")


CLOSE_PAIR_S = 5e-6  # sends planned closer than this measure the send floor


def send_floor_s(planned, wire, worker):
    """(median wire gap of one worker's sends planned < CLOSE_PAIR_S apart, number of pairs)."""
    gaps = []
    for k in sorted(set(worker.tolist())):
        m = worker == k
        order = np.argsort(planned[m], kind="stable")
        p, w = planned[m][order], wire[m][order]
        close = np.diff(p) < CLOSE_PAIR_S
        gaps.extend(np.abs(np.diff(w))[close].tolist())
    if not gaps:
        return None, 0
    return float(np.median(gaps)), len(gaps)


def ks_above(wire_gaps, plan_gaps, min_s):
    """KS of the wire's and the plan's gaps of at least `min_s`; None with < 20 of either."""
    a = wire_gaps[wire_gaps >= min_s]
    b = plan_gaps[plan_gaps >= min_s]
    if len(a) < 20 or len(b) < 20:
        return None
    ks = stats.ks_2samp(a, b)
    return {"ks_above_floor_d": float(ks.statistic), "ks_above_floor_p": float(ks.pvalue),
            "ks_above_floor_crit": ks_crit(len(a), len(b)),
            "ks_above_floor_pass": bool(ks.pvalue >= KS_ALPHA),
            "ks_above_floor_n": len(a)}


def scenario(args):
    print(json.dumps(scenario_row(args)))


def scenario_row(args):
    with open(args.summary) as f:
        summary = json.load(f)
    run = summary.get("run", summary.get("context", {}))
    e_ns = {}
    for w in find_key(summary, "clock_sync") or []:
        if w.get("reported"):
            e_ns[int(w["worker"])] = float(w["offset_ns"])

    planned, actual, wire, worker = [], [], [], []
    n_planned = 0
    n_sent = 0
    w = read_wire(args.wire)
    wire_times = dict(w.first)
    matched = 0
    warmups_on_wire = 0
    all_planned = []
    with open(args.details) as f:
        for line in f:
            r = json.loads(line)
            if r.get("warmup"):
                # Sent before t0, not a scheduled send: off the wire times.
                if wire_times.pop((r["index"], r["attempt"]), None) is not None:
                    warmups_on_wire += 1
                continue
            n_planned += 1
            all_planned.append(r["planned_offset_s"])
            if r.get("actual_offset_s") is None:
                continue
            n_sent += 1
            t = wire_times.get((r["index"], r["attempt"]))
            if t is None:
                continue
            matched += 1
            planned.append(r["planned_offset_s"])
            actual.append(r["actual_offset_s"])
            wire.append(t)
            worker.append(r["worker"])
    planned = np.array(planned)
    actual = np.array(actual)
    wire = np.array(wire)
    worker = np.array(worker)
    e_s = np.array([e_ns.get(int(k), 0.0) for k in worker]) / 1e9
    opened, other, idle = w.connections()
    # New connections once the run is past its first second (the warm pool's
    # target: at most 1 % of the sends of that part of the run).
    late_syns = late_sends = 0
    if w.first:
        after = min(w.first.values()) + 1.0
        late_syns = sum(1 for t in w.syn_times if t > after)
        late_sends = sum(1 for t in w.first.values() if t > after)
    row = {
        "label": args.label,
        "traffic": args.traffic,
        "rate_rps": args.rate,
        "workers": args.workers,
        "load": args.load,
        "stopped": args.stopped,
        "time_wait_at_start": args.time_wait,
        "connections_opened": opened,
        "connections_other": other,
        "connections_idle": idle,
        "new_connections_after_1s": late_syns,
        "sends_after_1s": late_sends,
        "new_connections_after_1s_pct": 100.0 * late_syns / late_sends if late_sends else None,
        "planned": n_planned,
        "sent": n_sent,
        "on_wire": len(wire_times),
        "matched": matched,
        "wire_duplicates": w.dup,
        "wire_unparsed": w.unparsed,
        "wire_excluded": dict(sorted(w.excluded.items())),
        "wire_warmups": warmups_on_wire,
        "clock_offsets_ms": {str(k): v / 1e6 for k, v in sorted(e_ns.items())},
    }
    if matched < 2:
        row["error"] = "fewer than 2 requests matched on the wire"
        return row
    # Alignment (module docstring): wire - actual - e_w = C + d_i.
    d = wire - actual - e_s
    c = float(np.median(d))
    late_ms = (wire - c - planned) * 1e3
    stamp_dev_us = (d - c) * 1e6
    own_late_ms = (actual - planned) * 1e3
    wire_sorted = np.sort(wire)
    plan_sorted = np.sort(np.array(all_planned))
    plan_span = plan_sorted[-1] - plan_sorted[0]
    intended = (len(plan_sorted) - 1) / plan_span if plan_span > 0 else float("nan")
    achieved = (len(wire_sorted) - 1) / (wire_sorted[-1] - wire_sorted[0])
    wire_gaps = np.diff(wire_sorted)
    plan_gaps = np.diff(plan_sorted)
    ks = stats.ks_2samp(wire_gaps, plan_gaps)
    own_gaps = np.diff(np.sort(actual))
    ks_own = stats.ks_2samp(own_gaps, plan_gaps)
    floor_s, floor_pairs = send_floor_s(planned, wire, worker)
    above = ks_above(wire_gaps, plan_gaps, 2 * floor_s) if floor_s is not None else None
    per_worker = {}
    for k in sorted(set(worker.tolist())):
        m = worker == k
        per_worker[str(k)] = {
            "n": int(m.sum()),
            "wire_p50_ms": pct(late_ms[m], 50),
            "wire_p99_ms": pct(late_ms[m], 99),
            "wire_minus_stamp_median_us": float(np.median(wire[m] - actual[m]) - c) * 1e6,
        }
    row.update({
        "intended_rps": intended,
        "achieved_rps": achieved,
        "achieved_over_target": achieved / intended,
        "wire_p1_ms": pct(late_ms, 1),
        "wire_p50_ms": pct(late_ms, 50),
        "wire_p99_ms": pct(late_ms, 99),
        "wire_max_ms": float(late_ms.max()),
        "wire_spread_ms": pct(late_ms, 99) - pct(late_ms, 1),
        "own_p50_ms": pct(own_late_ms, 50),
        "own_p99_ms": pct(own_late_ms, 99),
        "own_max_ms": float(own_late_ms.max()),
        "stamp_to_wire_p99_us": pct(stamp_dev_us, 99) - pct(stamp_dev_us, 50),
        "stamp_to_wire_max_us": float(stamp_dev_us.max()),
        "ks_d": float(ks.statistic),
        "ks_p": float(ks.pvalue),
        "ks_crit": ks_crit(len(wire_gaps), len(plan_gaps)),
        "ks_pass": bool(ks.pvalue >= KS_ALPHA),
        "ks_own_d": float(ks_own.statistic),
        "ks_own_p": float(ks_own.pvalue),
        "send_floor_us": floor_s * 1e6 if floor_s is not None else None,
        "send_floor_pairs": floor_pairs,
        "per_worker": per_worker,
    })
    if above is not None:
        row.update(above)
    return row


def find_key(obj, key):
    """First value of `key` anywhere in a JSON tree (the summary nests the run context)."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            got = find_key(v, key)
            if got is not None:
                return got
    elif isinstance(obj, list):
        for v in obj:
            got = find_key(v, key)
            if got is not None:
                return got
    return None


def fmt(v, nd=3):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{v:.{nd}f}"


def table(args):
    rows = []
    with open(args.rows) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    print("| case | workers | load (1 min) | sent/planned | conns | achieved/target | wire p50 | "
          "wire p99 | wire max | spread p99−p1 | surge's own p99 | KS D (crit, p) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r.get("stopped"):
            r["label"] += " (stopped: fell behind)"
        if "error" in r:
            print(f"| {r['label']} | {r['workers']} | {r['load']} | {r['sent']}/{r['planned']} | "
                  f"{r.get('connections_opened', '')} | {r['error']} | | | | | | |")
            continue
        ks = f"{fmt(r['ks_d'], 4)} ({fmt(r['ks_crit'], 4)}, p {r['ks_p']:.2g})"
        if r["traffic"] == "constant":
            ks += " no target"
        elif r["traffic"] != "streaming":
            ks += " pass" if r["ks_pass"] else " FAIL"
        print(f"| {r['label']} | {r['workers']} | {r['load']} | {r['sent']}/{r['planned']} | "
              f"{r.get('connections_opened', '')} | {fmt(r['achieved_over_target'], 4)} | {fmt(r['wire_p50_ms'])} | "
              f"{fmt(r['wire_p99_ms'])} | {fmt(r['wire_max_ms'], 2)} | {fmt(r['wire_spread_ms'])} | "
              f"{fmt(r['own_p99_ms'])} | {ks} |")
    print()
    print("Lateness in ms. Targets (nginx; the spread, p99 and KS-of-all-gaps ones on 2-worker rows, the KS above the send floor on every row):")
    ok_rows = [r for r in rows if "error" not in r]

    def pick(traffic, rate, workers):
        return [r for r in ok_rows
                if r["traffic"] == traffic and r["rate_rps"] == rate and r["workers"] == workers]

    def verdict(ok):
        return "met" if ok else "MISSED"

    for r in pick("constant", 5000, 2):
        print(f"  constant 5,000 RPS: spread {fmt(r['wire_spread_ms'])} ms (target <= 0.2): "
              f"{verdict(r['wire_spread_ms'] <= 0.2)}; p99 {fmt(r['wire_p99_ms'])} ms "
              f"(target <= 0.3): {verdict(r['wire_p99_ms'] <= 0.3)}")
    for traffic in ("constant", "poisson", "gamma0.5"):
        for r in pick(traffic, 20000, 2):
            print(f"  {traffic} 20,000 RPS: p99 {fmt(r['wire_p99_ms'])} ms (target <= 1): "
                  f"{verdict(r['wire_p99_ms'] <= 1.0)}")
    for traffic in ("poisson", "gamma0.5"):
        for r in ok_rows:
            if r["traffic"] == traffic and r["workers"] == 2 and r["rate_rps"] <= 5000:
                print(f"  {traffic} {r['rate_rps']:,} RPS: KS D {fmt(r['ks_d'], 4)} vs crit "
                      f"{fmt(r['ks_crit'], 4)} (p {r['ks_p']:.3g}, alpha 0.01): "
                      f"{verdict(r['ks_pass'])}")
    for r in ok_rows:
        if r["traffic"] in ("poisson", "gamma0.5") and "ks_above_floor_d" in r:
            print(f"  {r['traffic']} {r['rate_rps']:,} RPS, {r['workers']} worker(s): send floor "
                  f"{fmt(r['send_floor_us'], 1)} us ({r['send_floor_pairs']} pairs); KS of the gaps "
                  f">= twice it D {fmt(r['ks_above_floor_d'], 4)} vs crit "
                  f"{fmt(r['ks_above_floor_crit'], 4)} (p {r['ks_above_floor_p']:.3g}, "
                  f"{r['ks_above_floor_n']} gaps): {verdict(r['ks_above_floor_pass'])}")
    for r in ok_rows:
        if r["traffic"] == "streaming":
            print(f"  streaming 1,000 RPS: surge's own lateness p99 {fmt(r['own_p99_ms'])} ms "
                  f"(target <= 0.5): {verdict(r['own_p99_ms'] <= 0.5)}")
    print()
    print("Highest rate with wire lateness p99 <= 1 ms (nginx; every lower rate run passed too):")
    for workers in sorted({r["workers"] for r in ok_rows if r["traffic"] != "streaming"}):
        for traffic in ("constant", "poisson", "gamma0.5"):
            runs = sorted((r for r in ok_rows
                           if r["traffic"] == traffic and r["workers"] == workers),
                          key=lambda r: r["rate_rps"])
            if not runs:
                continue
            best = None
            for r in runs:
                if (r["wire_p99_ms"] <= 1.0 and r["achieved_over_target"] >= 0.99
                        and not r.get("stopped")):
                    best = r["rate_rps"]
                else:
                    break
            tried = ", ".join(f"{r['rate_rps']:,}" for r in runs)
            first_fail = next((r for r in runs if r["rate_rps"] > (best or 0)), None)
            tail = ""
            if first_fail is not None:
                tail = (f"; {first_fail['rate_rps']:,} RPS: p99 {fmt(first_fail['wire_p99_ms'])} ms,"
                        f" achieved/target {fmt(first_fail['achieved_over_target'], 3)}")
            print(f"  {workers} worker(s), {traffic}: "
                  f"{'none' if best is None else f'{best:,} RPS'} (rates run: {tried}){tail}")


def selfcheck(_args):
    """`scenario` on a made-up run whose right row is known; exit 1 naming each failed check."""
    import os
    import tempfile
    from types import SimpleNamespace

    t0 = 1700000000.0  # the capture's epoch time of the run's t0 (steady offset 0)
    path_ms = 0.05     # surge's stamp to the capture point, the same for every send

    def http(method, path, header=None):
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if header:
            head += f"X-Surge-Request: {header}\r\n"
        return (head + "Content-Length: 2\r\n\r\n{}").encode().hex()

    # Planned every 1 ms, sent 20 us late; index 3 was not sent; index 4 (= N + 0) is the
    # run's one warm-up.
    details = [{"index": i, "attempt": 0, "worker": 0, "planned_offset_s": i * 1e-3,
                "actual_offset_s": i * 1e-3 + 20e-6} for i in range(3)]
    details.append({"index": 3, "attempt": 0, "worker": 0, "planned_offset_s": 3e-3,
                    "actual_offset_s": None})
    details.append({"index": 4, "attempt": 0, "worker": 0, "planned_offset_s": -0.1,
                    "actual_offset_s": -0.1, "warmup": True})

    def on_wire(offset_s):
        return f"{t0 + offset_s + path_ms * 1e-3:.9f}"

    wire = [
        # stream 0: the worker's connect-only reachability check
        f"{t0 - 2:.9f}\t0\t",
        # stream 1: the pre-flight GET /v1/models, and a GET that (wrongly) carries the header
        # of request 2 long before it was due: both dropped by their method
        f"{t0 - 1:.9f}\t1\t",
        f"{t0 - 0.99:.9f}\t1\t{http('GET', '/v1/models')}",
        f"{t0 - 0.98:.9f}\t1\t{http('GET', '/v1/models', '2/0')}",
        # stream 2: a --tokenizer server call
        f"{t0 - 0.5:.9f}\t2\t",
        f"{t0 - 0.49:.9f}\t2\t{http('POST', '/tokenize')}",
        # stream 3: the warm-up, the three sends, a keep-alive retry of request 1 (later)
        f"{t0 - 0.2:.9f}\t3\t",
        on_wire(-0.1) + "\t3\t" + http("POST", "/v1/chat/completions", "4/0"),
    ]
    for i in range(3):
        wire.append(on_wire(i * 1e-3 + 20e-6) + "\t3\t" +
                    http("POST", "/v1/chat/completions?x=1", f"{i}/0"))
    wire.append(on_wire(5e-3) + "\t3\t" + http("POST", "/v1/chat/completions", "1/0"))
    summary = {"run": {"clock_sync": [{"worker": 0, "reported": True, "offset_ns": 0}]}}

    with tempfile.TemporaryDirectory() as d:
        paths = {k: os.path.join(d, k) for k in ("details", "summary", "wire")}
        with open(paths["details"], "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in details))
        with open(paths["summary"], "w") as f:
            json.dump(summary, f)
        with open(paths["wire"], "w") as f:
            f.write("\n".join(wire) + "\n")
        row = scenario_row(SimpleNamespace(
            details=paths["details"], summary=paths["summary"], wire=paths["wire"],
            label="selfcheck", traffic="constant", rate=1000, workers=1, load="",
            stopped="", time_wait=0))

    checks = [
        ("matched", row.get("matched"), 3),
        ("planned (warm-up left out)", row.get("planned"), 4),
        ("sent", row.get("sent"), 3),
        ("on_wire", row.get("on_wire"), 3),
        ("wire_excluded", row.get("wire_excluded"), {"GET /v1/models": 2, "POST /tokenize": 1}),
        ("wire_warmups", row.get("wire_warmups"), 1),
        ("wire_duplicates", row.get("wire_duplicates"), 1),
        ("wire_unparsed", row.get("wire_unparsed"), 0),
        ("connections_opened", row.get("connections_opened"), 1),
        ("connections_other", row.get("connections_other"), 2),
        ("connections_idle", row.get("connections_idle"), 1),
    ]
    failed = [f"{name}: {got!r}, expected {want!r}" for name, got, want in checks if got != want]
    # Every send 20 us late on the wire too (the constant stamp-to-wire path is aligned away),
    # and exactly at the plan's rate: the GET at t0 - 0.98 s would have made request 2 ~1 s
    # early and the rate ~2 RPS. Tolerances: epoch seconds as doubles resolve ~0.24 us.
    for name, want, tol in (("wire_p50_ms", 0.02, 1e-3), ("wire_max_ms", 0.02, 1e-3),
                            ("own_p99_ms", 0.02, 1e-9), ("achieved_over_target", 1.0, 1e-3)):
        got = row.get(name)
        if got is None or abs(got - want) > tol:
            failed.append(f"{name}: {got!r}, expected {want!r}")
    failed += floor_selfcheck()
    if failed:
        for f in failed:
            print("wire_analysis self-check FAILED: " + f, file=sys.stderr)
        return 1
    print(f"wire_analysis self-check: ok ({len(checks) + 7} checks: the pre-flight GET, the "
          "tokenize call and the warm-up are off the wire times; the send floor and the KS "
          "above it)")
    return 0


def floor_selfcheck():
    """The send floor and the KS above it on made-up sends; the failed checks' messages."""
    rng = np.random.default_rng(1)
    # One worker: 400 planned gaps drawn from 70-500 us, and every tenth pair planned 1 us
    # apart; the wire honours every gap >= 30 us exactly and sends a close pair 30 us apart.
    plan_gaps = rng.uniform(70e-6, 500e-6, 400)
    plan_gaps[::10] = 1e-6
    planned = np.concatenate([[0.0], np.cumsum(plan_gaps)])
    wire = np.concatenate([[0.0], np.cumsum(np.maximum(plan_gaps, 30e-6))])
    worker = np.zeros(len(planned), dtype=int)
    floor, pairs = send_floor_s(planned, wire, worker)
    failed = []
    if pairs != 40 or floor is None or abs(floor - 30e-6) > 1e-12:
        failed.append(f"send floor: {floor!r} s from {pairs} pairs, expected 3e-05 from 40")
    # Above twice the floor (60 us) the wire's gaps are the plan's 360: D 0, or 1/360 where
    # the sums' rounding puts every wire gap a hair above its planned one.
    above = ks_above(np.diff(wire), np.diff(planned), 2 * floor)
    if (above is None or above["ks_above_floor_n"] != 360
            or above["ks_above_floor_d"] > 1 / 360 + 1e-12):
        failed.append(f"KS above the floor: {above!r}, expected D <= 1/360 over 360 gaps")
    # All gaps KS sees the 1 us gaps moved to 30 us: D = 0.1 (40 of 400), not 0.
    whole = stats.ks_2samp(np.diff(wire), np.diff(planned)).statistic
    if abs(whole - 0.1) > 1e-9:
        failed.append(f"KS of all gaps: D {whole!r}, expected 0.1")
    return failed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scenario")
    s.add_argument("--details", required=True)
    s.add_argument("--summary", required=True)
    s.add_argument("--wire", required=True)
    s.add_argument("--label", required=True)
    s.add_argument("--traffic", required=True)
    s.add_argument("--rate", type=int, required=True)
    s.add_argument("--workers", type=int, required=True)
    s.add_argument("--load", default="")
    s.add_argument("--time-wait", type=int, default=-1,
                   help="TIME-WAIT sockets on the host when the case started")
    s.add_argument("--stopped", default="",
                   help="why surge stopped the run early (--stop-on-alarm), empty if it did not")
    t = sub.add_parser("table")
    t.add_argument("rows")
    sub.add_parser("selfcheck")
    args = p.parse_args()
    if args.cmd == "scenario":
        scenario(args)
    elif args.cmd == "selfcheck":
        return selfcheck(args)
    else:
        table(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
