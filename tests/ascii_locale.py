"""Run a snippet of Python under a locale whose default encoding is ASCII (C locale, no UTF-8 mode, no locale
coercion): a file written or read without `encoding="utf-8"` fails there on the first non-ASCII character, while
the tests' own UTF-8 locale hides it. Used by the tests of modules that must write and read UTF-8 whatever the
machine's locale (issue 38: mutants dropping the encoding survived). A test should also call the function in its
own process: mutmut runs for a mutant only the tests that reached the function in-process."""

from __future__ import annotations

import os
import subprocess
import sys


def run_in_ascii_locale(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "LC_ALL": "C",
        "LANG": "C",
        "PYTHONCOERCECLOCALE": "0",
        "PYTHONUTF8": "0",
        "PYTHONIOENCODING": "utf-8",
        # the same modules as this process imports (a mutated copy under test included)
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120)
