"""The Planning area: from the sign-in window with no KMA at all, and in the main window."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtPdf import QPdfDocument

from tests.gui.helpers import open_page, sign_in
from ui.charts import ChartBox
from ui.planning.area import PlanningArea, PlanningWindow

pytestmark = pytest.mark.gui


def set_text(qtbot, edit, text):
    edit.selectAll()
    qtbot.keyClicks(edit, text) if text else edit.clear()


def choose_drive(area, drive):
    area.drive.setCurrentIndex(area.drive.findData(drive))


def test_planning_opens_from_sign_in_before_any_kma_exists(qtbot, controller, tmp_path):
    # Given the sign-in window and no KMA anywhere
    sign_in_window = controller.show_sign_in()
    qtbot.addWidget(sign_in_window)
    # When the user clicks "Plan a deployment…"
    qtbot.mouseClick(sign_in_window.plan_button, Qt.LeftButton)
    window = sign_in_window.planning_window
    qtbot.addWidget(window)
    assert isinstance(window, PlanningWindow) and window.isVisible()
    area = window.area
    # and plans the example
    choose_drive(area, "T10000")
    set_text(qtbot, area.data, "20TB")
    set_text(qtbot, area.window_edit, "8h")
    area.ratio.setEditText("2:1")
    area.file_size.setEditText("1GB")
    # Then the plan shows the measured setting, the drives and the KMAs
    summary = area.summary.text()
    assert "3 drives" in summary and "NUMBER_DATA_BUFFERS 8" in summary and "2 KMAs per site" in summary
    report = area.report.toPlainText()
    assert "SIZE_DATA_BUFFERS = 2097152 (2 MB)" in report and "308.969 MB/s encrypted" in report
    # and one chart per buffer size, with the measured figures, encrypted beside not encrypted
    assert [b.title for b in area.charts.boxes] == [
        "256 KB buffers",
        "512 KB buffers",
        "2 MB buffers (recommended: 8)",
    ]
    assert "8 buffers 310.8 MB/s, encrypted 309.0" in area.charts.boxes[2].accessibleDescription()
    series = area.charts.boxes[2].view.chart().series()[0]
    assert [s.label() for s in series.barSets()] == ["Not encrypted", "Encrypted"]

    # When it is exported to PDF, the file holds the plan
    pdf = area.export_pdf(tmp_path / "plan.pdf")
    doc = QPdfDocument()
    doc.load(str(pdf))
    assert doc.pageCount() >= 1
    text = " ".join(doc.getAllText(i).text() for i in range(doc.pageCount()))
    assert "NUMBER_DATA_BUFFERS = 8" in text and "KMAs per site: 2" in text


def test_closing_the_sign_in_window_leaves_an_open_planning_window(qtbot, controller):
    quits = []
    controller.quit_when_sign_in_closes = True
    controller.app = type("App", (), {"quit": lambda self: quits.append(1)})()
    sign_in_window = controller.show_sign_in()
    qtbot.mouseClick(sign_in_window.plan_button, Qt.LeftButton)
    planning = sign_in_window.planning_window  # deleted when closed, below
    sign_in_window.reject()  # Close
    assert planning.isVisible() and quits == []
    planning.close()
    second = controller.show_sign_in()
    second.reject()  # with nothing else open, closing the sign-in window quits as before
    assert quits == [1]


def test_bad_fields_are_named_and_keep_what_was_typed(qtbot, tmp_path):
    area = PlanningArea()
    qtbot.addWidget(area)
    area.show()
    cases = [
        (area.data, "0TB", "data: '0TB' must be more than zero"),
        (area.data, "20 zettabytes", "data: '20 zettabytes' is not a size"),
        (area.window_edit, "-8h", "window: '-8h' must be longer than zero"),
        (area.window_edit, "8 fortnights", "is not a duration"),
    ]
    for edit, typed, says in cases:
        set_text(qtbot, edit, typed)
        assert area.error.isVisible() and says in area.error.text()
        assert edit.text() == typed and "c62828" in edit.styleSheet()
        assert not area.export_button.isEnabled() and area.plan is None
        set_text(qtbot, edit, "20TB" if edit is area.data else "8h")
        assert not area.error.isVisible() and area.export_button.isEnabled() and edit.styleSheet() == ""
    area.ratio.setEditText("2")
    assert "compressibility: '2' is not a ratio" in area.error.text()
    area.ratio.setEditText("2:1")
    area.file_size.setEditText("0KB")
    assert "file size: '0KB' must be more than zero" in area.error.text()
    # An unmeasured size plans from the nearest measured rows and says so
    area.file_size.setEditText("100MB")
    assert not area.error.isVisible()
    assert "nearest measured" in area.summary.text()
    assert "100 MB files, 2:1 was not measured" in area.report.toPlainText()


def test_t10000b_plans_show_the_caveat(qtbot):
    area = PlanningArea()
    qtbot.addWidget(area)
    choose_drive(area, "T10000B")
    area.file_size.setEditText("256KB")
    assert "repeat the HP LTO4 figures" in area.report.toPlainText()
    assert "* repeats the HP LTO4 figure" in area.report.toPlainText()


def test_planning_is_an_area_of_the_main_window_for_every_role(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "auditor")
    assert "planning" in window.visible_page_keys()
    area = open_page(qtbot, window, "planning")
    assert isinstance(area, PlanningArea)
    choose_drive(area, "LTO4")
    area.mixed.setChecked(True)
    area.ratio.setEditText("1:1")
    area.streams.setValue(4)
    touch = area.plan.touch_files
    assert touch == {"SIZE_DATA_BUFFERS": "262144", "NUMBER_DATA_BUFFERS": "8"}  # 16, halved for 4 streams
    assert "Moderate multiplexing" in area.report.toPlainText()
    assert len(area.charts.boxes) == 4
    assert len(area.charts.findChildren(ChartBox)) == 4  # the previous plan's charts are gone at once


def choose(combo, key):
    combo.setCurrentIndex(combo.findData(key))


def test_a_slow_backup_is_walked_to_its_bottleneck_and_exported(qtbot, tmp_path):
    # Given an LTO-8 fed from a fast array over Gigabit Ethernet, measured at 30 MB/s
    area = PlanningArea()
    qtbot.addWidget(area)
    area.show()
    inputs = area.path_inputs
    set_text(qtbot, area.data, "10TB")
    choose(inputs.drive, "LTO8")
    choose(inputs.network, "gige")
    set_text(qtbot, inputs.disk_rate, "500")
    set_text(qtbot, inputs.measured, "30")
    # Then the drawn path outlines the network, as paper 002's Table 3 marks it
    assert "Bottleneck: Network: Gigabit Ethernet, 108.3 MB/s" in area.diagram.accessibleDescription()
    outlined = [b.accessibleName() for b in area.diagram.boxes if "the bottleneck" in b.accessibleName()]
    assert outlined == ["Network: 108.3 MB/s, the bottleneck"]
    row = [area.stage_table.item(2, c).text() for c in range(5)]
    assert row[1:4] == ["108.3", "Yes (Network)", "paper 002, line 1218"]
    assert area.stage_table.item(5, 3).toolTip().startswith("maker's figure")  # the LTO-8 is not measured
    assert "under 70% of the 108.3 MB/s" in area.path_report.toPlainText()
    assert "the drives shoe-shine" in area.path_summary.text()  # 108.3 MB/s under the LTO-8's 112
    # When the network goes and the server turns out to hold millions of small files
    choose(inputs.network, "none")
    assert area.path.bottleneck.kind == "Disk"  # 250 MB/s: half the array's rated 500 (002's 50% rule)
    choose(inputs.files, "small")
    # Then the file system is the bottleneck (002 Table 2), and a shoe-shining warning follows
    assert "Yes (File System)" in area.path_summary.text() and "10.6 MB/s" in area.path_summary.text()
    assert "Each drive is fed 10.6 MB/s" in area.path_report.toPlainText()
    assert "3.38 MB/s" in area.path_report.toPlainText()  # single-stream restore, 002 Table 6
    # and a bad rate is named, outlined, and keeps what was typed
    set_text(qtbot, inputs.disk_rate, "fast")
    assert (
        "disk rate: 'fast' is not a rate" in area.error.text() and "c62828" in inputs.disk_rate.styleSheet()
    )
    assert not area.export_button.isEnabled()
    set_text(qtbot, inputs.disk_rate, "500")

    # When exported, the PDF holds the stage table and the chart of rate per stage
    pdf = area.export_pdf(tmp_path / "path.pdf")
    doc = QPdfDocument()
    doc.load(str(pdf))
    text = " ".join(doc.getAllText(i).text() for i in range(doc.pageCount()))
    assert "Backup data path" in text and "Yes (File System)" in text and "paper 002, line 1158" in text
    assert "Rate per stage (MB/s)" in text and "bench/" not in text


def test_the_archive_tab_gives_paper_004s_rates(qtbot):
    area = PlanningArea()
    qtbot.addWidget(area)
    archive = area.archive
    archive.object_size.setEditText("8KB")
    assert "3,000 objects/s (paper 004, line 167)" in archive.report.toPlainText()
    archive.per_transaction.setValue(25)
    assert "495 objects/s (paper 004, line 215)" in archive.report.toPlainText()
    archive.object_size.setEditText("big")
    assert "object size: 'big' is not a size" in archive.error.text() and not archive.report.isEnabled()
