# SPDX-License-Identifier: Apache-2.0
"""Loads this package's libcufile.so.0 at interpreter start (opencufile.pth).

DESIGN: the library is opened by its full path with RTLD_GLOBAL | RTLD_NOW.
glibc then gives this copy to every later dlopen("libcufile.so.0") and to
every DT_NEEDED entry naming libcufile.so.0, whatever RUNPATH the asking
object has (torch's names the nvidia-cufile wheel): before searching any
directory, the loader matches a bare name against the SONAME of the objects
already loaded.  RTLD_GLOBAL puts its symbols in the process's global scope,
where clients that look cuFile functions up in the process
(cuda.bindings.cufile) find them.

Opening the library runs no CUDA code: its only constructor registers a fork
handler, and the CUDA driver is opened at cuFileDriverOpen.

Nothing is loaded when the process already holds a libcufile.so.0 (put there
by LD_PRELOAD, or by a program that embeds Python and links it): that copy
is the one the process uses, and a second would only be mapped.

The dlopen is _ctypes.dlopen, what ctypes.CDLL calls, without importing the
ctypes package: this runs at every interpreter start, and the package costs
more than the load itself.  Any failure is reported in one line on stderr
and the interpreter starts normally.
"""
import os

from . import LIBRARY

# What happened, for opencufile.preload_status() and `python -m opencufile`.
status = "not run"


def _load():
    try:
        from _ctypes import dlopen, dlsym
    except ImportError:  # an interpreter whose ctypes is laid out otherwise
        import ctypes

        def dlopen(name, mode):
            return ctypes.CDLL(name, mode=mode)._handle

        def dlsym(handle, name):
            return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value

    # The process's global scope (the program, what it links, LD_PRELOAD):
    # a cuFile function there means a libcufile is already in use.
    try:
        dlsym(dlopen(None, os.RTLD_LAZY), "cuFileDriverOpen")
    except (OSError, AttributeError):
        pass  # none: the usual case
    else:
        return "skipped: a libcufile.so.0 was already in the process (LD_PRELOAD or the program)"
    try:
        dlopen(LIBRARY, os.RTLD_GLOBAL | os.RTLD_NOW)
    except OSError as e:
        import sys
        sys.stderr.write(f"opencufile: {LIBRARY} not loaded ({e}); cuFile users get another "
                         "libcufile.so.0 (OPENCUFILE_DISABLE=1 silences this)\n")
        return f"failed: {e}"
    return "loaded"


status = _load()
