"""ina.p4 in the project's runtime behind its P4Runtime server on 127.0.0.1:0, with the pipeline
pushed by the controller's client: the set-up the controller's job tests share."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from controller.client import SwitchClient
from p4switch.compiler import compile_file
from p4switch.runtime import Switch
from p4switch.server import P4RuntimeServer

INA_P4 = Path(__file__).resolve().parents[2] / "p4src" / "ina.p4"


def compile_ina(tmp_path: Path, k: int, cells: int) -> tuple[Path, Path]:
    """ina.p4 with INA_K = k and INA_CELLS = cells: (P4Info text file, BMv2 JSON file)."""
    build = compile_file(str(INA_P4), defines={"INA_K": str(k), "INA_CELLS": str(cells)})
    p4info, config = tmp_path / f"ina{k}.p4info.txtpb", tmp_path / f"ina{k}.json"
    p4info.write_text(build.p4info_text())
    config.write_text(json.dumps(build.bmv2))
    return p4info, config


@contextlib.contextmanager
def ina_switch(tmp_path: Path, k: int, cells: int):
    """(switch runtime, connected client, server), the pipeline already pushed over P4Runtime."""
    p4info, config = compile_ina(tmp_path, k, cells)
    switch = Switch(None)
    server = P4RuntimeServer(switch, device_id=1, cpu_port=None, address="127.0.0.1:0",
                             packet_out=lambda data: None)
    server.start()
    try:
        with SwitchClient("s1", f"127.0.0.1:{server.bound_port}", 1, timeout=10) as client:
            client.set_pipeline_files(p4info, config)
            yield switch, client, server
    finally:
        server.stop(grace=0)
