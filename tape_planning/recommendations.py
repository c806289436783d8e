"""What the white paper recommends, as tables the plan looks up (no if/elif chains).

Each :class:`Recommendation` carries the paper's line numbers (``data/README.md`` explains them),
so a user can check the source. Three tables:

- :data:`SIZE_RULES`: which buffer sizes the paper allows a drive, mixed with 256 KB-limited drives
  or not;
- :data:`COUNT_RULES`: how many data buffers the paper gives for a drive, buffer size and
  compressible or uncompressible data (where it gives none, the plan takes the measured best);
- :data:`ADVICE`: everything else, each with the inputs it applies to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Recommendation:
    key: str
    drive: str  # "ALL" when it is not about one drive
    text: str
    lines: str  # of shared/seeds/000_baa16baf31a408d2.txt, as in data/README.md


@dataclass(frozen=True)
class Situation:
    """The inputs advice depends on."""

    drive: str
    ratio: float
    mixed_256k: bool
    streams: int
    file_size_bytes: int


def _r(key: str, drive: str, text: str, lines: str) -> Recommendation:
    return Recommendation(key, drive, text, lines)


# -- buffer sizes ---------------------------------------------------------------------------------
_T10000_512K = "at least 512 KB buffers; archiving can use up to 2 MB"
SIZE_RULES: dict[tuple[str, bool], tuple[tuple[int, ...], Recommendation]] = {
    ("T10000", True): (
        (256,),
        _r(
            "t10000-mixed-256k",
            "T10000",
            "Mixed with drives limited to 256 KB blocks (such as the 9x40): use 256 KB buffers.",
            "958-964",
        ),
    ),
    ("T10000", False): (
        (512, 2048),
        _r(
            "t10000-at-least-512k",
            "T10000",
            f"Not mixed with 256 KB-limited drives: {_T10000_512K}.",
            "958-964",
        ),
    ),
    ("T9840D", True): (
        (256,),
        _r(
            "t9840d-256k-preferred",
            "T9840D",
            "256 KB is the preferred buffer size: it reaches optimal throughput with very few buffers and "
            "gains most at low buffer counts and on compressible data.",
            "1456-1470, 1661",
        ),
    ),
    ("LTO4", True): (
        (256,),
        _r(
            "lto4-mixed-256k",
            "LTO4",
            "Mixed with drives limited to 256 KB blocks (such as the 9x40): use 256 KB buffers.",
            "1707-1712",
        ),
    ),
    ("LTO4", False): (
        (2048, 8192),
        _r(
            "lto4-at-least-2mb",
            "LTO4",
            "Not mixed with 256 KB-limited drives: use buffers of at least 2 MB "
            "(the drive takes up to 8 MB).",
            "1700-1712",
        ),
    ),
    ("T10000B", True): (
        (256,),
        _r(
            "t10000b-mixed-256k",
            "T10000B",
            "Mixed with drives limited to 256 KB blocks: use 256 KB buffers "
            "(the same guidance as the T10000).",
            "2261-2267",
        ),
    ),
    ("T10000B", False): (
        (512, 2048),
        _r(
            "t10000b-at-least-512k",
            "T10000B",
            f"Not mixed with 256 KB-limited drives: {_T10000_512K} (the same guidance as the T10000).",
            "2261-2267",
        ),
    ),
}
SIZE_RULES[("T9840D", False)] = SIZE_RULES[("T9840D", True)]  # it is itself limited to 256 KB

# -- buffer counts: (drive, buffer KB, compressible) -> (data buffers, why) ----------------------
_T10000_256 = _r(
    "t10000-256k-32-buffers",
    "T10000",
    "With 256 KB buffers use 32 data buffers; NetBackup gains little beyond 32 and more only costs memory.",
    "1039-1053",
)
_T10000_2M = _r(
    "t10000-2mb-at-most-8",
    "T10000",
    "With 2 MB buffers, 8 data buffers reach optimal throughput for any compressibility: use no more than 8.",
    "1082-1084",
)
_T9840D_64 = _r(
    "t9840d-64k-16-buffers",
    "T9840D",
    "At 64 KB, 16 data buffers is the best setting, but 64 KB is too small: always raise it under NetBackup.",
    "1433-1441",
)
_LTO4_256_UNC = _r(
    "lto4-256k-16-uncompressible",
    "LTO4",
    "With 256 KB buffers, use at least 16 data buffers for uncompressible data.",
    "1763-1767",
)
_LTO4_256_CMP = _r(
    "lto4-256k-32-compressible",
    "LTO4",
    "With 256 KB buffers, 32 data buffers give a clear gain on compressible data.",
    "1763-1767",
)
_LTO4_LARGE_UNC = _r(
    "lto4-uncompressible-4-threads",
    "LTO4",
    "Uncompressible data: 4 data buffers (threads) are optimal at 2 MB and 8 MB.",
    "1788-1802",
)
_LTO4_8M_CMP = _r(
    "lto4-8mb-4-compressible",
    "LTO4",
    "Compressible data with 8 MB buffers: 4 data buffers are close to optimal.",
    "1788-1802",
)
_LTO4_2M_CMP = _r(
    "lto4-2mb-16-compressible",
    "LTO4",
    "Compressible data with 2 MB buffers needs at least 16 data buffers.",
    "1788-1802",
)
_T10000B_256 = _r(
    "t10000b-256k-32-buffers", "T10000B", "With 256 KB buffers use 32 data buffers.", "2338-2341"
)
_T10000B_2M_UNC = _r(
    "t10000b-2mb-4-uncompressible",
    "T10000B",
    "With 2 MB buffers, 4 data buffers suffice for uncompressible data.",
    "2366-2369",
)
_T10000B_2M_CMP = _r(
    "t10000b-2mb-16-compressible",
    "T10000B",
    "With 2 MB buffers, compressible data needs at least 16 data buffers.",
    "2366-2369",
)

COUNT_RULES: dict[tuple[str, int, bool], tuple[int, Recommendation]] = {
    **{("T10000", 256, c): (32, _T10000_256) for c in (False, True)},
    **{("T10000", 2048, c): (8, _T10000_2M) for c in (False, True)},
    **{("T9840D", 64, c): (16, _T9840D_64) for c in (False, True)},
    ("LTO4", 256, False): (16, _LTO4_256_UNC),
    ("LTO4", 256, True): (32, _LTO4_256_CMP),
    ("LTO4", 2048, False): (4, _LTO4_LARGE_UNC),
    ("LTO4", 8192, False): (4, _LTO4_LARGE_UNC),
    ("LTO4", 8192, True): (4, _LTO4_8M_CMP),
    ("LTO4", 2048, True): (16, _LTO4_2M_CMP),
    **{("T10000B", 256, c): (32, _T10000B_256) for c in (False, True)},
    ("T10000B", 2048, False): (4, _T10000B_2M_UNC),
    ("T10000B", 2048, True): (16, _T10000B_2M_CMP),
}

# -- everything else ------------------------------------------------------------------------------
LARGE_FILE_BYTES = 1_000_000_000  # the paper's "large files" rows: 1GB and up
MULTIPLEX_LINES = "T10000 1308-1313, LTO4 2200-2205, T10000B 2587-2592"
MODERATE = _r(
    "multiplexing-moderate",
    "ALL",
    "Moderate multiplexing (2-6 concurrent backups): halve the number of data buffers "
    "(e.g. 16 to 8); multiplexing costs the media server memory.",
    MULTIPLEX_LINES,
)
HEAVY = _r(
    "multiplexing-heavy",
    "ALL",
    "Heavy multiplexing (8 or more concurrent backups): cut the number of data buffers by three "
    "quarters (e.g. 16 to 4).",
    MULTIPLEX_LINES,
)


def _encryption(drive: str, lines: str, text: str = "") -> Recommendation:
    return _r(
        f"{drive.lower()}-encryption-negligible",
        drive,
        text
        or (
            "Encryption in the drive costs less than the variation between test runs; some encrypted runs "
            "were faster than unencrypted ones."
        ),
        lines,
    )


def _always(_s: Situation) -> bool:
    return True


def _large_files(s: Situation) -> bool:
    return not s.mixed_256k and s.file_size_bytes >= LARGE_FILE_BYTES


ADVICE: list[tuple[Recommendation, Callable[[Situation], bool]]] = [
    (
        _r(
            "netbackup-touch-files",
            "ALL",
            "NetBackup reads the touch files SIZE_DATA_BUFFERS (bytes) and NUMBER_DATA_BUFFERS from "
            "<install path>/netbackup/db/config on the media server; they take effect without a restart.",
            "975-978",
        ),
        _always,
    ),
    (
        _r(
            "encryption-after-compression",
            "ALL",
            "Encryption adds a fixed 100 bytes per data buffer (about 0.04% at 256 KB) and is done in the "
            "drive after compression, so compression keeps its full benefit; applications should use at "
            "least 256 KB transfers.",
            "995-1010, 1387-1402, 2288-2306",
        ),
        _always,
    ),
    (_encryption("T10000", "987-991"), lambda s: s.drive == "T10000"),
    (
        _encryption("T9840D", "1383-1386", "Encryption has no visible effect on T9840D throughput."),
        lambda s: s.drive == "T9840D",
    ),
    (_encryption("LTO4", "1727-1731"), lambda s: s.drive == "LTO4"),
    (_encryption("T10000B", "2274-2278"), lambda s: s.drive == "T10000B"),
    (
        _r(
            "t10000-apps-256k",
            "T10000",
            "Configure applications for transfers of at least 256 KB.",
            "999-1001",
        ),
        lambda s: s.drive == "T10000",
    ),
    (
        _r("t10000-2mb-large-files", "T10000", "2 MB buffers suit archiving and large files.", "1085-1086"),
        lambda s: s.drive == "T10000" and _large_files(s),
    ),
    (
        _r("t10000b-2mb-large-files", "T10000B", "2 MB buffers suit archiving and large files.", "2369-2371"),
        lambda s: s.drive == "T10000B" and _large_files(s),
    ),
    (
        _r(
            "t9840d-raise-64k",
            "T9840D",
            "The T9840D takes blocks up to 256 KB; NetBackup's 64 KB default streams worse: "
            "raise it to 256 KB.",
            "1366-1369",
        ),
        lambda s: s.drive == "T9840D",
    ),
    (_T9840D_64, lambda s: s.drive == "T9840D"),
    (
        _r(
            "t9840d-streaming",
            "T9840D",
            "Most servers can keep a T9840D streaming; several write drives can shorten large backups.",
            "1658-1661, 1668-1669",
        ),
        lambda s: s.drive == "T9840D",
    ),
    (
        _r(
            "lto4-512k-to-8mb-threads",
            "LTO4",
            "Optimal throughput comes at buffer sizes from 512 KB to 8 MB; the number of concurrent data "
            "buffers (threads) matters most.",
            "1732-1733",
        ),
        lambda s: s.drive == "LTO4",
    ),
    (MODERATE, lambda s: 2 <= s.streams <= 6),
    (HEAVY, lambda s: s.streams >= 7),
    (
        _r(
            "multiplexing-separate-clients",
            "ALL",
            "Multiplex streams from separate clients on separate source disks for the best results; restores "
            "of multiplexed backups are slower, since the application sorts through several backups.",
            "1302-1304, 1313-1315, 2195-2196, 2581-2583",
        ),
        lambda s: s.streams >= 2,
    ),
]


def advice_for(situation: Situation) -> list[Recommendation]:
    return [rec for rec, applies in ADVICE if applies(situation)]


def multiplexed_buffers(buffers: int, streams: int) -> tuple[int, Recommendation | None]:
    """The data-buffer setting to use when ``streams`` backups share a drive, and the rule used.

    The paper names 2-6 streams moderate and 8 or more heavy; 7 is planned as heavy (the smaller
    setting, which keeps the media server's memory in bounds).
    """
    if streams <= 1:
        return buffers, None
    if streams <= 6:
        return max(1, buffers // 2), MODERATE
    return max(1, buffers // 4), HEAVY
