"""BMv2's handle numbers (p4switch/thrift/handles.py), as simple_switch hands them out."""

from __future__ import annotations

from p4switch.thrift.handles import HandleBook


def test_entry_handles_take_the_lowest_free_index_and_a_new_version():
    book = HandleBook(versioned=True)
    assert [book.add(r) for r in (100, 101, 102)] == [0, 1, 2]
    book.remove(1)
    assert book.status(1) == "invalid"               # nothing at index 1
    assert book.add(103) == (1 << 24) | 1            # simple_switch: 16777217
    assert book.status(1) == "expired"               # index 1 holds a later entry
    assert book.runtime(1) is None
    assert book.runtime((1 << 24) | 1) == 103
    assert book.add(104) == 3
    assert book.live() == [(0, 100), ((1 << 24) | 1, 103), (2, 102), (3, 104)]
    book.remove((1 << 24) | 1)
    assert book.add(105) == (2 << 24) | 1


def test_members_and_nodes_reuse_indices_without_versions():
    book = HandleBook(versioned=False)
    assert [book.add(r) for r in (7, 8)] == [0, 1]
    book.remove(0)
    assert book.add(9) == 0
    assert book.handle_of(9) == 0 and book.handle_of(7) is None


def test_a_reset_starts_over_as_a_table_clear_does():
    book = HandleBook(versioned=True)
    book.add(1)
    book.remove(0)
    book.reset()
    assert book.add(2) == 0                          # not version 1: simple_switch gives 0


def test_reconcile_follows_what_the_runtime_holds():
    book = HandleBook(versioned=True)
    book.add(10)
    book.add(11)
    book.reconcile([11, 12, 13])                     # 10 gone, 12 and 13 added elsewhere
    assert book.live() == [((1 << 24) | 0, 12), (1, 11), (2, 13)]
    assert book.status(-1) == "invalid" and book.status("x") == "invalid"
