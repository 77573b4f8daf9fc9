#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""sweep-chart.py - the SVG chart of a gpu-bench sweep (standard library only).

    scripts/sweep-chart.py gpu-out/sweep.csv [OUT.svg]

Input: the CSV scripts/gpu-bench.sh writes (a '# sweep: ...' description line,
then lib,threads,size_mib,GBps,cpu_s_per_GB,status).  Output: two panels,
throughput (GB/s) and CPU seconds per GB against the thread count (log2
axis), one colour per call size, a solid line for ours and a dashed one for
NVIDIA's library; cells whose status is not "ok" are left out.  Without OUT
it writes docs/sweep.svg, and refuses to when the description says the CSV
came from a dry run (no GPU): docs/ keeps only measured data.
"""
import csv
import math
import os
import sys
from xml.sax.saxutils import escape

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
DASH = {"ours": "", "nv": "6,4"}
NAME = {"ours": "opencufile", "nv": "NVIDIA libcufile"}


def load(path):
    desc, rows = "", []
    with open(path, newline="") as f:
        lines = [ln for ln in f if ln.strip()]
    body = []
    for ln in lines:
        if ln.startswith("#"):
            if ln.startswith("# sweep:"):
                desc = ln[len("# sweep:"):].strip()
            continue
        body.append(ln)
    for r in csv.DictReader(body):
        if r.get("status") != "ok":
            continue
        try:
            rows.append((r["lib"], int(r["threads"]), float(r["size_mib"]), float(r["GBps"]),
                         float(r["cpu_s_per_GB"])))
        except (KeyError, ValueError):
            continue
    return desc, rows


def nice_step(vmax):
    raw = vmax / 5 if vmax > 0 else 0.2
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def panel(out, x0, y0, w, h, rows, col, ylabel, threads, sizes, libs):
    vmax = max([r[col] for r in rows] + [0])
    step = nice_step(vmax)
    ymax = max(step, math.ceil(vmax / step) * step)
    lmin, lmax = math.log2(min(threads)), math.log2(max(threads))
    if lmax - lmin < 1:
        lmin, lmax = lmin - 0.5, lmax + 0.5

    def xp(t):
        return x0 + (math.log2(t) - lmin) / (lmax - lmin) * w

    def yp(v):
        return y0 + h - v / ymax * h

    v = 0.0
    while v <= ymax + step / 2:
        out.append(f'<line x1="{x0:.1f}" y1="{yp(v):.1f}" x2="{x0 + w:.1f}" y2="{yp(v):.1f}" stroke="#dddddd"/>')
        out.append(f'<text x="{x0 - 8:.1f}" y="{yp(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
        v += step
    for t in threads:
        out.append(f'<line x1="{xp(t):.1f}" y1="{y0}" x2="{xp(t):.1f}" y2="{y0 + h}" stroke="#eeeeee"/>')
        out.append(f'<text x="{xp(t):.1f}" y="{y0 + h + 18}" text-anchor="middle">{t}</text>')
    out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="black"/>')
    out.append(f'<text x="{x0 + w / 2:.1f}" y="{y0 + h + 40}" text-anchor="middle">threads (log scale)</text>')
    cy = y0 + h / 2
    out.append(f'<text x="{x0 - 50}" y="{cy:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 {x0 - 50} {cy:.1f})">{escape(ylabel)}</text>')
    for si, s in enumerate(sizes):
        color = COLORS[si % len(COLORS)]
        for lib in libs:
            pts = sorted((r[1], r[col]) for r in rows if r[0] == lib and r[2] == s)
            if not pts:
                continue
            dash = DASH.get(lib, "2,3")
            d = f' stroke-dasharray="{dash}"' if dash else ""
            poly = " ".join(f"{xp(t):.1f},{yp(val):.1f}" for t, val in pts)
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2"{d} points="{poly}"/>')
            for t, val in pts:
                out.append(f'<circle cx="{xp(t):.1f}" cy="{yp(val):.1f}" r="3" fill="{color}">'
                           f'<title>{escape(NAME.get(lib, lib))}: {t} thread(s) x {s:g} MiB: '
                           f'{val:.3f} {escape(ylabel)}</title></circle>')


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: sweep-chart.py SWEEP.csv [OUT.svg]\n")
        return 2
    desc, rows = load(argv[1])
    if len(argv) == 3:
        dst = argv[2]
    else:
        if "dry run" in desc or "no GPU" in desc:
            sys.stderr.write("sweep-chart.py: the CSV is from a dry run: not writing docs/sweep.svg "
                             "(name an output file)\n")
            return 1
        dst = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "sweep.svg")
    if not rows:
        sys.stderr.write(f"sweep-chart.py: no ok cells in {argv[1]}\n")
        return 1
    threads = sorted({r[1] for r in rows})
    sizes = sorted({r[2] for r in rows})
    libs = sorted({r[0] for r in rows}, key=lambda l: (l != "ours", l))
    W, H, L, T, PW, PH, GAP, LEG = 1180, 560, 90, 70, 400, 380, 110, 180
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           'font-family="sans-serif" font-size="13">',
           f'<rect x="0" y="0" width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2 - LEG / 2:.0f}" y="26" text-anchor="middle" font-size="16" font-weight="bold">'
           'cuFileRead sweep: threads x call size</text>',
           f'<text x="{W / 2 - LEG / 2:.0f}" y="46" text-anchor="middle" font-size="11">{escape(desc)}</text>']
    panel(out, L, T, PW, PH, rows, 3, "GB/s (10^9 bytes/s)", threads, sizes, libs)
    panel(out, L + PW + GAP, T, PW, PH, rows, 4, "CPU s per GB", threads, sizes, libs)
    lx, ly = L + 2 * PW + GAP + 30, T + 10
    for si, s in enumerate(sizes):
        c = COLORS[si % len(COLORS)]
        out.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 30}" y2="{ly}" stroke="{c}" stroke-width="3"/>')
        out.append(f'<text x="{lx + 38}" y="{ly + 4}">{s:g} MiB calls</text>')
        ly += 22
    ly += 10
    for lib in libs:
        dash = DASH.get(lib, "2,3")
        d = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 30}" y2="{ly}" stroke="black" stroke-width="2"{d}/>')
        out.append(f'<text x="{lx + 38}" y="{ly + 4}">{escape(NAME.get(lib, lib))}</text>')
        ly += 22
    out.append("</svg>")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"sweep-chart.py: {len(rows)} cells -> {dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
