"""`./bootstrap.sh test`'s pytest command ends, naming the test, when a test takes its worker
process down (a crash in C code: an abort, a segfault).

Found on Debian 13: a worker aborted in the switch's C, pytest-xdist 3.8 replaced it under
`--dist loadgroup`, and the run then waited for ever with no summary (CI would have been cut at
its time limit, the crashing test unnamed). The command's arguments are read from bootstrap.sh
itself and run on a small suite whose second file aborts.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bootstrap_pytest_args() -> list[str]:
    """The PYTEST=( ... ) array of bootstrap.sh's test action, after `-m pytest`."""
    text = (ROOT / "bootstrap.sh").read_text()
    match = re.search(r"PYTEST=\((.*?)\)\n", text, re.S)
    assert match, "bootstrap.sh has no PYTEST=( ... ) array"
    words = shlex.split(match.group(1).replace("\\\n", " "), comments=False)
    assert words[:3] == ["$VENV/bin/python", "-m", "pytest"], words[:3]
    return [w.replace("${INAEMU_TEST_WORKERS:-auto}", "2") for w in words[3:]]


def test_a_crashing_test_ends_the_run_and_is_named(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text("def test_a1():\n    pass\n\ndef test_a2():\n    pass\n")
    (tmp_path / "test_b.py").write_text(
        "import os\n\ndef test_b1():\n    os.abort()\n\ndef test_b2():\n    pass\n")
    (tmp_path / "test_c.py").write_text("def test_c1():\n    pass\n")
    (tmp_path / "conftest.py").write_text("")
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", *bootstrap_pytest_args(),
                               "-p", "no:faulthandler"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as hung:
        raise AssertionError(f"the run did not end after a worker crashed:\n{hung.stdout}")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "crashed while running 'test_b.py::test_b1'" in out, out
    assert "1 failed" in out, out
