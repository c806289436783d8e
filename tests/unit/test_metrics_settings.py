"""kma.toml's `[metrics]`: a token file an operator can get wrong is refused with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from kma.errors import ValidationFailed
from kma.services.metrics import MetricsSettings


def test_no_metrics_table_means_no_token_and_nobody_gets_in_by_token(tmp_path: Path) -> None:
    assert not MetricsSettings.from_table(tmp_path, {}).admits("")


def test_a_good_token_file_admits_exactly_its_token(tmp_path: Path) -> None:
    (tmp_path / "metrics.token").write_text("a" * 64 + "\n")
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


def test_a_new_token_takes_effect_without_a_restart(tmp_path: Path) -> None:
    token_file = tmp_path / "metrics.token"
    token_file.write_text("a" * 64)
    settings = MetricsSettings.from_table(tmp_path, {"token_file": "metrics.token"})
    (tmp_path / "new.token").write_text("b" * 64 + "\n")
    (tmp_path / "new.token").replace(token_file)  # how an operator rotates it: rename over the old one
    assert settings.admits("b" * 64) and not settings.admits("a" * 64)
    token_file.write_text("short")  # a broken file admits nobody by token, rather than the old token
    assert not settings.admits("b" * 64) and not settings.admits("short")
