# SPDX-License-Identifier: Apache-2.0
"""`python -m opencufile`: which libcufile.so.0 this interpreter uses, whether
it is opencufile, and why: the facts of gdscheck's "Library" section
(tools/which_libcufile.c), for a Python process.

DESIGN: the copy in use is the one dlopen("libcufile.so.0") gives here (the
call ctypes users, cuda.bindings and every DT_NEEDED entry end in); its file
is found from the address of cuFileGetVersion in /proc/self/maps.  The
reason is, in order: opencufile.pth (it loaded the package's copy by full
path at start, see _preload.py), else ld.so's own search redone for the
name: LD_PRELOAD, LD_LIBRARY_PATH, the ld.so cache (first entry; the
/etc/ld.so.conf file that lists its directory), the system directories.  A
copy is told to be opencufile by the name of one of its settings,
OPENCUFILE_LIBCUDA, inside the file, as gdscheck does.  Copies inside Python
packages (the nvidia-cufile wheels, found by torch's libraries through their
RUNPATH) are listed with what they mean while ours is loaded.
"""
import ctypes
import glob
import os
import subprocess
import sys
import sysconfig

from . import LIBRARY, preload_status

SONAME = "libcufile.so.0"


def identify(path):
    """"opencufile", "another implementation" or "unreadable"."""
    marker = b"OPENCUFILE_LIBCUDA"
    try:
        with open(path, "rb") as f:
            tail = b""
            while True:
                block = f.read(1 << 16)
                if not block:
                    return "another implementation"
                if marker in tail + block:
                    return "opencufile"
                tail = block[-len(marker):]
    except OSError:
        return "unreadable"


def _same_file(a, b):
    try:
        return bool(a and b) and os.path.samefile(a, b)
    except OSError:
        return False


def _elf_kind(path):
    """(class, machine) of an ELF file, None when it is not one."""
    try:
        with open(path, "rb") as f:
            h = f.read(20)
    except OSError:
        return None
    if len(h) < 20 or h[:4] != b"\x7fELF":
        return None
    return h[4], int.from_bytes(h[18:20], "little" if h[5] == 1 else "big")


_SELF_KIND = _elf_kind(sys.executable) or _elf_kind("/proc/self/exe")


def _usable(path):
    """Whether ld.so would take this file for this process."""
    return os.access(path, os.R_OK) and (_SELF_KIND is None or _elf_kind(path) == _SELF_KIND)


def mapped_copies():
    """Every libcufile.so* file mapped into this process, in map order."""
    seen = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                i = line.find("/")
                if i < 0:
                    continue
                p = line[i:].rstrip("\n")
                if os.path.basename(p).startswith("libcufile.so") and p not in seen:
                    seen.append(p)
    except OSError:
        pass
    return seen


def _file_at(addr):
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= addr < hi and len(parts) == 6:
                return parts[5].strip()
    return None


def in_use():
    """(path, None) of the copy dlopen("libcufile.so.0") gives this process,
    or (None, error) when there is none."""
    try:
        lib = ctypes.CDLL(SONAME)
        addr = ctypes.cast(lib.cuFileGetVersion, ctypes.c_void_p).value
    except (OSError, AttributeError) as e:
        return None, str(e)
    path = _file_at(addr)
    return (os.path.realpath(path), None) if path else (None, "not found in /proc/self/maps")


def _ldconfig():
    for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig"):
        if os.access(p, os.X_OK):
            return p
    return None


