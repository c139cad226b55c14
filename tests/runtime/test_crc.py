"""The runtime's CRCs (hashes.Crc): the prepared/table-driven/C-backed implementation must give
exactly what the straightforward one gave, for every parameter set, and the catalogue's check
values. The slow reference lives here only."""

from __future__ import annotations

import random

import pytest

from p4switch.runtime.state.hashes import Crc, bits_to_bytes, reflect, standard_algorithms

CHECK_INPUT = b"123456789"


class ReferenceCrc:
    """The previous implementation: MSB-first table, input bytes and result reflected bit by bit
    on every call."""

    def __init__(self, width, poly, init, xor_out, reflect_in, reflect_out):
        self.width, self.poly, self.init, self.xor_out = width, poly, init, xor_out
        self.reflect_in, self.reflect_out = reflect_in, reflect_out
        top, mask = 1 << (width - 1), (1 << width) - 1
        self.table = []
        for byte in range(256):
            crc = byte << (width - 8)
            for _ in range(8):
                crc = ((crc << 1) ^ poly) if crc & top else (crc << 1)
            self.table.append(crc & mask)

    @staticmethod
    def bit_reflect(value, width):
        out = 0
        for _ in range(width):
            out = (out << 1) | (value & 1)
            value >>= 1
        return out

    def __call__(self, data: bytes) -> int:
        mask, shift = (1 << self.width) - 1, self.width - 8
        crc = self.init
        for byte in data:
            if self.reflect_in:
                byte = self.bit_reflect(byte, 8)
            crc = ((crc << 8) & mask) ^ self.table[((crc >> shift) ^ byte) & 0xFF]
        if self.reflect_out:
            crc = self.bit_reflect(crc, self.width)
        return crc ^ self.xor_out


# (name, width, poly, init, xor_out, reflect_in, reflect_out, check of "123456789")
CATALOGUE = [
    ("CRC-8/SMBUS", 8, 0x07, 0x00, 0x00, False, False, 0xF4),
    ("CRC-16/ARC", 16, 0x8005, 0x0000, 0x0000, True, True, 0xBB3D),
    ("CRC-16/MODBUS", 16, 0x8005, 0xFFFF, 0x0000, True, True, 0x4B37),
    ("CRC-16/IBM-3740", 16, 0x1021, 0xFFFF, 0x0000, False, False, 0x29B1),
    ("CRC-16/XMODEM", 16, 0x1021, 0x0000, 0x0000, False, False, 0x31C3),
    ("CRC-16/KERMIT", 16, 0x1021, 0x0000, 0x0000, True, True, 0x2189),
    ("CRC-32/ISO-HDLC", 32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True, 0xCBF43926),
    ("CRC-32/BZIP2", 32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, False, False, 0xFC891918),
    ("CRC-32/MPEG-2", 32, 0x04C11DB7, 0xFFFFFFFF, 0x00000000, False, False, 0x0376E6E7),
    ("CRC-32/CKSUM", 32, 0x04C11DB7, 0x00000000, 0xFFFFFFFF, False, False, 0x765E7680),
    ("CRC-32/ISCSI", 32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, True, True, 0xE3069283),
    ("CRC-32/JAMCRC", 32, 0x04C11DB7, 0xFFFFFFFF, 0x00000000, True, True, 0x340BC6D9),
]


@pytest.mark.parametrize("name,width,poly,init,xor_out,ref_in,ref_out,check", CATALOGUE,
                         ids=[c[0] for c in CATALOGUE])
def test_catalogue_check_values(name, width, poly, init, xor_out, ref_in, ref_out, check):
    params = (width, poly, init, xor_out, ref_in, ref_out)
    assert Crc(*params)(CHECK_INPUT) == check
    assert ReferenceCrc(*params)(CHECK_INPUT) == check     # the reference itself is right
    reconfigured = Crc(width, 0x1, 0, 0, not ref_in, not ref_out)
    reconfigured.configure(poly, init, xor_out, ref_in, ref_out)
    assert reconfigured(CHECK_INPUT) == check


def test_the_named_bmv2_algorithms_keep_their_values():
    algorithms = standard_algorithms()
    assert algorithms["crc16"](CHECK_INPUT) == 0xBB3D
    assert algorithms["crc32"](CHECK_INPUT) == 0xCBF43926
    assert algorithms["crcCCITT"](CHECK_INPUT) == 0x29B1
    assert algorithms["crc8"](CHECK_INPUT) == 0xF4
    assert algorithms["crc16_custom"](CHECK_INPUT) == 0xBB3D
    assert algorithms["crc32_custom"](CHECK_INPUT) == 0xCBF43926
    assert algorithms["crc16"](b"") == 0 and algorithms["crc32"](b"") == 0


