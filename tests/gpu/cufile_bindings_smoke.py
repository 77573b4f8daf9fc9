# SPDX-License-Identifier: Apache-2.0
"""Smoke test of cuda.bindings.cufile (cuda-bindings 13.x) against opencufile.

Run with LD_PRELOAD=/abs/path/to/our/libcufile.so.0 (scripts/gpu-check.sh does).
Opens the driver, registers a file handle, registers a device buffer (torch,
else cupy), reads a file written with plain POSIX I/O, checks the bytes, writes
through cuFile and checks the file, deregisters, closes. One PASS/FAIL line per
step; exit status non-zero on any failure.

Usage: python3 tests/gpu/cufile_bindings_smoke.py [--dir DIR] [--expect-lib PATH]
"""
import argparse
import ctypes
import os
import sys
import traceback

from clientcheck import check_maps, report, results  # noqa: E402


class _DescrUnion(ctypes.Union):
    _fields_ = [("fd", ctypes.c_int), ("handle", ctypes.c_void_p)]


class _Descr(ctypes.Structure):
    # Layout per the interface spec: enum type; union {int fd; void *handle;}; const void *fs_ops.
    _fields_ = [("type", ctypes.c_int), ("handle", _DescrUnion), ("fs_ops", ctypes.c_void_p)]


def need(mod, name):
    obj = getattr(mod, name, None)
    if obj is None:
        print(f"missing cufile.{name}; dir(cufile) = {sorted(n for n in dir(mod) if not n.startswith('__'))}")
        raise AttributeError(name)
    return obj


def make_descr(cufile, fd):
    """Returns (address, keepalive). Tries the bindings' Descr first, then ctypes."""
    opaque_fd = 1
    fht = getattr(cufile, "FileHandleType", None)
    if fht is not None and hasattr(fht, "OPAQUE_FD"):
        opaque_fd = int(fht.OPAQUE_FD)
    Descr = getattr(cufile, "Descr", None)
    if Descr is not None:
        try:
            d = Descr()
            d.type = opaque_fd
            try:
                d.handle.fd = fd
            except Exception:  # noqa: BLE001 - newer bindings: record-like union
                d.handle["fd"] = fd
            try:
                d.fs_ops = 0
            except Exception:  # noqa: BLE001
                pass
            addr = int(d.ptr) if hasattr(d, "ptr") else int(d)
            # Verify what we built reads back as expected through ctypes.
            view = _Descr.from_address(addr)
            if view.type == opaque_fd and view.handle.fd == fd:
                print("descriptor: cufile.Descr", flush=True)
                return addr, d
            print(f"cufile.Descr did not read back (type={view.type} fd={view.handle.fd}); "
                  "using ctypes", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"cufile.Descr unusable ({e!r}); using ctypes", flush=True)
    d = _Descr()
    d.type = opaque_fd
    d.handle.fd = fd
    d.fs_ops = None
    print("descriptor: ctypes", flush=True)
    return ctypes.addressof(d), d


