# SPDX-License-Identifier: Apache-2.0
"""A checkpoint save through torch.cuda.gds, timed: GdsFile.save_storage of
--total-mib of GPU tensors of --tensor-mib each, back to back into a new
file (torch opens it with O_DIRECT added to the flags given), then every
byte read back with plain reads and compared.

Prints one line: "torch_save: GB_per_sec: X CPU_sec_per_GB: Y Verify: PASS|FAIL"
(10^9 bytes; CPU: the whole process, user + system, over the saves only).

Usage: python3 tests/gpu/torch_save_bench.py --file PATH [--total-mib 1024]
       [--tensor-mib 16] [--expect-lib PATH]
"""
import argparse
import os
import resource
import sys
import time


def cpu_now():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", required=True)
    ap.add_argument("--total-mib", type=int, default=1024)
    ap.add_argument("--tensor-mib", type=int, default=16)
    ap.add_argument("--expect-lib", default="")
    args = ap.parse_args()
    import torch
    import torch.cuda.gds as gds

    n = args.total_mib // args.tensor_mib
    size = args.tensor_mib << 20
    tensors = []
    for i in range(n):
        t = torch.arange(size // 4, dtype=torch.int32, device="cuda") * (2 * i + 1)
        tensors.append(t)
    torch.cuda.synchronize()
    if args.expect_lib:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "libcufile" in line}
        if libs and not any(os.path.realpath(p) == os.path.realpath(args.expect_lib) for p in libs):
            print(f"torch_save: wrong library mapped: {sorted(libs)}")
            return 1
    try:
        os.unlink(args.file)
    except FileNotFoundError:
        pass
    f = gds.GdsFile(args.file, os.O_CREAT | os.O_RDWR)
    # The first save opens the driver and registers the handle: once, untimed.
    f.save_storage(tensors[0].untyped_storage(), 0)
    c0, t0 = cpu_now(), time.perf_counter()
    for i in range(1, n):
        f.save_storage(tensors[i].untyped_storage(), i * size)
    t1, c1 = time.perf_counter(), cpu_now()
    del f
    moved = (n - 1) * size
    ok = os.path.getsize(args.file) == n * size
    with open(args.file, "rb") as r:
        for i in range(n):
            want = tensors[i].cpu().numpy().tobytes()
            if r.read(size) != want:
                ok = False
                print(f"torch_save: tensor {i} differs in the file")
                break
    os.unlink(args.file)
    print(f"torch_save: GB_per_sec: {moved / (t1 - t0) / 1e9:.3f} CPU_sec_per_GB: "
          f"{(c1 - c0) / (moved / 1e9):.4f} Verify: {'PASS' if ok else 'FAIL'} "
          f"({n - 1} x {args.tensor_mib} MiB timed, torch {torch.__version__})", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
