"""GUI benchmark: cold start to first window, and a 100,000-row keys list; or a built bundle.

Prints the figures, then one JSON object on the last line. Starts its own demo KMA in a temporary
folder and fills it to 100,000 keys through the API (raising the KMA's key pool size, so the KMA
itself generates them), then opens the Keys page the way a user does.

    python bench/gui.py [--keys 100000] [--runs 3]
    xvfb-run -a python bench/gui.py --bundle dist/kms-manager [--runs 5]

With ``--bundle`` it measures the PyInstaller bundle instead: its size on disk (unpacked) and the
cold start of the frozen ``kms-manager``, from starting the process to its sign-in window being
mapped on the X display (watched from outside with ``xdotool``, so nothing in the product is
instrumented), each run with fresh, empty settings. "Cold" is a new process; the OS file cache is
warm after the first run (the first run's figure is listed separately).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

CHILD = r"""
import sys, time
sys.path.insert(0, {root!r})
from PySide6.QtCore import QTimer, QSettings
from PySide6.QtWidgets import QApplication
QSettings.setDefaultFormat(QSettings.IniFormat)
QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, {settings!r})
app = QApplication([])
app.setOrganizationName("KMS-bench"); app.setApplicationName("kms-manager")
from manager.controller import AppController
controller = AppController(app)
window = controller.show_sign_in()
def shown():
    print("FIRST_WINDOW", flush=True)
    app.quit()
