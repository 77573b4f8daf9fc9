# SPDX-License-Identifier: Apache-2.0
"""What the Python wheel's loader (opencufile.pth) adds to interpreter start.

    python3 scripts/wheel-start-cost.py PYTHON [LIMIT_MS]

Times `PYTHON -c pass` 20 times with the loader and 20 times with
OPENCUFILE_DISABLE=1, alternated (after 3 pairs to warm the page cache), and
prints the difference of the medians.  When it is over LIMIT_MS (default 2)
another round of 20 + 20 is run, three rounds at most, as a busy machine
slows single rounds; the lowest difference counts.  Exit 0 when it is at most
LIMIT_MS, else 1.
"""
import os
import statistics
import subprocess
import sys
import time


def once(py, disable):
    env = dict(os.environ)
    env.pop("OPENCUFILE_DISABLE", None)
    if disable:
        env["OPENCUFILE_DISABLE"] = "1"
    t = time.perf_counter()
    subprocess.run([py, "-c", "pass"], env=env, check=True)
    return time.perf_counter() - t


def main():
    py = sys.argv[1]
    limit = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    for _ in range(3):
        once(py, False), once(py, True)
    rounds = []
    for _ in range(3):
        on, off = [], []
        for _ in range(20):
            on.append(once(py, False))
            off.append(once(py, True))
        a, b = statistics.median(on) * 1e3, statistics.median(off) * 1e3
        rounds.append((a - b, a, b))
        if a - b <= limit:
            break
    d, a, b = min(rounds)
    print(f"{d:+.2f} ms ({a:.2f} ms with the loader, {b:.2f} ms with OPENCUFILE_DISABLE=1; median of 20"
          + (f"; rounds {' '.join(f'{r[0]:+.2f}' for r in rounds)}" if len(rounds) > 1 else "") + ")")
    return 0 if d <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
