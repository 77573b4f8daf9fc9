# SPDX-License-Identifier: Apache-2.0
"""What the test of the Python wheel asks an interpreter of its venv
(tests/test_wheel_gives_ours_to_every_cufile_user_until_uninstalled.sh).

  probe.py which          the libcufile.so.0 that dlopen gives: its
                          cuFileGetVersion and file
  probe.py client LIB     the same through LIB, a library that links
                          libcufile.so.0 and has a RUNPATH to another copy
  probe.py io FILE        cuFileDriverOpen, a 1 MiB file read into host
                          memory with cuFileRead and checked, cuFileDriverClose

Prints one line of key=value facts, always with preload= (what opencufile.pth
did), mapped= (every libcufile file mapped) and cuda= (every CUDA driver file
mapped: nothing may start CUDA at interpreter start).  Exit 1 when a call fails.
"""
import ctypes
import os
import sys

MIB = 1 << 20


def mapped(prefixes):
    found = []
    with open("/proc/self/maps") as f:
        for line in f:
            i = line.find("/")
            p = line[i:].strip() if i >= 0 else ""
            if p and os.path.basename(p).startswith(prefixes) and p not in found:
                found.append(p)
    return ",".join(found) or "none"


def file_at(addr):
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= addr < hi and len(parts) == 6:
                return os.path.realpath(parts[5].strip())
    return "?"


def preload():
    mod = sys.modules.get("opencufile._preload")
    return mod.status.split(":")[0] if mod else "none"


class Err(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]


class _Handle(ctypes.Union):
    _fields_ = [("fd", ctypes.c_int), ("handle", ctypes.c_void_p)]


class Descr(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("handle", _Handle), ("fs_ops", ctypes.c_void_p)]


def which():
    lib = ctypes.CDLL("libcufile.so.0")
    v = ctypes.c_int(-1)
    lib.cuFileGetVersion.restype = Err
    lib.cuFileGetVersion(ctypes.byref(v))
    return f"version={v.value} file={file_at(ctypes.cast(lib.cuFileGetVersion, ctypes.c_void_p).value)}"


def client(path):
    lib = ctypes.CDLL(path)
    return f"version={lib.runpath_client_version()}"


def io(path):
    lib = ctypes.CDLL("libcufile.so.0")
    for name in ("cuFileDriverOpen", "cuFileDriverClose", "cuFileHandleRegister"):
        getattr(lib, name).restype = Err
    lib.cuFileRead.restype = ctypes.c_ssize_t
    lib.cuFileRead.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_longlong,
                               ctypes.c_longlong]
    lib.cuFileHandleDeregister.argtypes = [ctypes.c_void_p]
    data = bytes(range(251)) * (MIB // 251) + bytes(MIB % 251)
    with open(path, "wb") as f:
        f.write(data)
    before = mapped(("libcuda", "libfakecuda"))
    e = lib.cuFileDriverOpen()
    if e.err:
        return f"cuFileDriverOpen={e.err}", 1
    fd = os.open(path, os.O_RDONLY)
    descr = Descr(type=1, handle=_Handle(fd=fd))  # CU_FILE_HANDLE_TYPE_OPAQUE_FD
    fh = ctypes.c_void_p()
    e = lib.cuFileHandleRegister(ctypes.byref(fh), ctypes.byref(descr))
    if e.err:
        return f"cuFileHandleRegister={e.err}", 1
    buf = ctypes.create_string_buffer(MIB)
    n = lib.cuFileRead(fh, buf, MIB, 0, 0)
    ok = n == MIB and buf.raw == data
    lib.cuFileHandleDeregister(fh)
    os.close(fd)
    e = lib.cuFileDriverClose()
    return (f"read={n} verified={'yes' if ok else 'NO'} close={e.err} cuda_before_open={before}",
            0 if ok and not e.err else 1)


def main():
    what = sys.argv[1]
    rc = 0
    try:
        if what == "which":
            line = which()
        elif what == "client":
            line = client(sys.argv[2])
        elif what == "io":
            line, rc = io(sys.argv[2])
        else:
            sys.exit(f"probe.py: unknown {what}")
    except OSError as e:
        line, rc = f"error={str(e).replace(' ', '_')}", 1
    print(f"{line} preload={preload()} mapped={mapped(('libcufile.so',))} "
          f"cuda={mapped(('libcuda', 'libfakecuda'))}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