def device_buffer(nbytes):
    """Returns (ptr, to_bytes(), fill(byte), keepalive) using torch, else cupy."""
    try:
        import torch
        t = torch.full((nbytes,), 0xEE, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        print("buffer: torch", flush=True)
        return (t.data_ptr(), lambda: (torch.cuda.synchronize(), t.cpu().numpy().tobytes())[1],
                lambda b: (t.fill_(b), torch.cuda.synchronize()), t)
    except Exception as e:  # noqa: BLE001
        print(f"torch unavailable ({e!r}); trying cupy", flush=True)
    import cupy
    a = cupy.full((nbytes,), 0xEE, dtype=cupy.uint8)
    cupy.cuda.runtime.deviceSynchronize()
    print("buffer: cupy", flush=True)
    return (a.data.ptr, lambda: cupy.asnumpy(a).tobytes(),
            lambda b: (a.fill(b), cupy.cuda.runtime.deviceSynchronize()), a)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="gpu-scratch/bindings")
    ap.add_argument("--expect-lib", default=os.environ.get("OPENCUFILE_LIB", ""))
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)

    try:
        from cuda.bindings import cufile
    except Exception as e:  # noqa: BLE001
        report("import_cuda.bindings.cufile", False, repr(e))
        return 1
    print("cuda.bindings.cufile API:",
          sorted(n for n in dir(cufile) if not n.startswith("_")), flush=True)
    try:
        import cuda.bindings as cb
        print(f"cuda-bindings {getattr(cb, '__version__', '?')}", flush=True)
    except Exception:  # noqa: BLE001
        pass

    size = 4 << 20
    path = os.path.join(args.dir, "bindings.bin")
    wpath = os.path.join(args.dir, "bindings-w.bin")
    data = bytes((i * 131 + (i >> 9)) & 0xFF for i in range(size))
    with open(path, "wb") as f:
        f.write(data)

    fd = wfd = -1
    fh = wfh = None
    ptr = None
    opened = False
    try:
        ptr, to_bytes, fill, keep = device_buffer(size)
        check_maps("after_buffer_alloc", args.expect_lib)

        if hasattr(cufile, "get_version"):
            try:
                print(f"get_version() = {cufile.get_version()}", flush=True)
            except Exception as e:  # noqa: BLE001
                print(f"get_version failed: {e!r}")

        need(cufile, "driver_open")()
        opened = True
        report("driver_open", True)
        check_maps("after_driver_open", args.expect_lib)
        if hasattr(cufile, "use_count"):
            print(f"use_count() = {cufile.use_count()}", flush=True)

        fd = os.open(path, os.O_RDONLY)
        addr, keep_descr = make_descr(cufile, fd)
        fh = need(cufile, "handle_register")(addr)
        report("handle_register", True)

        need(cufile, "buf_register")(ptr, size, 0)
        report("buf_register", True)

        n = need(cufile, "read")(fh, ptr, size, 0, 0)
        got = to_bytes()
        report("read", n == size and got == data, f"ret={n} data={'ok' if got == data else 'BAD'}")

        fill(0xEE)
        n = cufile.read(fh, ptr, 65536, 100, 4096)
        got = to_bytes()
        ok = (n == 65536 and got[4096:4096 + 65536] == data[100:100 + 65536]
              and got[:4096] == b"\xee" * 4096 and got[4096 + 65536:] == b"\xee" * (size - 4096 - 65536))
        report("read_offsets", ok, f"ret={n}")

        # write back through cuFile, check on disk
        fill(0x00)
        n = cufile.read(fh, ptr, size, 0, 0)
        wfd = os.open(wpath, os.O_CREAT | os.O_TRUNC | os.O_RDWR, 0o644)
        waddr, keep_wdescr = make_descr(cufile, wfd)
        wfh = cufile.handle_register(waddr)
        n = need(cufile, "write")(wfh, ptr, size, 0, 0)
        with open(wpath, "rb") as f:
            disk = f.read()
        report("write", n == size and disk == data, f"ret={n} file={'ok' if disk == data else 'BAD'}")

        need(cufile, "buf_deregister")(ptr)
        report("buf_deregister", True)
        need(cufile, "handle_deregister")(fh)
        fh = None
        cufile.handle_deregister(wfh)
        wfh = None
        report("handle_deregister", True)
    except Exception as e:  # noqa: BLE001
        report("exception", False, repr(e))
        traceback.print_exc()
    finally:
        for h in (fh, wfh):
            if h is not None:
                try:
                    cufile.handle_deregister(h)
                except Exception:  # noqa: BLE001
                    pass
        for d in (fd, wfd):
            if d >= 0:
                os.close(d)
        if opened:
            try:
                need(cufile, "driver_close")()
                report("driver_close", True)
            except Exception as e:  # noqa: BLE001
                report("driver_close", False, repr(e))
        for p in (path, wpath):
            try:
                os.unlink(p)
            except OSError:
                pass
    check_maps("end", args.expect_lib)
    failed = [n for n, ok in results if not ok]
    print(f"cufile_bindings: {len(results) - len(failed)}/{len(results)} PASS"
          + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
