"""``storage.common.many_objects``: large results are built with the cyclic garbage
collector off, and its state is given back as it was, also when the build fails."""

from __future__ import annotations

import gc

import pytest

from memory_core.storage.common import many_objects


def test_the_collector_is_off_inside_and_back_after() -> None:
    assert gc.isenabled()
    with many_objects():
        assert not gc.isenabled()
        with many_objects():  # nested (another read inside one): still off after
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), many_objects():
        raise RuntimeError("a read failed")
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    try:
        with many_objects():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
