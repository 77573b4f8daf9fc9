# SPDX-License-Identifier: Apache-2.0
"""Writes the opencufile wheel (PEP 427) with the standard library only.

    python3 python/build_wheel.py --stage DIR --version V --tag TAG --out DIST

DIR holds what the wheel installs into site-packages, laid out as installed
(opencufile/..., opencufile.pth); this adds the .dist-info directory
(METADATA, WHEEL, entry_points.txt, top_level.txt, LICENSE, RECORD) and
writes DIST/opencufile-V-TAG.whl.  Executables keep their mode (pip restores
the executable bit).  Entries are sorted and dated SOURCE_DATE_EPOCH (else
1980-01-01), so the same files give the same wheel.  Prints the wheel's path.
"""
import argparse
import base64
import hashlib
import os
import stat
import sys
import time
import zipfile

NAME = "opencufile"
COMMANDS = ("gdscheck", "gdsio", "gds_stats")

METADATA = """\
Metadata-Version: 2.1
Name: opencufile
Version: {version}
Summary: Open-source libcufile.so.0 (the cuFile API of GPUDirect Storage) for every cuFile user of a Python environment
License: Apache-2.0
Classifier: License :: OSI Approved :: Apache Software License
Classifier: Operating System :: POSIX :: Linux
Classifier: Programming Language :: C
Classifier: Programming Language :: Python :: 3
Requires-Python: >=3.8
Description-Content-Type: text/markdown

# opencufile

An open-source implementation, in C, of NVIDIA's cuFile API (`libcufile.so.0`).
Installing this wheel makes every cuFile user of the environment use it:
`torch.cuda.gds`, `cuda.bindings.cufile`, and libraries that open
`libcufile.so.0` by name or link it.  At interpreter start, `opencufile.pth`
loads the package's library by full path with `RTLD_GLOBAL`; every later
`dlopen("libcufile.so.0")` and `DT_NEEDED` entry then resolves to it.

    python -m opencufile          # which libcufile.so.0 this interpreter uses, and why
    OPENCUFILE_DISABLE=1 python   # one process without it
    pip uninstall opencufile      # the environment without it

Also installs the commands `gdscheck`, `gdsio` and `gds_stats`.  The library
needs only glibc; it opens the CUDA driver at `cuFileDriverOpen`, and without
one it does host-memory I/O.
"""

WHEEL = """\
Wheel-Version: 1.0
Generator: opencufile build_wheel.py
Root-Is-Purelib: false
Tag: {tag}
"""


def digest(data):
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={h}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--tag", required=True, help="e.g. py3-none-manylinux_2_34_x86_64")
    ap.add_argument("--license", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    stamp = time.gmtime(max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800))[:6]
    info = f"{NAME}-{args.version}.dist-info"
    files = []  # (archive name, bytes, mode)
    for root, dirs, names in os.walk(args.stage):
        dirs.sort()
        for n in sorted(names):
            full = os.path.join(root, n)
            if "__pycache__" in full:
                continue
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode):
                sys.exit(f"build_wheel: {full} is not a regular file (a wheel holds no links)")
            mode = 0o755 if st.st_mode & 0o111 else 0o644
            with open(full, "rb") as f:
                files.append((os.path.relpath(full, args.stage), f.read(), mode))
    files.append((f"{NAME}/_version.py",
                  f"# SPDX-License-Identifier: Apache-2.0\nversion = \"{args.version}\"\n".encode(), 0o644))
    files.sort()
    with open(args.license, "rb") as f:
        license_text = f.read()
    entry_points = "[console_scripts]\n" + "".join(
        f"{c} = {NAME}._tools:{c}\n" for c in COMMANDS)
    meta = [
        (f"{info}/METADATA", METADATA.format(version=args.version).encode(), 0o644),
        (f"{info}/WHEEL", WHEEL.format(tag=args.tag).encode(), 0o644),
        (f"{info}/entry_points.txt", entry_points.encode(), 0o644),
        (f"{info}/top_level.txt", f"{NAME}\n".encode(), 0o644),
        (f"{info}/LICENSE", license_text, 0o644),
    ]
    record = "".join(f"{n},{digest(d)},{len(d)}\n" for n, d, _ in files + meta)
    record += f"{info}/RECORD,,\n"
    meta.append((f"{info}/RECORD", record.encode(), 0o644))

    os.makedirs(args.out, exist_ok=True)
    whl = os.path.join(args.out, f"{NAME}-{args.version}-{args.tag}.whl")
    tmp = whl + ".part"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d, mode in files + meta:  # .dist-info last, as PEP 427 recommends
            zi = zipfile.ZipInfo(n, date_time=stamp)
            zi.external_attr = (stat.S_IFREG | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)
    os.replace(tmp, whl)
    print(whl)


if __name__ == "__main__":
    main()
