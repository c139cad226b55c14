"""P4RuntimeServer's own life: binding, a taken port, dropped packet-ins without a primary."""

import pytest

from p4switch.server import P4RuntimeServer, ServerStartError

from .fake_switch import FakeSwitch


def test_port_zero_binds_a_free_port_and_a_taken_port_is_a_start_error():
    first = P4RuntimeServer(FakeSwitch(), device_id=0, cpu_port=None, address="127.0.0.1:0",
                            packet_out=lambda data: None)
    first.start()
    try:
        assert first.bound_port > 0
        second = P4RuntimeServer(FakeSwitch(), device_id=0, cpu_port=None,
                                 address=f"127.0.0.1:{first.bound_port}",
                                 packet_out=lambda data: None)
        with pytest.raises(ServerStartError) as err:
            second.start()
        assert str(first.bound_port) in str(err.value)
        second.stop()
    finally:
        first.stop()


def test_packet_in_without_a_primary_is_dropped_and_counted():
    server = P4RuntimeServer(FakeSwitch(), device_id=0, cpu_port=64, address="127.0.0.1:0",
                             packet_out=lambda data: None)
    server.packet_in(b"frame")
    server.packet_in(b"frame")
    assert server.packets_in_dropped == 2
