"""The arbitration state machine on its own: no gRPC, clients are plain strings."""

import pytest

from p4switch.server.arbitration import Arbitration
from p4switch.server.errors import RequestError


def codes(notifications):
    return {n.client: (n.code, n.election_id) for n in notifications}


def test_first_client_is_primary_and_only_it_is_told():
    arb = Arbitration(device_id=1)
    assert codes(arb.update("a", device_id=1, election_id=5)) == {"a": ("OK", 5)}
    assert arb.primary == "a"


def test_lower_election_id_is_backup_and_only_it_is_told():
    arb = Arbitration(device_id=1)
    arb.update("a", device_id=1, election_id=5)
    assert codes(arb.update("b", device_id=1, election_id=3)) == {"b": ("ALREADY_EXISTS", 5)}
    assert arb.primary == "a"


def test_higher_election_id_takes_over_and_everyone_is_told():
    arb = Arbitration(device_id=1)
    arb.update("a", device_id=1, election_id=5)
    notes = codes(arb.update("b", device_id=1, election_id=9))
    assert notes == {"a": ("ALREADY_EXISTS", 9), "b": ("OK", 9)}


def test_primary_disconnect_re_elects_next_highest():
    arb = Arbitration(device_id=1)
    arb.update("a", device_id=1, election_id=5)
    arb.update("b", device_id=1, election_id=9)
    arb.update("c", device_id=1, election_id=7)
    notes = codes(arb.disconnect("b"))
    assert notes == {"a": ("ALREADY_EXISTS", 7), "c": ("OK", 7)}
    assert arb.disconnect("a") == []  # a backup leaving changes nothing


def test_clients_without_election_id_are_backups_and_hear_not_found_without_primary():
    arb = Arbitration(device_id=1)
    assert codes(arb.update("a", device_id=1, election_id=None)) == {"a": ("NOT_FOUND", None)}
    arb.update("b", device_id=1, election_id=2)
    notes = codes(arb.disconnect("b"))
    assert notes == {"a": ("NOT_FOUND", 2)}  # highest id ever seen


def test_wrong_device_first_is_not_found_then_failed_precondition():
    arb = Arbitration(device_id=1)
    with pytest.raises(RequestError) as err:
        arb.update("a", device_id=2, election_id=1)
    assert err.value.code == "NOT_FOUND"
    assert not arb.is_connected("a")
    arb.update("a", device_id=1, election_id=1)
    with pytest.raises(RequestError) as err:
        arb.update("a", device_id=2, election_id=1)
    assert err.value.code == "FAILED_PRECONDITION"


def test_duplicate_election_id_is_invalid_argument_and_changes_nothing():
    arb = Arbitration(device_id=1)
    arb.update("a", device_id=1, election_id=4)
    with pytest.raises(RequestError) as err:
        arb.update("b", device_id=1, election_id=4)
    assert err.value.code == "INVALID_ARGUMENT"
    assert not arb.is_connected("b")
    assert arb.update("a", device_id=1, election_id=4)[0].code == "OK"  # re-sending own id is fine


def test_non_default_role_is_unimplemented():
    arb = Arbitration(device_id=1)
    with pytest.raises(RequestError) as err:
        arb.update("a", device_id=1, election_id=1, role_name="monitor")
    assert err.value.code == "UNIMPLEMENTED"


def test_only_the_primary_election_id_may_write():
    arb = Arbitration(device_id=1)
    arb.check_primary(None, "Write")  # nobody connected: allowed, as BMv2 does
    arb.update("a", device_id=1, election_id=5)
    arb.update("b", device_id=1, election_id=3)
    arb.check_primary(5, "Write")
    for wrong in (3, 4, None):
        with pytest.raises(RequestError) as err:
            arb.check_primary(wrong, "Write")
        assert err.value.code == "PERMISSION_DENIED"


def test_primary_lowering_its_id_below_a_backup_hands_over():
    arb = Arbitration(device_id=1)
    arb.update("a", device_id=1, election_id=5)
    arb.update("b", device_id=1, election_id=3)
    notes = codes(arb.update("a", device_id=1, election_id=2))
    assert notes == {"a": ("ALREADY_EXISTS", 3), "b": ("OK", 3)}
