# SPDX-License-Identifier: Apache-2.0
"""Every cuFile API family through cuda.bindings.cufile (cuda-bindings 13.x).

Run with LD_PRELOAD=/abs/path/to/our/libcufile.so.0 (scripts/gpu-check.sh does).
Families, in order, each with its data or values checked:
  version; parameters while closed (getters, setters staged and read back,
  min/max); driver open / use_count; properties and their setters; the BAR
  size; statistics (level, start, L1/L2/L3 counters after reads, reset,
  stop); file handles; buffer registration; read/write (offsets, guard
  bytes, the file checked through POSIX); batch (set up, submit, status,
  cancel, destroy); async read/write on a CUDA stream (bytes and data after
  the stream synchronises), stream register/deregister; parameter setters
  refused while open; driver close.  The device buffer comes from torch,
  else cupy.  One PASS/FAIL line per check; exit status non-zero on any
  failure.  Functions missing from the bindings are reported as FAIL.

Usage: python3 tests/gpu/cufile_bindings_smoke.py [--dir DIR] [--expect-lib PATH]
"""
import argparse
import ctypes
import os
import sys
import time
import traceback

from clientcheck import check_maps, report, results  # noqa: E402


def binding_use_count(cufile):
    """cuFileUseCount through the binding; some cuda.bindings releases wrap it
    as returning nothing (None), and then the process's own symbol (ours,
    preloaded) is called through ctypes instead."""
    n = need(cufile, "use_count")()
    if n is None:
        f = ctypes.CDLL(None).cuFileUseCount
        f.restype = ctypes.c_long
        n = f()
    return int(n)


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


# Struct layouts per the interface spec (x86-64).
class IOParams(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int), ("_pad", ctypes.c_int),
                ("devPtr_base", ctypes.c_void_p), ("file_offset", ctypes.c_int64),
                ("devPtr_offset", ctypes.c_int64), ("size", ctypes.c_size_t),
                ("fh", ctypes.c_void_p), ("opcode", ctypes.c_int), ("_pad2", ctypes.c_int),
                ("cookie", ctypes.c_void_p)]


class IOEvents(ctypes.Structure):
    _fields_ = [("cookie", ctypes.c_void_p), ("status", ctypes.c_int), ("_pad", ctypes.c_int),
                ("ret", ctypes.c_size_t)]


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


assert ctypes.sizeof(IOParams) == 64 and ctypes.sizeof(IOEvents) == 24

# Enumeration values per the interface spec.
PARAM_PROFILE_STATS = 0            # CUFileSizeTConfigParameter_t
PARAM_MAX_IO_THREADS = 2
PARAM_MIN_IO_THRESHOLD_SIZE_KB = 3
PARAM_USE_POLL_MODE = 0            # CUFileBoolConfigParameter_t
PARAM_ALLOW_COMPAT_MODE = 1
PARAM_LOGGING_LEVEL = 0            # CUFileStringConfigParameter_t
STATUS_COMPLETE = 0x10
STATUS_CANCELED = 0x08
DRIVER_ALREADY_OPEN = 5026
STATS_L1, STATS_L2, STATS_L3 = 512, 1024, 5000


def err_code(e):
    """The CUfileOpError of a cuFileError (the bindings' attribute names vary)."""
    for a in ("status", "err", "error", "code"):
        v = getattr(e, a, None)
        if isinstance(v, int) or hasattr(v, "value"):
            return int(getattr(v, "value", v))
    for tok in str(e).replace(",", " ").replace(")", " ").split():
        if tok.isdigit() and 5000 < int(tok) < 5100:
            return int(tok)
    return None


