import pytest

from p4switch.server import bytestrings
from p4switch.server.errors import RequestError


def test_canonical_and_padded_forms_decode_alike():
    assert bytestrings.decode(b"\x01\x00", 9, "x") == 256
    assert bytestrings.decode(b"\x00\x00\x01\x00", 9, "x") == 256


def test_value_wider_than_bitwidth_is_invalid_argument_as_in_bmv2():
    with pytest.raises(RequestError) as err:
        bytestrings.decode(b"\x02\x00", 9, "port")
    assert err.value.code == "INVALID_ARGUMENT"
    assert "port" in err.value.message


def test_empty_is_invalid_argument():
    with pytest.raises(RequestError) as err:
        bytestrings.decode(b"", 8, "x")
    assert err.value.code == "INVALID_ARGUMENT"


def test_encode_is_shortest_with_at_least_one_byte():
    assert bytestrings.encode(0) == b"\x00"
    assert bytestrings.encode(255) == b"\xff"
    assert bytestrings.encode(256) == b"\x01\x00"
