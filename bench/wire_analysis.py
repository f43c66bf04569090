#!/usr/bin/env python3
"""Analysis half of bench/wire_precision.sh.

Two commands:

  wire_analysis.py scenario --details FILE --summary FILE --wire FILE --label L \
      --traffic {constant,poisson,gamma0.5} --rate RPS --workers W [--load TEXT] >> rows.jsonl
      One JSON row for one run: the wire view of surge's sends.
  wire_analysis.py table rows.jsonl
      The table of all rows, the precision targets and the highest rate whose wire lateness
      p99 stays <= 1 ms.

Inputs of `scenario`:
  --details  the run's {dataset}_details.jsonl (planned_offset_s, actual_offset_s, index,
             attempt, worker per request; offsets in s from the run's t0 on the coordinator's
             steady clock, docs/DESIGN.md).
  --summary  the run's {dataset}.json (surge's own summary: lateness_s, clock_sync).
  --wire     tshark fields, one line per captured packet: `frame.time_epoch<TAB>tcp.payload`
             (payload hex, cut at the snap length); packets whose TCP payload starts with
             "POST " (each request's first packet, with its `X-Surge-Request: INDEX/ATTEMPT`
             header) and SYNs (no payload: counted as connections opened).

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


def read_wire(path):
    """{(index, attempt): first wire time (epoch s)}, plus count of duplicates / unparsed."""
    first = {}
    dup = 0
    unparsed = 0
    syns = 0
    with open(path, "rb") as f:
        for line in f:
            parts = line.rstrip(b"\n").split(b"\t")
            if len(parts) < 2 or not parts[1]:
                syns += 1  # the capture keeps only request packets and SYNs
                continue
            t = float(parts[0])
            payload = bytes.fromhex(parts[1].replace(b":", b"").decode())
            k = payload.find(HEADER)
            if k < 0:
                unparsed += 1
                continue
            end = payload.find(b"\r\n", k)
            if end < 0:
                unparsed += 1
                continue
            idx, _, att = payload[k + len(HEADER):end].partition(b"/")
            key = (int(idx), int(att))
            if key in first:
                dup += 1  # a keep-alive retry (or a reassignment) writes the request again
                if t < first[key]:
                    first[key] = t
            else:
                first[key] = t
    return first, dup, unparsed, syns


def pct(a, q):
    return float(np.percentile(a, q)) if len(a) else float("nan")


def scenario(args):
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
    wire_times, dup, unparsed, syns = read_wire(args.wire)
    matched = 0
    all_planned = []
    with open(args.details) as f:
        for line in f:
            r = json.loads(line)
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
    e_s = np.array([e_ns.get(int(w), 0.0) for w in worker]) / 1e9
    row = {
        "label": args.label,
        "traffic": args.traffic,
        "rate_rps": args.rate,
        "workers": args.workers,
        "load": args.load,
        "stopped": args.stopped,
        "time_wait_at_start": args.time_wait,
        "connections_opened": syns,
        "planned": n_planned,
        "sent": n_sent,
        "on_wire": len(wire_times),
        "matched": matched,
        "wire_duplicates": dup,
        "wire_unparsed": unparsed,
        "clock_offsets_ms": {str(k): v / 1e6 for k, v in sorted(e_ns.items())},
    }
    if matched < 2:
        row["error"] = "fewer than 2 requests matched on the wire"
        print(json.dumps(row))
        return
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
    per_worker = {}
    for w in sorted(set(worker.tolist())):
        m = worker == w
        per_worker[str(w)] = {
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
        "per_worker": per_worker,
    })
    print(json.dumps(row))


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
    print("Lateness in ms. Targets, nginx, 2 workers:")
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
    args = p.parse_args()
    if args.cmd == "scenario":
        scenario(args)
    else:
        table(args)


if __name__ == "__main__":
    sys.exit(main())