def step(name, fn):
    """Runs one check; an exception is a FAIL with its text."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        report(name, False, f"{e!r}")
        traceback.print_exc()


def get_string_param(cufile, param):
    f = need(cufile, "get_parameter_string")
    try:
        return f(param, 64)  # newer bindings return the string
    except TypeError:
        buf = ctypes.create_string_buffer(64)
        f(param, ctypes.addressof(buf), 64)
        return buf.value.decode()


def get_size_param(cufile, param):
    f = need(cufile, "get_parameter_size_t")
    try:
        return int(f(param))
    except TypeError:
        v = ctypes.c_size_t()
        f(param, ctypes.addressof(v))
        return v.value


def get_bool_param(cufile, param):
    f = need(cufile, "get_parameter_bool")
    try:
        return bool(f(param))
    except TypeError:
        v = ctypes.c_bool()
        f(param, ctypes.addressof(v))
        return v.value


def batch_set_up(cufile, nr):
    f = need(cufile, "batch_io_set_up")
    try:
        return int(f(nr))
    except TypeError:
        h = ctypes.c_void_p()
        f(ctypes.addressof(h), nr)
        return h.value


def expect_refused_while_open(name, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        code = err_code(e)
        report(name, code == DRIVER_ALREADY_OPEN, f"raised {e!r} (code {code})")
        return
    report(name, False, "accepted while the driver is open")


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

    st = {"fd": -1, "wfd": -1, "fh": None, "wfh": None, "opened": False, "registered": False}
    try:
        ptr, to_bytes, fill, keep = device_buffer(size)
        check_maps("after_buffer_alloc", args.expect_lib)

        # ---- version and parameters, driver closed
        def version():
            v = need(cufile, "get_version")()
            v = int(v) if v is not None else None
            report("get_version", v is not None and 1150 <= v <= 1190, f"{v}")  # NVIDIA 1.15.1: 1150; ours: 1190
        step("get_version", version)

        def params_closed():
            lvl = get_string_param(cufile, PARAM_LOGGING_LEVEL)
            report("get_parameter_string", isinstance(lvl, str) and len(lvl) > 0, f"logging level {lvl!r}")
            need(cufile, "set_parameter_size_t")(PARAM_MAX_IO_THREADS, 6)
            v = get_size_param(cufile, PARAM_MAX_IO_THREADS)
            report("set_parameter_size_t_staged", v == 6, f"max_io_threads read back {v}")
            need(cufile, "set_parameter_bool")(PARAM_USE_POLL_MODE, False)
            b = get_bool_param(cufile, PARAM_USE_POLL_MODE)
            report("set_parameter_bool_staged", b is False, f"use_poll_mode read back {b}")
            s = ctypes.create_string_buffer(b"ERROR")
            need(cufile, "set_parameter_string")(PARAM_LOGGING_LEVEL, ctypes.addressof(s))
            lvl = get_string_param(cufile, PARAM_LOGGING_LEVEL)
            report("set_parameter_string_staged", lvl == "ERROR", f"{lvl!r}")
            mm = need(cufile, "get_parameter_min_max_value")(PARAM_MIN_IO_THRESHOLD_SIZE_KB)
            lo, hi = (int(x) for x in mm)
            report("get_parameter_min_max_value", lo <= hi, f"min_io_threshold_size_kb [{lo}, {hi}]")
        step("parameters_closed", params_closed)

        # ---- driver open
        need(cufile, "driver_open")()
        st["opened"] = True
        report("driver_open", True)
        check_maps("after_driver_open", args.expect_lib)

        def use_count():
            n = binding_use_count(cufile)
            report("use_count", n >= 1, f"{n}")
            v = get_size_param(cufile, PARAM_MAX_IO_THREADS)
            report("staged_parameter_applied_at_open", v == 6, f"max_io_threads {v}")
        step("use_count", use_count)

        # ---- properties
        def props():
            buf = (ctypes.c_ubyte * 56)()
            need(cufile, "driver_get_properties")(ctypes.addressof(buf))
            raw = bytes(buf)
            fflags = int.from_bytes(raw[32:36], "little")
            max_batch = int.from_bytes(raw[48:52], "little")
            report("driver_get_properties", fflags != 0 and max_batch > 0,
                   f"fflags={fflags:#x} max_batch_io_size={max_batch}")
            need(cufile, "driver_set_max_direct_io_size")(8192)
            need(cufile, "driver_get_properties")(ctypes.addressof(buf))
            mdio = int.from_bytes(bytes(buf)[16:24], "little")
            report("driver_set_max_direct_io_size", mdio == 8192, f"max_direct_io_size now {mdio}")
            need(cufile, "driver_set_poll_mode")(False, 4)
            need(cufile, "driver_set_max_cache_size")(1024)
            need(cufile, "driver_set_max_pinned_mem_size")(1 << 20)
            report("driver_setters", True)
            kb = int(need(cufile, "get_bar_size_in_kb")(0))
            report("get_bar_size_in_kb", kb > 0, f"{kb} KiB")
        step("properties", props)

        # ---- statistics on
        def stats_on():
            need(cufile, "set_stats_level")(3)
            lvl = int(need(cufile, "get_stats_level")())
            need(cufile, "stats_reset")()
            need(cufile, "stats_start")()
            report("stats_level_start", lvl == 3, f"level {lvl}")
        step("stats_on", stats_on)

        # ---- handles and buffers
        st["fd"] = os.open(path, os.O_RDONLY)
        addr, keep_descr = make_descr(cufile, st["fd"])
        st["fh"] = fh = need(cufile, "handle_register")(addr)
        report("handle_register", True)
        need(cufile, "buf_register")(ptr, size, 0)
        st["registered"] = True
        report("buf_register", True)

        # ---- synchronous read/write
        def sync_io():
            n = need(cufile, "read")(fh, ptr, size, 0, 0)
            got = to_bytes()
            report("read", n == size and got == data, f"ret={n} data={'ok' if got == data else 'BAD'}")
            fill(0xEE)
            n = cufile.read(fh, ptr, 65536, 100, 4096)
            got = to_bytes()
            ok = (n == 65536 and got[4096:4096 + 65536] == data[100:100 + 65536]
                  and got[:4096] == b"\xee" * 4096 and got[4096 + 65536:] == b"\xee" * (size - 4096 - 65536))
            report("read_offsets_guard_bytes", ok, f"ret={n}")
            fill(0x00)
            cufile.read(fh, ptr, size, 0, 0)
            st["wfd"] = os.open(wpath, os.O_CREAT | os.O_TRUNC | os.O_RDWR, 0o644)
            waddr, keep_wdescr = make_descr(cufile, st["wfd"])
            st["wfh"] = cufile.handle_register(waddr)
            n = need(cufile, "write")(st["wfh"], ptr, size, 0, 0)
            with open(wpath, "rb") as f:
                disk = f.read()
            report("write", n == size and disk == data, f"ret={n} file={'ok' if disk == data else 'BAD'}")
        step("sync_io", sync_io)

        # ---- statistics read back
        def stats_read():
            for name, n in (("get_stats_l1", STATS_L1), ("get_stats_l2", STATS_L2), ("get_stats_l3", STATS_L3)):
                buf = (ctypes.c_ubyte * n)()
                need(cufile, name)(ctypes.addressof(buf))
                raw = bytes(buf)
                read_ok = int.from_bytes(raw[0:8], "little")       # read_ops.ok
                read_bytes = int.from_bytes(raw[96:104], "little")  # read_bytes
                report(name, read_ok >= 3 and read_bytes >= 2 * size + 65536,
                       f"read_ops.ok={read_ok} read_bytes={read_bytes}")
            need(cufile, "stats_reset")()
            buf = (ctypes.c_ubyte * STATS_L1)()
            cufile.get_stats_l1(ctypes.addressof(buf))
            after = int.from_bytes(bytes(buf)[0:8], "little")
            report("stats_reset", after == 0, f"read_ops.ok after reset {after}")
        step("stats_read", stats_read)

        # ---- batch
        def batch():
            nr = 8
            chunk = 65536
            b = batch_set_up(cufile, nr)
            io = (IOParams * nr)()
            for i in range(nr):
                io[i].mode = 1  # CUFILE_BATCH
                io[i].devPtr_base = ptr
                io[i].file_offset = i * chunk * 3
                io[i].devPtr_offset = i * chunk
                io[i].size = chunk
                io[i].fh = fh
                io[i].opcode = 0  # CUFILE_READ
                io[i].cookie = 1000 + i
            fill(0xEE)
            need(cufile, "batch_io_submit")(b, nr, ctypes.addressof(io), 0)
            ev = (IOEvents * nr)()
            got, cookies = 0, set()
            t0 = time.time()
            while got < nr and time.time() - t0 < 30:
                n = ctypes.c_uint(nr - got)
                ts = Timespec(1, 0)
                need(cufile, "batch_io_get_status")(b, nr - got, ctypes.addressof(n),
                                                    ctypes.addressof(ev) + got * ctypes.sizeof(IOEvents),
                                                    ctypes.addressof(ts))
                got += n.value
            good = all(ev[i].status == STATUS_COMPLETE and ev[i].ret == chunk for i in range(got))
            cookies = {ev[i].cookie for i in range(got)}
            hb = to_bytes()
            data_ok = all(hb[i * chunk:(i + 1) * chunk] == data[i * chunk * 3:i * chunk * 3 + chunk]
                          for i in range(nr))
            report("batch_io_submit_get_status", got == nr and good and data_ok
                   and cookies == set(range(1000, 1000 + nr)),
                   f"events={got} statuses_ok={good} data={'ok' if data_ok else 'BAD'}")
            need(cufile, "batch_io_cancel")(b)  # nothing pending: must succeed
            report("batch_io_cancel", True)
            need(cufile, "batch_io_destroy")(b)
            report("batch_io_destroy", True)
        step("batch", batch)

        # ---- stream (async) I/O
        def stream_io():
            import torch
            s = torch.cuda.Stream()
            handle = int(s.cuda_stream)
            need(cufile, "stream_register")(handle, 0)
            fill(0x00)
            sz, foff, boff = ctypes.c_size_t(65536), ctypes.c_int64(8192), ctypes.c_int64(0)
            nread = ctypes.c_ssize_t(-12345)
            need(cufile, "read_async")(fh, ptr, ctypes.addressof(sz), ctypes.addressof(foff),
                                       ctypes.addressof(boff), ctypes.addressof(nread), handle)
            s.synchronize()
            got = to_bytes()
            report("read_async", nread.value == 65536 and got[:65536] == data[8192:8192 + 65536],
                   f"bytes={nread.value}")
            wsz, wfoff, wboff = ctypes.c_size_t(65536), ctypes.c_int64(size), ctypes.c_int64(0)
            nwritten = ctypes.c_ssize_t(-12345)
            need(cufile, "write_async")(st["wfh"], ptr, ctypes.addressof(wsz), ctypes.addressof(wfoff),
                                        ctypes.addressof(wboff), ctypes.addressof(nwritten), handle)
            s.synchronize()
            with open(wpath, "rb") as f:
                f.seek(size)
                disk = f.read(65536)
            report("write_async", nwritten.value == 65536 and disk == data[8192:8192 + 65536],
                   f"bytes={nwritten.value}")
            need(cufile, "stream_deregister")(handle)
            report("stream_register_deregister", True)
        step("stream_io", stream_io)

        # ---- parameter setters refused while open
        expect_refused_while_open("set_parameter_refused_while_open",
                                  lambda: cufile.set_parameter_size_t(PARAM_MAX_IO_THREADS, 4))

        def stats_off():
            need(cufile, "stats_stop")()
            cufile.set_stats_level(0)
            report("stats_stop", True)
        step("stats_off", stats_off)

        need(cufile, "buf_deregister")(ptr)
        st["registered"] = False
        report("buf_deregister", True)
        need(cufile, "handle_deregister")(fh)
        st["fh"] = None
        cufile.handle_deregister(st["wfh"])
        st["wfh"] = None
        report("handle_deregister", True)
    except Exception as e:  # noqa: BLE001
        report("exception", False, repr(e))
        traceback.print_exc()
    finally:
        if st["registered"]:
            try:
                cufile.buf_deregister(ptr)
            except Exception:  # noqa: BLE001
                pass
        for h in (st["fh"], st["wfh"]):
            if h is not None:
                try:
                    cufile.handle_deregister(h)
                except Exception:  # noqa: BLE001
                    pass
        for d in (st["fd"], st["wfd"]):
            if d >= 0:
                os.close(d)
        if st["opened"]:
            try:
                need(cufile, "driver_close")()
                n = binding_use_count(cufile)
                report("driver_close", n == 0, f"use_count after close {n}")
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
