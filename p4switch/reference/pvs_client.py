"""Adds or removes one parser value set value over thrift (run by the toolchain's Python).

simple_switch_CLI's `pvs_add` sizes the value with a float division under Python 3, and
simple_switch then aborts on the wrong-sized value; this script sends the right bytes through
BMv2's own thrift client modules. Usage (with the toolchain's site-packages on PYTHONPATH):

    python3 pvs_client.py THRIFT_PORT add|remove NAME HEX_VALUE BYTES
"""

import sys


def main() -> int:
    from bm_runtime.standard import Standard
    from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
    from thrift.transport import TSocket, TTransport

    port, verb, name, value, width = sys.argv[1:6]
    transport = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", int(port)))
    protocol = TMultiplexedProtocol.TMultiplexedProtocol(
        TBinaryProtocol.TBinaryProtocol(transport), "standard")
    client = Standard.Client(protocol)
    transport.open()
    data = int(value, 16).to_bytes(int(width), "big")
    try:
        if verb == "add":
            client.bm_parse_vset_add(0, name, data)
        else:
            client.bm_parse_vset_remove(0, name, data)
    except Exception as exc:        # thrift's InvalidParseVSetOperation and friends
        print(f"Error: {type(exc).__name__}: {exc}")
        return 1
    finally:
        transport.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
