# SPDX-License-Identifier: Apache-2.0
"""Shared by the client checks in tests/gpu: PASS/FAIL reporting and the
check that every cuFile symbol the process resolves is opencufile's."""
import ctypes
import os

results = []


def report(name, ok, detail=""):
    results.append((name, ok))
    print(f"{'PASS' if ok else 'FAIL'} {name}{(': ' + detail) if detail else ''}", flush=True)


def mapped_libcufile():
    paths = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                i = line.find("/")
                if i >= 0 and "libcufile" in line[i:]:
                    paths.add(os.path.realpath(line[i:].strip()))
    except OSError as e:
        print(f"cannot read /proc/self/maps: {e}")
    return sorted(paths)


def symbol_owner(name):
    """Path of the mapped file that holds the address the process's global
    symbol lookup gives for `name` (what every client call binds to)."""
    import ctypes
    try:
        addr = ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value
    except (AttributeError, OSError):
        return None
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= addr < hi and len(parts) >= 6:
                return os.path.realpath(parts[5])
    return None


def check_maps(stage, expect):
    """Ours must be mapped and every cuFile symbol the process resolves must
    be ours.  A client that loads NVIDIA's copy by its full path (torch's
    loader preloads the nvidia wheel's libraries that way) maps it too, but
    nothing binds to it: that is reported, not failed."""
    libs = mapped_libcufile()
    print(f"libcufile mapped ({stage}): {libs if libs else 'none'}", flush=True)
    if expect:
        exp = os.path.realpath(expect)
        others = [p for p in libs if p != exp]
        owners = {n: symbol_owner(n) for n in ("cuFileDriverOpen", "cuFileHandleRegister",
                                               "cuFileRead", "cuFileWrite", "cuFileBufRegister")}
        bound_ours = all(o == exp for o in owners.values())
        ok = exp in libs and bound_ours
        report(f"maps_{stage}", ok,
               f"ours={'yes' if exp in libs else 'NO'} symbols_bind_to_ours={bound_ours} "
               f"also_mapped_unused={others if others else 'none'}"
               + ("" if bound_ours else f" owners={owners}"))
    else:
        nv = [p for p in libs if "opencufile" not in p and "build" not in p]
        report(f"maps_{stage}", bool(libs), f"(no --expect-lib given) {libs}")
        if nv:
            print(f"note: these look like NVIDIA's copy: {nv}")
