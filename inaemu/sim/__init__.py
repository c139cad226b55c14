"""The in-process discrete-event network behind `inaemu run --net sim` (docs/sim.md).

The same P4 program in the same switch runtime, configured by the same controller over
P4Runtime, the same host protocol cores (hosts/), over simulated links and a virtual clock:
no root, deterministic for a seed.
"""

from inaemu.sim.driver import (ALGOS, InaOptions, SimError, SimJob, SimResult, SimTimeLimit,
                               SimUnfinished, WorkerRecord, gradient, prepare_setup,
                               simulate)
from inaemu.sim.native import fast_normals, fast_quantize
from inaemu.sim.reliable import TransportConfig
from inaemu.sim.switch_node import SwitchCost

fast_normals.install()      # the seeded gradients drawn in C, NumPy's very values (checked)
fast_quantize.install()     # INA blocks quantized in one C pass, the definition's lanes (checked)

__all__ = ["ALGOS", "InaOptions", "SimError", "SimJob", "SimResult", "SimTimeLimit",
           "SimUnfinished", "SwitchCost", "TransportConfig", "WorkerRecord", "gradient",
           "prepare_setup", "simulate"]
