# SPDX-License-Identifier: Apache-2.0
"""The console commands gdscheck, gdsio and gds_stats: each replaces the
Python process with the program of that name in the package's bin/ (which
finds the package's libcufile.so.0 through its RUNPATH, $ORIGIN/../lib)."""
import os
import sys

from . import BIN


def _exec(name):
    path = os.path.join(BIN, name)
    try:
        os.execv(path, [name] + sys.argv[1:])
    except OSError as e:
        sys.exit(f"{name}: cannot run {path}: {e}")


def gdscheck():
    _exec("gdscheck")


def gdsio():
    _exec("gdsio")


def gds_stats():
    _exec("gds_stats")
