"""The manager's writes are declarations: each names a client method that exists and the kinds
of thing it changes, in the vocabulary the pages use to say what they show."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import app.writes
from app.writes import KINDS, Write
from kms_client import KmsClient


def _declared() -> list[tuple[str, Write]]:
    found = []
    for info in pkgutil.iter_modules(app.writes.__path__):
        module = importlib.import_module(f"app.writes.{info.name}")
        found += [(f"{info.name}.{name}", w) for name, w in vars(module).items() if isinstance(w, Write)]
    return found


def test_every_write_names_a_client_method_and_what_it_changes() -> None:
    declared = _declared()
    assert declared
    for name, write in declared:
        if write.client_method is None:  # a write of several steps: a function of the worker
            assert not hasattr(KmsClient, write.call.__name__), name
        assert write.changes <= KINDS, name


def test_a_write_says_what_it_did_with_its_arguments() -> None:
    from app.writes.keys import destroy_key

    change = destroy_key("k-1", "tape burnt")
    assert change.changes == {"keys", "data_units"}
    assert change.message == "Key k-1 destroyed."


def test_a_write_changing_an_unknown_kind_is_refused_when_declared() -> None:
    with pytest.raises(ValueError, match="tapes"):
        Write(KmsClient.create_site, {"tapes"})
