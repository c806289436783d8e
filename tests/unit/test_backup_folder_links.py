"""The scheduled backups' target folder may be writable by others (a share, a backup medium): a
link planted there must never make the KMA write into, or shrink, the file it points to
(issue 26, item 6)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kma.pacing import SHRINK_STEP, copy_gradually, remove_gradually

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symbolic links as a planted file are POSIX here")


def victim(tmp_path: Path) -> Path:
    """Someone else's large file (sparse: nothing is really written)."""
    path = tmp_path / "elsewhere" / "precious.db"
    path.parent.mkdir()
    with path.open("wb") as f:
        f.truncate(3 * SHRINK_STEP + 5)
    return path


def test_expiring_a_backup_that_is_now_a_link_leaves_its_target_whole(tmp_path: Path) -> None:
    target = victim(tmp_path)
    planted = tmp_path / "scheduled" / "0123456789ABCDEF.kmabackup"
    planted.parent.mkdir()
    planted.symlink_to(target)
    remove_gradually(planted)
    assert not planted.is_symlink() and not planted.exists()  # the name is gone ...
    assert target.stat().st_size == 3 * SHRINK_STEP + 5  # ... what it pointed to is untouched


def test_expiring_a_backup_with_a_second_name_leaves_that_name_whole(tmp_path: Path) -> None:
    target = victim(tmp_path)
    planted = tmp_path / "0123456789ABCDEF.kmabackup"
    os.link(target, planted)
    remove_gradually(planted)
    assert not planted.exists() and target.stat().st_size == 3 * SHRINK_STEP + 5


def test_a_copy_never_writes_through_a_planted_part_file(tmp_path: Path) -> None:
    target = victim(tmp_path)
    source = tmp_path / "backup.kmabackup"
    source.write_bytes(b"backup bytes")
    planted = tmp_path / "0123456789ABCDEF.kmabackup.part"
    planted.symlink_to(target)
    with pytest.raises(FileExistsError):
        copy_gradually(source, planted)
    assert target.stat().st_size == 3 * SHRINK_STEP + 5


def test_a_copy_is_private_to_the_kma(tmp_path: Path) -> None:
    source = tmp_path / "backup.kmabackup"
    source.write_bytes(b"backup bytes")
    copy = tmp_path / "copy.kmabackup.part"
    copy_gradually(source, copy)
    assert copy.read_bytes() == b"backup bytes" and copy.stat().st_mode & 0o777 == 0o600
