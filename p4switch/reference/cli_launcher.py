"""simple_switch_CLI, started before its switch: imports first, then waits for the thrift port.

Importing the CLI's modules takes most of its start-up time; the driver starts this script at
the same time as simple_switch, and writes `PORT JSON_PATH` on its standard input once the switch
listens. From there on it is simple_switch_CLI itself (its `main`, reading the JSON locally).
Run by the Python that runs simple_switch_CLI, with the toolchain's site-packages on PYTHONPATH.
"""

import sys

import sswitch_CLI  # noqa: F401  (BMv2's CLI, from the toolchain's site-packages)


def main() -> None:
    line = sys.stdin.readline().split(maxsplit=1)
    if len(line) != 2:
        sys.exit(0)                       # the switch never started: nothing to do
    port, json_path = line
    sys.argv = ["simple_switch_CLI", "--thrift-port", port, "--json", json_path.strip()]
    sswitch_CLI.main()


if __name__ == "__main__":
    main()
