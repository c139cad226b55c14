"""Running blocking drivers side by side in threads, with hangs reported as failures."""

from __future__ import annotations

import threading


def run_in_threads(functions) -> list:
    """Run each function in a thread; returns each one's result or the exception it raised."""
    outcomes = [None] * len(functions)

    def call(i, function):
        try:
            outcomes[i] = function()
        except BaseException as error:     # reported to the test, not lost in the thread
            outcomes[i] = error

    threads = [threading.Thread(target=call, args=(i, f)) for i, f in enumerate(functions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
        assert not thread.is_alive(), "a ring rank hung"
    return outcomes