QTimer.singleShot(0, shown)
app.exec()
"""


def cold_start(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        settings = tempfile.mkdtemp(prefix="kms-bench-settings-")
        code = CHILD.format(root=str(ROOT), settings=settings)
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("FIRST_WINDOW"):
                times.append(time.perf_counter() - t0)
                break
        proc.wait(30)
    return times


def bundle_size_mb(bundle: Path) -> float:
    total = sum(path.stat().st_size for path in bundle.rglob("*") if path.is_file() and not path.is_symlink())
    return total / 1e6


def frozen_cold_start(bundle: Path, runs: int) -> list[float]:
    """Seconds from exec of the frozen manager to its sign-in window mapped on $DISPLAY."""
    if not os.environ.get("DISPLAY"):
        raise SystemExit("--bundle needs an X display: run under xvfb-run -a")
    times = []
    for _ in range(runs):
        home = Path(tempfile.mkdtemp(prefix="kms-bench-home-"))
        env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
            "QT_QPA_PLATFORM": "xcb",
        }
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [str(bundle / "kms-manager")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            while True:
                found = subprocess.run(
                    ["xdotool", "search", "--onlyvisible", "--pid", str(proc.pid), "--name", "KMS Manager"],
                    capture_output=True,
                    check=False,
                )
                if found.returncode == 0 and found.stdout.strip():
                    times.append(time.perf_counter() - t0)
                    break
                if proc.poll() is not None or time.perf_counter() - t0 > 60:
                    raise SystemExit(f"the frozen manager showed no window (exit code {proc.poll()})")
                time.sleep(0.005)
        finally:
            proc.terminate()
            proc.wait(30)
    return times


def bench_bundle(bundle: Path, runs: int) -> int:
    size = bundle_size_mb(bundle)
    print(f"bundle {bundle}: {size:.1f} MB unpacked")
    starts = frozen_cold_start(bundle, runs + 1)
    first, warm = starts[0], starts[1:]
    print(
        f"frozen cold start to first window: median {statistics.median(warm):.3f} s "
        f"(runs: {', '.join(f'{t:.3f}' for t in warm)}; the very first, file cache cold: {first:.3f} s)"
    )
    print(
        json.dumps(
            {
                "bundle_size_mb": round(size, 1),
                "frozen_cold_start_first_window_s": round(statistics.median(warm), 3),
                "frozen_cold_start_runs_s": [round(t, 3) for t in warm],
                "frozen_first_run_s": round(first, 3),
            }
        )
    )
    return 0


def fill_keys(kma, demo: dict, target: int) -> float:
    """Raise the pool size so the KMA generates ``target`` ready keys; returns seconds taken."""
    from kms_client import KmsClient

    ready = kma.ready
    client = KmsClient(ready.management_address, ca_fingerprint=ready.ca_fingerprint)
    pw = {u["id"]: u["passphrase"] for u in demo["users"]}
    client.sign_in("so", pw["so"])
    t0 = time.perf_counter()
    own = next(k for k in client.iter_kmas())
    client.update_kma(own.id, key_pool_size=target)
    # Full as the KMA keeps a pool (short by less than its refill's low water mark), read from the
    # store: the dashboard's counts by state stop at 10,000, and the KMA list counts Ready keys only.
    from kma.services.keypool import low_water
    from tests.support.kma_process import pool_keys

    full = target - low_water(target) + 1
    deadline = time.monotonic() + 600
    while (ready := pool_keys(kma.data_dir / "kma.db")) < full:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the key pool did not fill in 600 s ({ready:,} of {target:,} keys)")
        time.sleep(0.5)
    client.close()
    return time.perf_counter() - t0


def wait_for(predicate, timeout: float = 60.0) -> None:
    from PySide6.QtCore import QEventLoop, QTimer

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("gave up waiting")
        loop = QEventLoop()
        QTimer.singleShot(1, loop.quit)
        loop.exec()


def keys_list(kma, demo: dict) -> dict:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app.local.local_mode import local_profile
    from app.session.sign_in import sign_in
    from manager.controller import AppController

    QSettings.setDefaultFormat(QSettings.IniFormat)
    QSettings.setPath(
        QSettings.IniFormat, QSettings.UserScope, tempfile.mkdtemp(prefix="kms-bench-settings-")
    )
    app = QApplication.instance() or QApplication([])
    app.setOrganizationName("KMS-bench")
    controller = AppController(app)
    profile = local_profile(kma.ready)
    profile.user_id = "auditor"
    pw = {u["id"]: u["passphrase"] for u in demo["users"]}
    window = controller.signed_in(sign_in(profile, pw["auditor"]), profile)
    window.resize(1280, 800)
    window.show()
    wait_for(lambda: controller.ops.busy == 0)

    t0 = time.perf_counter()
    window.show_page("keys")
    page = window.page("keys")
    wait_for(lambda: page.model.rowCount() > 0)
    first_page = time.perf_counter() - t0
    total = page.model.total

    # Scroll down the way a user drags the scroll bar: each step paints, the view asks for the
    # next page when it reaches the end.
    bar = page.view.verticalScrollBar()
    paint_ms = []
    t0 = time.perf_counter()
    target_rows = 5000
    while page.model.rowCount() < target_rows:
        bar.setValue(bar.maximum())
        t_paint = time.perf_counter()
        page.view.viewport().repaint()
        paint_ms.append((time.perf_counter() - t_paint) * 1000)
        wait_for(lambda: not page.model.loading)
        QApplication.processEvents()
    scroll_s = time.perf_counter() - t0
    # Repaint cost at a random position deep in the loaded rows
    steps = []
    for value in range(0, bar.maximum(), max(1, bar.maximum() // 200)):
        bar.setValue(value)
        t_paint = time.perf_counter()
        page.view.viewport().repaint()
        steps.append((time.perf_counter() - t_paint) * 1000)
    window.close()
    controller.ops.wait_idle(3000)
    return {
        "keys_total": total,
        "first_page_s": round(first_page, 3),
        "rows_loaded_while_scrolling": page.model.rowCount(),
        "scroll_to_5000_rows_s": round(scroll_s, 3),
        "repaint_ms_p50": round(statistics.median(steps), 2),
        "repaint_ms_max": round(max(steps), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description="KMS manager GUI benchmark")
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bundle", type=Path, help="measure this built bundle (dist/kms-manager) instead")
    args = parser.parse_args()
    if args.bundle is not None:
        return bench_bundle(args.bundle.resolve(), args.runs)

    from app.local.local_kma import LocalKma

    starts = cold_start(args.runs)
    print(
        f"cold start to first window: median {statistics.median(starts):.3f} s "
        f"(runs: {', '.join(f'{t:.3f}' for t in starts)})"
    )

    kma = LocalKma(Path(tempfile.mkdtemp(prefix="kms-bench-")) / "kma")
    demo = kma.create_demo()
    kma.start()
    try:
        fill_s = fill_keys(kma, demo, args.keys)
        print(f"filled the demo KMA to {args.keys:,} keys through the API in {fill_s:.1f} s")
        figures = keys_list(kma, demo)
    finally:
        kma.stop()
    print(
        f"keys list: {figures['keys_total']:,} keys; first page shown after "
        f"{figures['first_page_s'] * 1000:.0f} ms"
    )
    print(
        f"scrolling: {figures['rows_loaded_while_scrolling']:,} rows loaded page by page in "
        f"{figures['scroll_to_5000_rows_s']:.2f} s; viewport repaint median "
        f"{figures['repaint_ms_p50']} ms, worst {figures['repaint_ms_max']} ms"
    )
    result = {
        "cold_start_first_window_s": round(statistics.median(starts), 3),
        "cold_start_runs_s": [round(t, 3) for t in starts],
        **figures,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
