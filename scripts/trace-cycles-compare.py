#!/usr/bin/env python3
"""Compares the cycles of the same trace tests on the model and on the RTL:
`nvdla-vp trace --cycles DIR` and `nvdla-vp trace --device rtl --cycles DIR` outputs.

    scripts/trace-cycles-compare.py MODEL.txt RTL.txt [--tolerance 0.10] [-v]

A test passes when the model's cycles (reset to the end of the test: register accesses and
operations) are within the tolerance of the RTL's, or within 200 cycles under 2 000.
Prints `N passed, M failed` last.
"""
import argparse
import re

LINE = re.compile(r"^PASS(?: \(as built\))? (\S+) \[(\d+) cycles\]")


def read(path):
    out = {}
    for line in open(path):
        m = LINE.match(line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("rtl")
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    m, r = read(a.model), read(a.rtl)
    passed = failed = 0
    errs = []
    for name in sorted(set(m) & set(r)):
        mc, rc = m[name], r[name]
        e = (mc - rc) / rc if rc else 0.0
        ok = abs(e) <= a.tolerance or (rc < 2000 and abs(mc - rc) <= 200)
        errs.append(abs(e))
        if ok:
            passed += 1
        else:
            failed += 1
        if a.v or not ok:
            print(f"{'PASS' if ok else 'FAIL'} {name:44} model {mc:9} rtl {rc:9} {e:+7.1%}")
    errs.sort()
    if errs:
        print(f"median |error| {errs[len(errs) // 2]:.1%}, largest {errs[-1]:.1%}")
    print(f"{passed} passed, {failed} failed")


if __name__ == "__main__":
    main()
