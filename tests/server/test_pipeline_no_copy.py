"""A pushed config whose bytes a verified pipeline already has is handed to the device as that
verified bytes object (compared in place, not copied: ina.p4's JSON is 1.7 MB per switch); any
other config is still its own copy of exactly the bytes sent."""

from __future__ import annotations

from p4switch.server import pipeline_requests
from p4switch.server.pipeline_requests import parse_request, verified_pipeline

from .helpers import pipeline_request


def test_known_config_bytes_are_shared_and_others_copied():
    pipeline_requests.clear()
    first = pipeline_request(election_id=1).SerializeToString()
    parsed = parse_request(first)
    pipeline = verified_pipeline(parsed.config)
    again = parse_request(pipeline_request(election_id=2, device_id=4).SerializeToString())
    assert again.config is parsed.config                 # the verified object itself
    assert verified_pipeline(again.config) is pipeline
    changed = pipeline_request(election_id=2, cookie=77).SerializeToString()
    other = parse_request(changed)
    assert other.config is not parsed.config and other.config != parsed.config
    assert other.config in changed                        # exactly the bytes sent
    same_size = bytearray(parsed.config)
    same_size[-1] ^= 1                                    # same length, one bit differs
    header = first[:len(first) - len(parsed.config)]
    flipped = parse_request(header + bytes(same_size))
    assert flipped.config == bytes(same_size) and flipped.config is not parsed.config
