"""A ring rank in its own process that joins the ring and then stalls (for failure tests).

`python -m tests.hosts.ring_peer JOB RANK N RIGHT_PORT`: prints its listening port, joins the ring
(HELLOs exchanged), prints "ready", then sleeps without sending data until it is killed.
"""

from __future__ import annotations

import sys
import time

from hosts.ring_session import RingSession
from hosts.tcp_driver import TcpRing, listen


def main() -> None:
    job, rank, n, right_port = (int(arg) for arg in sys.argv[1:5])
    listener = listen("127.0.0.1", 0)
    print(listener.getsockname()[1], flush=True)
    ring = TcpRing(RingSession(rank=rank, n=n), job=job, listener=listener,
                   right=("127.0.0.1", right_port), connect_timeout=20, idle_timeout=60)
    print("ready", flush=True)
    time.sleep(120)
    ring.close()


if __name__ == "__main__":
    main()
