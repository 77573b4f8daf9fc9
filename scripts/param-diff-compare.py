#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""param-diff-compare.py - compares two runs of the param_values case of
tests/gpu/differential.c (scripts/param-diff.sh runs it on the GPU machine).

    scripts/param-diff-compare.py NVIDIA.tsv OURS.tsv

A row is one try: "param KIND NAME TRY STATE" (its key), then field=value
pairs.  A row is *different* when what a program sees differs: the setter's
result (set), a read-back (get, get_open), the driver open (open), the
verified read (io), the close (close), or a crash or a hang (result).  The
driver properties (props) are compared separately and summed up per
property field, because the two libraries report some of them differently
on every row (see docs/compatibility.md, "Parameter values").

Rows of runs made before the differential wrote its rows on a descriptor of
their own may carry the library's log text: inside a field after its value
(" invalid value ..."), or on lines of their own that continue the row.
That text is taken out and counted, never compared.
"""
import collections
import re
import sys

OUTCOME = ("value", "set", "get", "open", "get_open", "io", "close", "result")


def split_value(name, v):
    """A field's value without log text that followed it: (value, text)."""
    if name == "value":
        return v, ""
    if name == "io":
        m = re.match(r"^(\S+ data=\S+ guard=\S+|\S+)(.*)$", v, re.S)
    elif name == "result":
        m = re.match(r"^(\w+\([^)]*\))(.*)$", v, re.S)
    else:
        m = re.match(r"^(\S*)(.*)$", v, re.S)
    return (m.group(1), m.group(2).strip()) if m else (v, "")


def rows(path):
    """{key: {field: value}} and the keys in file order."""
    recs = []
    for line in open(path, errors="replace").read().split("\n"):
        if line.startswith("param\t"):
            recs.append(line)
        elif line and not line.startswith(("#", ">>", "param_values:")) and recs:
            recs[-1] += "\n" + line  # log text that broke the row
    out, order = {}, []
    for r in recs:
        f = r.split("\t")
        if len(f) < 5:
            continue
        fields, logs = {}, []
        for x in f[5:]:
            k, _, v = x.partition("=")
            if not k:
                continue
            v, text = split_value(k, v)
            if text:
                logs.append(text)
            fields[k] = v
        if logs:
            fields["_log"] = " | ".join(logs)
        key = tuple(f[1:5])
        out[key] = fields
        order.append(key)
    return out, order


def props(v):
    """'CODE:a=1,b=2' -> (CODE, {a: 1, b: 2}); None when absent."""
    if v is None:
        return None
    code, _, rest = v.partition(":")
    return code, dict(x.split("=", 1) for x in rest.split(",") if "=" in x)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    nv, nv_order = rows(sys.argv[1])
    ours, ours_order = rows(sys.argv[2])
    keys = ours_order + [k for k in nv_order if k not in ours]
    ndiff = 0
    prop_groups = collections.defaultdict(list)
    nlog = collections.Counter()
    for k in keys:
        a, b = nv.get(k), ours.get(k)
        name = " ".join(k)
        if a is None or b is None:
            ndiff += 1
            print(name)
            print(f"  only in {'ours' if a is None else 'NVIDIA'}")
            continue
        nlog["NVIDIA"] += "_log" in a
        nlog["ours"] += "_log" in b
        diffs = [n for n in OUTCOME if a.get(n) != b.get(n)]
        if diffs:
            ndiff += 1
            print(name)
            for n in diffs:
                print(f"  {n}: NVIDIA {a.get(n, '(none)')}")
                print(f"  {' ' * len(n)}  ours   {b.get(n, '(none)')}")
        pa, pb = props(a.get("props")), props(b.get("props"))
        if pa is None or pb is None:
            continue  # no properties: the try ended before (the row differs)
        if pa[0] != pb[0]:
            prop_groups[("(status)", pa[0], pb[0])].append(name)
        for f in pa[1]:
            if pa[1][f] != pb[1].get(f):
                prop_groups[(f, pa[1][f], pb[1].get(f, "(none)"))].append(name)
    print(f"# {len(keys)} rows, {len(keys) - ndiff} the same, {ndiff} different "
          "(set, read-back, open, read, close or crash)")
    print("# properties (cuFileDriverGetProperties after the try) that differ:")
    for (f, va, vb), names in sorted(prop_groups.items(), key=lambda x: (x[0][0], -len(x[1]))):
        more = f" (e.g. {names[0]})" if len(names) < len(keys) else ""
        print(f"#   {f}: NVIDIA {va}, ours {vb}: {len(names)} rows{more}")
    if nlog["NVIDIA"] or nlog["ours"]:
        print(f"# log text inside rows, not compared: NVIDIA {nlog['NVIDIA']} rows, ours {nlog['ours']} rows")


if __name__ == "__main__":
    main()
