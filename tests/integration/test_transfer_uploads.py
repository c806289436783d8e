"""Issue 40: an import's transfer file goes up as the streamed body of a request of its own (`POST
/transfer-uploads`), not inside the import's JSON. Against a real KMA over TLS: an upload past its
limit is refused with a clear error and nothing of it is kept (announced by Content-Length, or
streamed without one); an upload is its sender's only; an expired one is refused; an import from
an upload brings the file's tapes in (its preview and its job as before) and removes the upload; a
request that still carries the file in its JSON is refused, naming the new way."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kma.crypto.transfer import Identity
from kms_client import Conflict, NotFound, PayloadTooLarge
from kms_client.wire import TransferImport
from tests.integration.helpers import error_of, raw_http
from tests.support.kma_process import RunningKma, read_only_db
from tests.support.transfer import file_from, one_tape, register, text_of, upload

LIMIT = 1 << 20  # the KMA under test takes uploads of at most 1 MiB (KMA_TEST_TRANSFER_UPLOAD_MAX)


class Side:
    def __init__(self, kma: RunningKma) -> None:
        self.kma, self.partner = kma, Identity.generate()
        self.so = kma.client("so")
        self.here = self.so.get_transfer_identity().identity

    def file(self, volsers: list[str]) -> str:
        return file_from(self.partner, self.here, [one_tape(v, os.urandom(32)) for v in volsers])


@pytest.fixture(scope="module")
def side(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("KMA_TEST_TRANSFER_UPLOAD_MAX", str(LIMIT))
        kma = RunningKma.demo_in(tmp_path_factory.mktemp("uploads"))
    try:
        s = Side(kma)
        register(s.so, kma, "dallas", text_of(s.partner))
        co = kma.client("co")
        co.create_key_policy("arrivals", encryption_period=86400, cryptoperiod=2 * 86400, allow_import=True)
        co.create_key_group("arrivals", "arrivals")
        yield s
    finally:
        kma.stop()


def uploads(kma: RunningKma) -> tuple[int, int]:
    """Uploads and their parts in the store."""
    with read_only_db(kma) as db:
        return (
            db.execute("SELECT count(*) FROM transfer_uploads").fetchone()[0],
            db.execute("SELECT count(*) FROM transfer_upload_parts").fetchone()[0],
        )


def test_an_upload_past_its_limit_is_refused_and_nothing_of_it_is_kept(side: Side, tmp_path: Path) -> None:
    before = uploads(side.kma)
    big = tmp_path / "big.kmstransfer"
    big.write_bytes(os.urandom(LIMIT + 1))
    # as the client sends it: Content-Length announced, refused before a byte is read
    with pytest.raises(
        PayloadTooLarge, match="at most 1 MiB and this upload is larger: nothing of it was kept"
    ):
        side.so.upload_transfer_file(big)
    assert uploads(side.kma) == before

    # streamed without a length (chunked): refused once it passes the limit, what came removed
    def pieces() -> Iterator[bytes]:
        for _ in range(LIMIT // 65536 + 1):  # the last piece passes the limit
            yield os.urandom(65536)

    with raw_http(side.kma, side.so.token) as http:
        answer = http.post(
            "/transfer-uploads", content=pieces(), headers={"Content-Type": "application/octet-stream"}
        )
    assert answer.status_code == 413, answer.text
    assert "nothing of it was kept" in error_of(answer)["message"]
    assert uploads(side.kma) == before


def test_an_upload_is_usable_by_its_sender_only(side: Side) -> None:
    sent = upload(side.so, side.file(["U00001"]))
    with pytest.raises(NotFound, match=f"no transfer upload '{sent}' of yours: upload the file first"):
        side.kma.client("admin").preview_transfer_import(sent)  # a Security Officer too, but not its sender
    with pytest.raises(NotFound, match="of yours"):
        side.kma.client("admin").start_transfer_import(sent, "arrivals")
    assert side.so.preview_transfer_import(sent).new == 1  # still there for its sender


def test_an_import_from_an_upload_brings_the_file_in_and_removes_the_upload(
    side: Side, tmp_path: Path
) -> None:
    volsers = [f"U1{n:04d}" for n in range(1200)]  # three batches of the import
    text = side.file(volsers)
    path = tmp_path / "from-dallas.kmstransfer"
    path.write_text(text, encoding="utf-8")
    sent = side.so.upload_transfer_file(path)
    assert sent.size == len(text.encode())
    preview = side.so.preview_transfer_import(sent.id)
    assert (preview.data_units, preview.new, preview.already_here, preview.imported) == (1200, 1200, 0, 0)
    job = side.so.follow_transfer_job(side.so.start_transfer_import(sent.id, "arrivals"), poll_s=0.1)
    assert job.imported is not None
    assert (job.imported.imported, job.imported.data_units, job.imported.partner_id) == (1200, 1200, "dallas")
    with read_only_db(side.kma) as db:
        assert db.execute("SELECT count(*) FROM transfer_uploads WHERE id = ?", (sent.id,)).fetchone()[0] == 0
        here = {r[0] for r in db.execute("SELECT data_unit_id FROM keys WHERE key_group_id = 'arrivals'")}
    assert set(volsers) <= here
    with pytest.raises(NotFound, match="is used once"):  # the import took it
        side.so.preview_transfer_import(sent.id)
    again = side.so.import_transfer_file(upload(side.so, text), "arrivals")  # the same file: nothing changes
    assert isinstance(again, TransferImport) and (again.imported, again.already_here) == (0, 1200)


def test_a_file_inside_the_import_json_is_refused_naming_the_upload(side: Side) -> None:
    text = side.file(["U00003"] + [f"U3{n:04d}" for n in range(300)])  # over 64 KiB
    assert len(text) > 64 * 1024
    with raw_http(side.kma, side.so.token) as http:
        small = http.post("/transfer-imports/jobs", json={"file": "x" * 100, "key_group_id": "arrivals"})
        large = http.post("/transfer-imports", json={"file": text, "key_group_id": "arrivals"})
    assert small.status_code == 422, small.text
    assert large.status_code == 413, large.text
    for answer in (small, large):
        assert "upload it first (POST /api/v1/transfer-uploads" in error_of(answer)["message"]
    with read_only_db(side.kma) as db:
        assert db.execute("SELECT count(*) FROM data_units WHERE id = 'U00003'").fetchone()[0] == 0


def test_an_expired_upload_is_refused_and_removed(side: Side) -> None:
    sent = upload(side.so, side.file(["U00002"]))
    side.kma.advance_clock(3601)
    try:
        with pytest.raises(Conflict, match=f"Transfer upload {sent} expired .*upload the file again"):
            side.kma.client("so").preview_transfer_import(sent)  # signed in at the KMA's new time
    finally:
        side.kma.advance_clock(-3601)
        side.so = side.kma.client("so")  # its session was idle for the hour the clock went on
    with read_only_db(side.kma) as db:
        assert db.execute("SELECT count(*) FROM transfer_uploads WHERE id = ?", (sent,)).fetchone()[0] == 0
