"""Write every hand-written BMv2 fixture: `python tests/bmv2/make_fixtures.py`.

The JSON files are committed; `tests/stf/test_bmv2_fixtures.py` checks they are what these
definitions produce, so an edit to a definition cannot silently leave a stale file behind.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import programs_control  # noqa: E402
import programs_externs  # noqa: E402
import programs_parser  # noqa: E402


def all_programs():
    for make in programs_parser.PROGRAMS + programs_control.PROGRAMS + programs_externs.PROGRAMS:
        program = make()
        yield program.name, program.to_json()


def render(config: dict) -> str:
    return json.dumps(config, indent=2) + "\n"


def main() -> int:
    for name, config in all_programs():
        folder = HERE / name
        folder.mkdir(exist_ok=True)
        (folder / f"{name}.json").write_text(render(config), encoding="utf-8")
        print(f"wrote {folder.name}/{name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
