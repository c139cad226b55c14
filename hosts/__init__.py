"""Host agents: quantization, the sans-I/O aggregation protocol, baselines, socket drivers.

The public API is `allreduce(array, algo="ina"|"ring", config=AllreduceConfig(...))` and, for
more than one call per job, `Allreducer`. The protocol cores (`InaSession`, `RingSession`) do no
I/O; the drivers (`UdpInaDriver`, `TcpRing`) and the simulator move their bytes.
"""

from .api import AllreduceConfig, Allreducer, AllreduceStats, ConfigError, allreduce
from .errors import (AllreduceTimeout, HostError, PeerFailed, PeerUnreachable, RingProtocolError,
                     UsageError)
from .ina_session import InaSession, Step
from .ring_session import RingSession

__all__ = ["allreduce", "Allreducer", "AllreduceConfig", "AllreduceStats", "ConfigError",
           "HostError", "UsageError", "PeerUnreachable", "PeerFailed", "RingProtocolError",
           "AllreduceTimeout", "InaSession", "RingSession", "Step"]
