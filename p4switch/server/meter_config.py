"""MeterConfig (P4Runtime, per second) -> meter rates as the runtime takes them (per microsecond).

P4Runtime gives committed/peak information rates in units per second (bytes or packets, as the
meter's unit says) and burst sizes in units; BMv2, and so the runtime API, take rates per
microsecond.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from .errors import INVALID_ARGUMENT, RequestError


def meter_rates(config: p4runtime_pb2.MeterConfig) -> list[tuple[float, int]]:
    if config.cir < 0 or config.pir < 0 or config.cburst < 0 or config.pburst < 0:
        raise RequestError(INVALID_ARGUMENT, "meter config: rates and bursts must be >= 0")
    if config.cir > config.pir:
        raise RequestError(INVALID_ARGUMENT, "meter config: cir must not exceed pir")
    return [(config.cir / 1e6, config.cburst), (config.pir / 1e6, config.pburst)]
