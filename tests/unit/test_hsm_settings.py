"""The [hsm] table and the PIN file: every refusal says what to fix (docs/hsm.md)."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend

from kma.crypto.hsm_settings import HsmSettings, HsmUnavailable, read_pin_file, write_hsm_table
from kma.errors import ValidationFailed
from kma.setup.answers import read_hsm
from kma.vault import generation_label

GOOD = {"module": "/usr/lib/softhsm/libsofthsm2.so", "token_label": "t", "pin_file": "/etc/kma/hsm.pin"}


def test_the_table_names_the_module_one_token_and_one_pin_source_and_never_the_pin() -> None:
    settings = read_hsm(GOOD, "kma-1")
    assert settings == HsmSettings(
        module=GOOD["module"], key_label="kma-master-kma-1", token_label="t", pin_file="/etc/kma/hsm.pin"
    )
    assert "pin_file" in settings.to_toml() and "token_serial" not in settings.to_toml()
    assert not settings.holds_cluster_key and "holds" not in settings.to_toml()
    joined = read_hsm({**GOOD, "holds": "cluster-master-key"}, "kma-1")  # what a join writes
    assert joined is not None and joined.holds_cluster_key
    assert read_hsm(tomllib.loads(joined.to_toml())["hsm"], "kma-1") == joined
    for table, why in [
        ({**GOOD, "pin": "1234"}, "must not hold the PIN"),
        ({**GOOD, "token_serial": "01"}, "exactly one of 'token_label' and 'token_serial'"),
        ({**GOOD, "pin_keyring": "kma"}, "exactly one of 'pin_file' and 'pin_keyring'"),
        ({k: v for k, v in GOOD.items() if k != "module"}, "needs 'module'"),
        ({**GOOD, "slot": 0}, "unknown settings: slot"),
        ({**GOOD, "token_label": 7}, "must be a string"),
        ({**GOOD, "holds": "everything"}, "'holds' in \\[hsm\\] can only be 'cluster-master-key'"),
    ]:
        with pytest.raises(ValidationFailed, match=why):
            read_hsm(table, "kma-1")


def test_a_pin_file_others_can_read_is_refused_with_the_fix(tmp_path: Path) -> None:
    pin = tmp_path / "hsm.pin"
    pin.write_text("1234\n")
    pin.chmod(0o640)
    with pytest.raises(HsmUnavailable, match="chmod 600"):
        read_pin_file(pin)
    pin.chmod(0o600)
    assert read_pin_file(pin) == "1234"
    pin.write_text("\n")
    with pytest.raises(HsmUnavailable, match="empty"):
        read_pin_file(pin)
    with pytest.raises(HsmUnavailable, match="Cannot read"):
        read_pin_file(tmp_path / "missing.pin")


class _OneSecret(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self, stored: dict[tuple[str, str], str]) -> None:
        super().__init__()
        self.stored = stored

    def get_password(self, service: str, username: str) -> str | None:
        return self.stored.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.stored[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.stored.pop((service, username), None)


def test_the_pin_can_come_from_the_os_keyring() -> None:
    before = keyring.get_keyring()
    keyring.set_keyring(_OneSecret({("kma-hsm", "dallas"): "4321"}))
    try:
        settings = read_hsm({**GOOD, "pin_file": "", "pin_keyring": "dallas"}, "kma-1")
        assert settings.read_pin() == "4321"
        with pytest.raises(HsmUnavailable, match="no HSM PIN under service 'kma-hsm', name 'boston'"):
            read_hsm({**GOOD, "pin_file": "", "pin_keyring": "boston"}, "kma-1").read_pin()
    finally:
        keyring.set_keyring(before)


def test_a_rotation_rewrites_the_label_in_kma_toml_and_keeps_the_previous_one_until_it_ends(
    tmp_path: Path,
) -> None:
    joined = read_hsm({**GOOD, "holds": "cluster-master-key"}, "kma-bos-1")
    assert joined is not None
    config = tmp_path / "kma.toml"
    config.write_text('kma_id = "kma-bos-1"\n' + joined.to_toml() + '\n[cluster]\nraft = "x"\n')
    assert generation_label(joined, 2) == "kma-master-kma-bos-1-g2"
    taken_up = dataclasses.replace(
        joined, key_label="kma-master-kma-bos-1-g2", previous_key_label=joined.key_label
    )
    assert generation_label(taken_up, 3) == "kma-master-kma-bos-1-g3"  # not ...-g2-g3

    write_hsm_table(config, taken_up)
    written = tomllib.loads(config.read_text())
    assert read_hsm(written["hsm"], "kma-bos-1") == taken_up
    assert written["kma_id"] == "kma-bos-1" and written["cluster"] == {"raft": "x"}  # the rest kept
    write_hsm_table(config, dataclasses.replace(taken_up, previous_key_label=""))
    assert "previous_key_label" not in config.read_text()

    # Only a token holding the cluster's master key has generations of its own
    with pytest.raises(ValidationFailed, match="'previous_key_label' in \\[hsm\\] goes only with holds"):
        read_hsm({**GOOD, "previous_key_label": "kma-master-kma-bos-1"}, "kma-bos-1")
