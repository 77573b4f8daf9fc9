# SPDX-License-Identifier: Apache-2.0
"""opencufile: an open-source libcufile.so.0 (the cuFile API) for this Python
environment.

Installing the wheel makes every cuFile user of the environment use it:
opencufile.pth loads the library at interpreter start (opencufile._preload).
OPENCUFILE_DISABLE=1 turns that off for one process; `pip uninstall
opencufile` for the environment.  `python -m opencufile` says which
libcufile.so.0 the interpreter uses and why.

This module is imported at every interpreter start: it imports nothing.
"""
import os as _os

_HERE = _os.path.dirname(_os.path.abspath(__file__))
LIBRARY = _os.path.join(_HERE, "lib", "libcufile.so.0")
BIN = _os.path.join(_HERE, "bin")


def library_path():
    """Full path of the libcufile.so.0 this package holds (for LD_PRELOAD in
    programs that are not Python)."""
    return LIBRARY


def preload_status():
    """What opencufile.pth did at this interpreter's start: "loaded",
    "disabled (OPENCUFILE_DISABLE=...)", "skipped: ..." or "failed: ..."."""
    import sys
    pre = sys.modules.get(__name__ + "._preload")
    if pre is not None:
        return pre.status
    value = _os.environ.get("OPENCUFILE_DISABLE", "")
    if value not in ("", "0"):
        return f"disabled (OPENCUFILE_DISABLE={value})"
    return "not run (opencufile.pth not processed: python -S, or not in a site directory)"