def _random_parameters(rnd: random.Random) -> tuple:
    width = rnd.choice([8, 16, 32])
    poly = rnd.getrandbits(width)
    if rnd.random() < 0.3:     # the polynomials that take the C paths, with any other parameter
        poly = {8: poly, 16: 0x1021, 32: 0x04C11DB7}[width]
    return (width, poly, rnd.getrandbits(width), rnd.getrandbits(width),
            rnd.random() < 0.5, rnd.random() < 0.5)


def test_same_values_as_the_reference_for_random_parameters_and_inputs():
    rnd = random.Random(2024)
    for _ in range(400):
        params = _random_parameters(rnd)
        fast, slow = Crc(*params), ReferenceCrc(*params)
        for _ in range(4):
            data = rnd.randbytes(rnd.randint(0, 24))
            assert fast(data) == slow(data), (params, data.hex())


def test_reconfiguring_in_place_matches_a_fresh_reference():
    rnd = random.Random(7)
    for width in (16, 32):
        crc = Crc(width, 0x8005 if width == 16 else 0x04C11DB7, 0, 0, True, True)
        for _ in range(60):
            params = _random_parameters(rnd)
            while params[0] != width:
                params = _random_parameters(rnd)
            crc.configure(*params[1:])
            data = rnd.randbytes(13)
            assert crc(data) == ReferenceCrc(*params)(data), params
            assert crc.copy()(data) == crc(data)


def test_packed_fields_of_any_bit_width():
    """What a calculation feeds the CRC: fields packed MSB first, zero-padded to whole bytes."""
    rnd = random.Random(11)
    algorithms = standard_algorithms()
    references = {"crc16": ReferenceCrc(16, 0x8005, 0, 0, True, True),
                  "crc32": ReferenceCrc(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True),
                  "crcCCITT": ReferenceCrc(16, 0x1021, 0xFFFF, 0, False, False)}
    for _ in range(200):
        nbits = rnd.randint(1, 140)
        data = bits_to_bytes(rnd.getrandbits(nbits), nbits)
        for name, reference in references.items():
            assert algorithms[name](data) == reference(data)


def test_reflect_uses_exactly_the_low_width_bits():
    rnd = random.Random(3)
    for _ in range(300):
        width = rnd.randint(1, 70)
        value = rnd.getrandbits(width)
        assert reflect(value, width) == ReferenceCrc.bit_reflect(value, width)
    assert reflect(0b0001, 4) == 0b1000 and reflect(1, 32) == 0x80000000


def test_common_crcs_reflect_nothing_per_call(monkeypatch):
    """The speed-up's point: with reflect_in == reflect_out the register stays reflected, so a
    call does no bit reversal (the old code reversed the result bit by bit on every call)."""
    from p4switch.runtime.state import hashes
    algorithms = standard_algorithms()
    mixed = Crc(16, 0x8005, 0, 0, True, False)

    def refuse(value, width):
        raise AssertionError("reflected at call time")
    monkeypatch.setattr(hashes, "reflect", refuse)
    for name in ("crc16", "crc32", "crcCCITT", "crc8", "crc16_custom", "crc32_custom"):
        algorithms[name](b"\x0a\x00\x00\x01\x0a\x02\x00\x05\x11\x03\xe8\x00\x50")
    with pytest.raises(AssertionError):
        mixed(b"\x01")          # a mixed reflection does need it, once per call


def test_results_kept_by_input_are_dropped_when_reconfigured_or_full(monkeypatch):
    """A CRC keeps its results by input (the ECMP hash sees the same 5-tuples again): the same
    input hashed again, after reconfiguring, past the limit, or given as a bytearray, is what
    the reference gives for the parameters then in force."""
    monkeypatch.setattr("p4switch.runtime.state.hashes.CACHED_INPUTS", 8)
    rnd = random.Random(5)
    inputs = [rnd.randbytes(13) for _ in range(20)]
    crc = Crc(16, 0x8005, 0x0000, 0x0000, True, True)
    arc = ReferenceCrc(16, 0x8005, 0x0000, 0x0000, True, True)
    for _ in range(2):                               # the second round: kept or recomputed
        for data in inputs:
            assert crc(data) == arc(data)
    assert 0 < len(crc._results) <= 8
    kept = [data for data in inputs if data in crc._results]
    crc.configure(0x8005, 0xFFFF, 0x0000, True, True)          # CRC-16/MODBUS now
    modbus = ReferenceCrc(16, 0x8005, 0xFFFF, 0x0000, True, True)
    for data in kept:
        assert crc(data) == modbus(data)
        assert crc(bytearray(data)) == modbus(data)
    assert crc(CHECK_INPUT) == 0x4B37
