# SPDX-License-Identifier: Apache-2.0
"""python -m opencufile [--lib]: which libcufile.so.0 this interpreter uses,
and why (opencufile._which); --lib prints only the path of the package's
library, e.g. for LD_PRELOAD=$(python -m opencufile --lib) in other programs."""
import sys

from . import LIBRARY
from ._which import report

if __name__ == "__main__":
    if sys.argv[1:] == ["--lib"]:
        print(LIBRARY)
    elif sys.argv[1:]:
        sys.exit("usage: python -m opencufile [--lib]")
    else:
        report()
