# SPDX-License-Identifier: Apache-2.0
"""Round trips through torch.cuda.gds with opencufile in place of NVIDIA's libcufile.

Single tensors (sizes, offsets, O_DIRECT, registered or not), then many
tensors of mixed dtypes and sizes saved into one file with one GdsFile and
loaded back into fresh tensors, half of them registered with
gds_register_buffer, packed back to back (unaligned offsets) and 4 KiB
aligned on an O_DIRECT file; every tensor compared, the file checked on disk.

Run with LD_PRELOAD=/abs/path/to/our/libcufile.so.0 (scripts/gpu-check.sh does).
Checks that ours is mapped and that every cuFile symbol binds to it.

Usage: python3 tests/gpu/torch_gds_roundtrip.py [--dir DIR] [--expect-lib PATH] [--big-mib N]
Prints one PASS/FAIL line per check; exits non-zero if any check failed.
"""
import argparse
import os
import sys
import traceback

from clientcheck import check_maps, report, results  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="gpu-scratch/torch")
    ap.add_argument("--expect-lib", default=os.environ.get("OPENCUFILE_LIB", ""))
    ap.add_argument("--big-mib", type=int, default=256)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)

    try:
        import torch
    except Exception as e:  # noqa: BLE001
        report("import_torch", False, repr(e))
        return 1
    print(f"torch {torch.__version__} cuda={torch.version.cuda} "
          f"available={torch.cuda.is_available()}", flush=True)
    check_maps("after_import", args.expect_lib)
    if not torch.cuda.is_available():
        report("cuda_available", False)
        return 1

    try:
        import torch.cuda.gds as gds
    except Exception as e:  # noqa: BLE001
        report("import_torch.cuda.gds", False, repr(e))
        print("dir(torch.cuda):", [n for n in dir(torch.cuda) if not n.startswith("__")])
        return 1
    print("torch.cuda.gds API:", [n for n in dir(gds) if not n.startswith("_")], flush=True)
    GdsFile = getattr(gds, "GdsFile", None)
    reg_buf = getattr(gds, "gds_register_buffer", None)
    dereg_buf = getattr(gds, "gds_deregister_buffer", None)
    if GdsFile is None:
        report("api_GdsFile", False, f"dir(gds)={dir(gds)}")
        return 1
    print("GdsFile members:", [n for n in dir(GdsFile) if not n.startswith("_")], flush=True)
    dev = torch.device("cuda", 0)
    torch.manual_seed(1234)

    def release(f):
        """Deregisters the GdsFile's cuFile handle, where torch has the call."""
        if hasattr(f, "deregister_handle"):
            try:
                f.deregister_handle()
            except Exception as e:  # noqa: BLE001
                print(f"  note: deregister_handle: {e!r}")

    def roundtrip(name, nbytes, flags, offset=0, register=False, dtype=torch.float32):
        path = os.path.join(args.dir, f"{name}.bin")
        try:
            if os.path.exists(path):
                os.unlink(path)
            elem = torch.empty((), dtype=dtype).element_size()
            n = nbytes // elem
            if dtype.is_floating_point:
                src = torch.randn(n, dtype=dtype, device=dev)
            else:
                src = torch.randint(0, 256, (n,), dtype=dtype, device=dev)
            dst = torch.zeros_like(src)
            s_src, s_dst = src.untyped_storage(), dst.untyped_storage()
            if register:
                if reg_buf is None or dereg_buf is None:
                    report(f"{name}", False, "gds_register_buffer/gds_deregister_buffer missing")
                    return
                reg_buf(s_src)
                reg_buf(s_dst)
            f = GdsFile(path, flags)
            try:
                f.save_storage(s_src, offset)
                torch.cuda.synchronize()
                size = os.path.getsize(path)
                f.load_storage(s_dst, offset)
                torch.cuda.synchronize()
            finally:
                release(f)
                del f
                if register:
                    dereg_buf(s_src)
                    dereg_buf(s_dst)
            # Check the bytes on disk too, independently of cuFile.
            try:
                host = src.cpu().view(torch.uint8).numpy().tobytes()
            except Exception as e:  # noqa: BLE001
                print(f"  note: cannot check the file on disk: {e!r}")
                host = None
            disk_ok = True
            if host is not None:
                with open(path, "rb") as fh:
                    fh.seek(offset)
                    disk_ok = fh.read(len(host)) == host
            ok = torch.equal(src, dst) and disk_ok and size == offset + nbytes
            report(name, ok, f"bytes={nbytes} offset={offset} flags={flags:#o} file_size={size} "
                   f"equal={torch.equal(src, dst)} disk={'ok' if disk_ok else 'BAD'}")
        except Exception as e:  # noqa: BLE001
            report(name, False, repr(e))
            traceback.print_exc()
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass

    def many_tensors(name, count, flags, align):
        """count tensors saved into one file by one GdsFile, loaded back."""
        path = os.path.join(args.dir, f"{name}.bin")
        registered = []
        try:
            if os.path.exists(path):
                os.unlink(path)
            dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.uint8, torch.int32]
            srcs, offs, off = [], [], 0
            for i in range(count):
                dt = dtypes[i % len(dtypes)]
                n = 1 + (i * 7919) % 300000
                if dt.is_floating_point:
                    t = torch.randn(n, dtype=dt, device=dev)
                else:
                    t = torch.randint(0, 100, (n,), dtype=dt, device=dev)
                srcs.append(t)
                offs.append(off)
                nb = t.untyped_storage().nbytes()
                off += (nb + align - 1) // align * align
            dsts = [torch.zeros_like(t) for t in srcs]
            if reg_buf is None or dereg_buf is None:
                report(name, False, "gds_register_buffer/gds_deregister_buffer missing")
                return
            for i in range(0, count, 2):  # half registered, half not
                reg_buf(srcs[i].untyped_storage())
                reg_buf(dsts[i].untyped_storage())
                registered += [srcs[i].untyped_storage(), dsts[i].untyped_storage()]
            f = GdsFile(path, flags)
            try:
                for t, o in zip(srcs, offs):
                    f.save_storage(t.untyped_storage(), o)
                torch.cuda.synchronize()
                for t, o in zip(dsts, offs):
                    f.load_storage(t.untyped_storage(), o)
                torch.cuda.synchronize()
            finally:
                release(f)
                del f
            bad = [i for i in range(count) if not torch.equal(srcs[i], dsts[i])]
            with open(path, "rb") as fh:
                disk_bad = []
                for i in range(0, count, max(1, count // 8)):
                    host = srcs[i].cpu().view(torch.uint8).numpy().tobytes()
                    fh.seek(offs[i])
                    if fh.read(len(host)) != host:
                        disk_bad.append(i)
            report(name, not bad and not disk_bad,
                   f"tensors={count} bytes={off} align={align} flags={flags:#o} "
                   f"mismatched={bad[:8]} disk_mismatched={disk_bad[:8]}")
        except Exception as e:  # noqa: BLE001
            report(name, False, repr(e))
            traceback.print_exc()
        finally:
            for s in registered:
                try:
                    dereg_buf(s)
                except Exception as e:  # noqa: BLE001
                    print(f"  note: gds_deregister_buffer: {e!r}")
            try:
                os.unlink(path)
            except OSError:
                pass

    RW = os.O_CREAT | os.O_RDWR
    roundtrip("small_rdwr", 4 << 20, RW)
    roundtrip("odd_size_uint8", 1000003, RW, dtype=torch.uint8)
    roundtrip("offset_1mib", 1 << 20, RW, offset=1 << 20)
    roundtrip("unaligned_offset", 65536, RW, offset=100, dtype=torch.uint8)
    roundtrip("odirect_small", 4 << 20, RW | os.O_DIRECT)
    roundtrip(f"odirect_{args.big_mib}mib_registered", args.big_mib << 20, RW | os.O_DIRECT,
              register=True)
    roundtrip(f"rdwr_{args.big_mib}mib_unregistered", args.big_mib << 20, RW)
    many_tensors("many_tensors_packed", 96, RW, 1)
    many_tensors("many_tensors_odirect_aligned", 64, RW | os.O_DIRECT, 4096)
    check_maps("end", args.expect_lib)

    failed = [n for n, ok in results if not ok]
    print(f"torch_gds: {len(results) - len(failed)}/{len(results)} PASS"
          + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
