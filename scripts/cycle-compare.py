#!/usr/bin/env python3
"""Compares two timelines of the same run (nvdla-runtime --timeline): the cycle model's
(--device vp) against the RTL's measured one (--device rtl).

    scripts/cycle-compare.py MODEL.json RTL.json [--name NAME] [--tolerance 0.10] [-v]

Operations are matched in enable order (the same firmware enables them in the same order
when the model delivers interrupts as the RTL raises them). Per operation, the error is
(model - rtl) / rtl of its enable-to-done cycles; operations shorter than --floor cycles on
the RTL (default 2000) are held to --floor-tolerance cycles instead (the fixed cycles
dominate them). Prints one summary line (and with -v every operation); exit status 0.
"""
import argparse
import json
import sys


def ops(path):
    with open(path) as f:
        t = json.load(f)
    out = [e for e in t["traceEvents"] if e.get("ph") == "X"]
    out.sort(key=lambda e: e["args"]["operation"])
    return t.get("otherData", {}), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("rtl")
    ap.add_argument("--name", default="")
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--floor", type=int, default=2000)
    ap.add_argument("--floor-tolerance", type=int, default=200)
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    mt, m = ops(a.model)
    rt, r = ops(a.rtl)
    n = min(len(m), len(r))
    within = 0
    worst = (0.0, None)
    errs = []
    mismatched = 0
    for i in range(n):
        me, re_ = m[i], r[i]
        if me["cat"] != re_["cat"]:
            mismatched += 1
            continue
        mc, rc = me["args"]["cycles"], re_["args"]["cycles"]
        err = (mc - rc) / rc if rc else 0.0
        ok = abs(err) <= a.tolerance or (rc < a.floor and abs(mc - rc) <= a.floor_tolerance)
        within += ok
        errs.append(abs(err))
        if not ok and abs(err) > abs(worst[0]):
            worst = (err, f"#{i} {me['cat']}")
        if a.v:
            pole = me["args"].get("pole", "")
            print(f"  {i:4} {me['cat']:6} model {mc:9} rtl {rc:9} {err:+7.1%} {pole}"
                  f"{'' if ok else '  <--'}")
    errs.sort()
    median = errs[len(errs) // 2] if errs else 0.0
    mt_total, rt_total = mt.get("total_cycles", 0), rt.get("total_cycles", 0)
    total_err = (mt_total - rt_total) / rt_total if rt_total else 0.0
    total_ok = abs(total_err) <= a.tolerance
    extra = ""
    if len(m) != len(r) or mismatched:
        extra = f", {len(m)} vs {len(r)} operations, {mismatched} engine mismatches"
    w = f", worst {worst[0]:+.1%} at {worst[1]}" if worst[1] else ""
    verdict = "PASS" if total_ok and within == n and not extra else "FAIL"
    print(f"{verdict} {a.name:34} total model {mt_total} rtl {rt_total} ({total_err:+.1%}); "
          f"operations within {a.tolerance:.0%}: {within}/{n}, median |error| "
          f"{median:.1%}{w}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