def cache_entries():
    """libcufile.so.0 entries of the ld.so cache usable here, in lookup
    order; None when ldconfig cannot be run."""
    prog = _ldconfig()
    if not prog:
        return None
    try:
        out = subprocess.run([prog, "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = []
    for line in out.splitlines():
        s = line.strip()
        if s.startswith(SONAME + " ") and "=> " in s:
            p = s.split("=> ", 1)[1].strip()
            if _usable(p):
                found.append(p)
    return found


def _conf_lists(conf, d, depth=0):
    """The first file of /etc/ld.so.conf (following includes, in order) that
    lists directory d, or None."""
    if depth > 4:
        return None
    try:
        with open(conf) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        s = line.split("#", 1)[0].strip()
        if not s:
            continue
        if s.startswith(("include ", "include\t")):
            pat = s[8:].strip().split()[0]
            if not pat.startswith("/"):
                pat = os.path.join(os.path.dirname(conf), pat)
            for inc in sorted(glob.glob(pat)):
                who = _conf_lists(inc, d, depth + 1)
                if who:
                    return who
            continue
        entry = s.replace("=", " ").replace(":", " ").replace(",", " ").split()[0]
        if os.path.realpath(entry) == d:
            return conf
    return None


def _system_dirs():
    ma = sysconfig.get_config_var("MULTIARCH") or ""
    dirs = [f"/lib/{ma}", f"/usr/lib/{ma}"] if ma else []
    return dirs + ["/lib64", "/usr/lib64", "/lib", "/usr/lib"]


def predict(cache):
    """(path, reason) of what ld.so's search gives for the name, or (None, None)."""
    for t in os.environ.get("LD_PRELOAD", "").replace(":", " ").split():
        if os.path.basename(t).startswith("libcufile.so") and os.path.exists(t):
            return t, f"LD_PRELOAD ({t})"
    for d in os.environ.get("LD_LIBRARY_PATH", "").replace(";", ":").split(":"):
        cand = os.path.join(d or ".", SONAME)
        if d and _usable(cand):
            return cand, f"LD_LIBRARY_PATH ({d})"
    if cache:
        return cache[0], f"the ld.so cache, whose first {SONAME} is {cache[0]}"
    for d in _system_dirs():
        cand = os.path.join(d, SONAME)
        if _usable(cand):
            return cand, f"the system directory {d} (not in the ld.so cache)"
    return None, None


def package_copies():
    """libcufile files inside Python packages on sys.path (the nvidia wheels)."""
    found = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        for p in sorted(glob.glob(os.path.join(entry, "nvidia", "*", "lib", SONAME))):
            r = os.path.realpath(p)
            if r not in found:
                found.append(r)
    return found


def report(out=sys.stdout):
    try:
        from ._version import version
    except ImportError:
        version = "unknown"
    w = out.write
    status = preload_status()
    pth = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(LIBRARY))), "opencufile.pth")
    w(f"opencufile {version}: {LIBRARY} ({identify(LIBRARY)})\n")
    w(f"  at interpreter start, {pth}: {status}\n")

    w("\nLibrary\n")
    preloaded = status == "loaded"
    path, err = in_use()
    cache = cache_entries()
    predicted, why = predict(cache)
    if path is None:
        w(f"  {SONAME} in this interpreter: none ({err})\n")
    else:
        w(f"  {SONAME} in this interpreter: {path} ({identify(path)})\n")
        if preloaded and _same_file(path, LIBRARY):
            w("  chosen by: opencufile.pth, which loaded it by full path at interpreter start;\n"
              f"    every later dlopen(\"{SONAME}\") and every DT_NEEDED entry naming it matches\n"
              "    it by SONAME, whatever RUNPATH the asking library has\n")
            if predicted:
                w(f"  without it (OPENCUFILE_DISABLE=1): {predicted} ({identify(predicted)}),\n"
                  f"    chosen by {why}\n")
            else:
                w(f"  without it (OPENCUFILE_DISABLE=1): no {SONAME} in the search path or the ld.so cache\n")
        elif predicted and _same_file(predicted, path):
            w(f"  chosen by: {why}\n")
        elif predicted:
            w("  loaded by another route (a full path, or a library's own RUNPATH);\n"
              f"  a plain dlopen(\"{SONAME}\") would get {predicted} ({identify(predicted)}), chosen by {why}\n")
        else:
            w(f"  loaded by another route; no {SONAME} in the search path or the ld.so cache\n")
    if cache and predicted == cache[0] and why and why.startswith("the ld.so cache"):
        d = os.path.realpath(os.path.dirname(cache[0]))
        who = _conf_lists("/etc/ld.so.conf", d)
        if who:
            w(f"    the cache's first entry: its directory is listed in {who}\n")
        else:
            w("    the cache's first entry: its directory is not listed in /etc/ld.so.conf(.d): a system\n"
              "    directory, which ldconfig puts after the listed ones\n")
    for p in package_copies():
        if path and _same_file(p, path):
            continue
        fate = ("get the copy above instead, as it was loaded first"
                if path else "get this copy")
        w(f"  in a Python package: {p} ({identify(p)});\n"
          f"    libraries whose RUNPATH names its directory (torch's) {fate}\n")
    if cache is None:
        w("  ld.so cache: ldconfig not found, not read\n")
    for i, p in enumerate(cache or [], 1):
        w(f"  ld.so cache entry {i}: {p} ({identify(p)})\n")
    w("  to choose: OPENCUFILE_DISABLE=1 for one process; `pip uninstall opencufile` for this\n"
      f"  environment; LD_PRELOAD=/path/{SONAME} wins over both (docs/using.md)\n")
