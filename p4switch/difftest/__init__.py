"""Differential testing: random v1model programs run through p4c/BMv2 and inaemu, compared.

`generator.generate_case(seed)` makes a `Case` (P4 source + STF text) that is valid by
construction, or, for a small fraction of seeds, deliberately invalid (`mutations.py`).
`runner.run_case` compiles it with real p4c and with inaemu, runs each JSON on inaemu's runtime
(and on real simple_switch when `p4switch.reference` is available) and `outcome.py` compares the
results and names the kind of any disagreement. `minimize.py` shrinks a disagreeing case.
"""

from .case import Case
from .generator import generate_case

__all__ = ["Case", "generate_case"]
