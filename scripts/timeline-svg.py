#!/usr/bin/env python3
"""Draws a timeline of `nvdla-runtime --timeline FILE` (Chrome trace-event JSON) as an SVG:
one row per engine, one bar per operation, coloured by its long pole when the cycle model
wrote it.

    scripts/timeline-svg.py TIMELINE.json OUT.svg [--title TEXT] [--width 1200]

No dependencies beyond Python 3.
"""
import argparse
import json
from xml.sax.saxutils import escape

COLOURS = {"MAC": "#4c78a8", "engine": "#f58518", "DRAM": "#e45756", "CVSRAM": "#b279a2",
           "fixed": "#9d9da0", "": "#54a24b"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("timeline")
    ap.add_argument("out")
    ap.add_argument("--title", default="")
    ap.add_argument("--width", type=int, default=1200)
    a = ap.parse_args()
    t = json.load(open(a.timeline))
    ev = t["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    ops = [e for e in ev if e.get("ph") == "X"]
    if not ops:
        raise SystemExit("no operations in " + a.timeline)
    end = max(e["ts"] + e["dur"] for e in ops)
    left, top, row, bar = 70, 40, 34, 22
    tids = sorted(names)
    height = top + row * len(tids) + 60
    plot = a.width - left - 20
    x = lambda us: left + plot * us / end
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{a.width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">{escape(a.title)}</text>']
    for i, tid in enumerate(tids):
        y = top + i * row
        out.append(f'<text x="8" y="{y + bar * 0.7:.1f}">{escape(names[tid])}</text>')
        out.append(f'<line x1="{left}" y1="{y + bar + 4}" x2="{left + plot}" y2="{y + bar + 4}" '
                   f'stroke="#ddd"/>')
    for e in ops:
        y = top + tids.index(e["tid"]) * row
        pole = e["args"].get("pole", "")
        w = max(x(e["ts"] + e["dur"]) - x(e["ts"]), 0.8)
        tip = f'{e["name"]}: {e["args"]["cycles"]} cycles'
        if "shape" in e["args"]:
            tip += f' {e["args"]["shape"]}, {pole}'
        out.append(f'<rect x="{x(e["ts"]):.2f}" y="{y}" width="{w:.2f}" height="{bar}" '
                   f'fill="{COLOURS.get(pole, "#54a24b")}" stroke="white" stroke-width="0.5">'
                   f'<title>{escape(tip)}</title></rect>')
    # Axis in kilocycles (ts is in microseconds at 1 GHz: 1 us = 1000 cycles).
    ya = top + row * len(tids) + 10
    steps = 10
    for k in range(steps + 1):
        us = end * k / steps
        out.append(f'<line x1="{x(us):.1f}" y1="{ya}" x2="{x(us):.1f}" y2="{ya + 5}" stroke="black"/>')
        out.append(f'<text x="{x(us):.1f}" y="{ya + 18}" text-anchor="middle">{us:.0f}k</text>')
    out.append(f'<text x="{left + plot}" y="{ya + 36}" text-anchor="end">cycles</text>')
    lx = left
    for pole, c in COLOURS.items():
        if not pole:
            continue
        out.append(f'<rect x="{lx}" y="{ya + 26}" width="12" height="12" fill="{c}"/>')
        out.append(f'<text x="{lx + 16}" y="{ya + 36}">{pole}</text>')
        lx += 80
    out.append("</svg>")
    open(a.out, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
