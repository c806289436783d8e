"""kma.toml's `[metrics]`: a token file an operator can get wrong is refused with the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kma.errors import ValidationFailed
from kma.services.overview.metrics import MetricsSettings


def test_no_metrics_table_means_no_token_and_nobody_gets_in_by_token(tmp_path: Path) -> None:
    assert not MetricsSettings.from_table(tmp_path, {}).admits("")


def test_a_good_token_file_admits_exactly_its_token(tmp_path: Path) -> None:
    (tmp_path / "metrics.token").write_text("a" * 64 + "\n")
    (tmp_path / "metrics.token").chmod(0o600)
    settings = MetricsSettings.from_table(tmp_path, {"token_file": "metrics.token"})
    assert settings.admits("a" * 64) and not settings.admits("a" * 63)


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ({"token_file": "missing.token"}, "cannot read the token file"),
        ({"token_file": "short.token"}, "openssl rand -hex 32"),
        ({"token": "inline"}, "unknown setting 'token'"),
    ],
)
def test_a_bad_setting_is_refused_with_the_fix(tmp_path: Path, table: dict[str, str], said: str) -> None:
    (tmp_path / "short.token").write_text("too short")
    with pytest.raises(ValidationFailed, match=said):
        MetricsSettings.from_table(tmp_path, table)


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_token_file_other_accounts_can_read_is_refused(tmp_path: Path, mode: int) -> None:
    """Outside the data directory nothing else checks it (issue 26, item 6)."""
    outside = tmp_path / "etc" / "kma-metrics.token"
    outside.parent.mkdir()
    outside.write_text("a" * 64 + "\n")
    outside.chmod(mode)
    with pytest.raises(ValidationFailed, match=f"other accounts can read.*chmod 600 {outside}"):
        MetricsSettings.from_table(tmp_path / "kma", {"token_file": str(outside)})


def test_a_new_token_takes_effect_without_a_restart(tmp_path: Path) -> None:
    token_file = tmp_path / "metrics.token"
    token_file.write_text("a" * 64)
    token_file.chmod(0o600)
    settings = MetricsSettings.from_table(tmp_path, {"token_file": "metrics.token"})
    (tmp_path / "new.token").write_text("b" * 64 + "\n")
    (tmp_path / "new.token").chmod(0o600)
    (tmp_path / "new.token").replace(token_file)  # how an operator rotates it: rename over the old one
    assert settings.admits("b" * 64) and not settings.admits("a" * 64)
    token_file.write_text("short")  # a broken file admits nobody by token, rather than the old token
    assert not settings.admits("b" * 64) and not settings.admits("short")
