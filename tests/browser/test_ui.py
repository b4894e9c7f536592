"""The web view in a real browser (Chromium through Playwright): the session list and its filter,
a session's sawtooth, a compaction's diff and checkpoint, recall, search, the replay's HTML report
opened from disk, and planted markup that must never run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import HOSTILE, HOSTILE_NAME

CHANGED = {"truncate", "densify", "reference", "summarize", "drop"}


def shot(page: Any, shots: Path, name: str) -> None:
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)


def open_session(page: Any, base_url: str, part: str) -> None:
    page.goto(base_url + "/")
    page.locator("#sessions a", has_text=part).first.click()
    page.wait_for_selector("svg.sawtooth")


def test_session_list_filters_as_one_types(page: Any, base_url: str, shots: Path) -> None:
    page.goto(base_url + "/")
    rows = page.locator("#sessions tbody tr")
    assert rows.count() == 3
    shot(page, shots, "list")
    page.fill("#filter", "rollout")
    assert page.locator("#sessions tbody tr:visible").count() == 1
    assert "rollout" in page.locator("#sessions tbody tr:visible").inner_text()
    page.fill("#filter", "")
    assert page.locator("#sessions tbody tr:visible").count() == 3


def test_a_compaction_opens_its_diff_and_a_stub_its_original(page: Any, base_url: str, shots: Path) -> None:
    open_session(page, base_url, "rollout")
    saw = page.locator("svg.sawtooth")
    assert int(saw.get_attribute("data-points")) > 10
    assert saw.locator("polyline.series").first.get_attribute("points").strip()
    assert saw.locator("line.rule").count() == 2  # window and trigger
    markers = saw.locator("g.compaction")
    assert markers.count() >= 1
    assert page.locator("svg.cache polyline.series").count() == 1
    shot(page, shots, "session")
    diffs = page.locator("a.open-diff").evaluate_all("as => as.map(a => a.href)")
    assert len(diffs) == markers.count()

    # Clicking a marker opens its compaction's diff.
    markers.first.click()
    page.wait_for_url("**/compaction/**")
    assert page.url == diffs[0]
    shot(page, shots, "diff")

    # Every diff lists items with their classes; a checkpoint's citations link to the items they
    # cite; a reference stub or truncation marker opens the original.
    cited = recalled = False
    for href in diffs:
        page.goto(href)
        fates = set(page.locator("#diff tbody tr").evaluate_all("rs => rs.map(r => r.dataset.fate)"))
        assert "keep" in fates and fates & CHANGED, fates
        if not cited and page.locator("pre.checkpoint a.cite").count():
            assert page.locator("pre.checkpoint").inner_text().strip()
            page.locator("pre.checkpoint a.cite").first.click()
            page.wait_for_selector("#original")
            assert page.locator("#original").inner_text().strip()
            cited = True
            page.goto(href)
        row = page.locator("#diff tbody tr", has=page.locator("a.recall"))
        if not recalled and row.count():
            stub = row.first.locator("td").nth(6).inner_text()
            row.first.locator("a.recall").first.click()
            page.wait_for_selector("#original")
            original = page.locator("#original").inner_text()
            assert original.strip() and original != stub
            shot(page, shots, "recall")
            recalled = True
    assert cited, "no compaction wrote a checkpoint with citations"
    assert recalled, "no compaction left a stub or a marker"


def test_search_over_the_whole_log(page: Any, base_url: str, shots: Path) -> None:
    open_session(page, base_url, "rollout")
    # As one types, results appear under the box.
    page.locator("#search").press_sequentially("the", delay=30)
    page.wait_for_selector("#live #results li")
    assert page.locator("#live mark").count() >= 1
    # Submitting opens the search page.
    page.fill("#search", "the")
    page.press("#search", "Enter")
    page.wait_for_selector("#results")
    assert page.locator("#results li").count() >= 1
    assert page.locator("#results mark").count() >= 1
    shot(page, shots, "search")
    page.locator("#results a.item").first.click()
    page.wait_for_selector("#original")


def test_the_replay_report_renders_from_disk(page: Any, replayed: dict[str, Path], shots: Path) -> None:
    page.goto(replayed["report"].as_uri())
    saws = page.locator("svg.sawtooth")
    assert saws.count() == 3
    for i in range(saws.count()):
        svg = saws.nth(i)
        assert svg.locator("polyline.series").count() >= 2  # none and the strategy
        assert svg.locator("polyline.series").first.get_attribute("points").strip()
        box = svg.bounding_box()
        assert box and box["height"] > 50 and box["width"] > 300
    assert page.locator("svg.cost rect.bar").count() >= 2
    assert page.locator("svg.retention rect.bar").count() >= 2
    assert page.locator("table.probes-lost tbody tr").count() >= 2
    assert page.locator("table.strategies").first.locator("tbody tr").count() >= 2
    shot(page, shots, "report")
    assert not page.errors  # type: ignore[attr-defined]


def assert_inert(page: Any) -> None:
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert not page.dialogs, page.dialogs
    assert page.locator("body img").count() == 0


def test_planted_markup_never_runs(page: Any, base_url: str, replayed: dict[str, Path], shots: Path) -> None:
    page.goto(base_url + "/")
    assert_inert(page)
    assert HOSTILE_NAME in page.locator("#sessions").inner_text()
    page.locator("#sessions a", has_text="onerror").first.click()
    page.wait_for_selector("svg.sawtooth")
    assert_inert(page)
    session_url = page.url
    page.locator("#search").press_sequentially("<script>", delay=20)
    page.wait_for_selector("#live #results li")
    assert HOSTILE[0] in page.locator("#live").inner_text()
    assert_inert(page)
    diffs = page.locator("svg.sawtooth a").evaluate_all("as => as.map(a => a.href.baseVal || a.getAttribute('href'))")
    assert diffs, "the planted session compacted"
    items: list[str] = []
    for href in diffs:
        page.goto(href if href.startswith("http") else base_url + href)
        assert_inert(page)
        text = page.locator("main").inner_text()
        assert any(h[:20] in text for h in HOSTILE), "the planted text is shown as text"
        items += page.locator("#diff a.item").evaluate_all("as => as.map(a => a.href)")[:3]
    for href in items[:6]:
        page.goto(href)
        assert_inert(page)
    page.goto(session_url + "/search?q=" + "%3Cscript%3E")
    assert_inert(page)
    assert HOSTILE[0] in page.locator("#results").inner_text()
    shot(page, shots, "hostile-search")
    page.goto(replayed["report"].as_uri())
    assert_inert(page)
    assert HOSTILE_NAME in page.locator("body").inner_text()


def test_a_compaction_is_reviewed_edited_and_applied(page: Any, base_url: str, shots: Path) -> None:
    # Last in the file: it adds a compaction to the SWE-agent session (no other test counts them).
    open_session(page, base_url, "pydicom")
    before = page.locator("a.open-diff").count()
    page.click("#review-link")
    page.wait_for_selector("form#review")
    assert page.locator("#plan tbody tr").count() > 0
    box = page.locator("textarea#checkpoint")
    planned = box.input_value()
    assert planned.strip(), "the planned compaction writes a checkpoint"
    shot(page, shots, "review")
    box.fill(planned.rstrip() + "\n- Reviewer: rerun the failing pydicom test first.")
    key = page.locator("form#review input[name=proposal]").get_attribute("value")
    action = base_url + page.locator("form#review").get_attribute("action")
    page.click("#apply")
    page.wait_for_url("**/compaction/**")
    applied = page.url
    assert "Reviewer: rerun the failing pydicom test first." in page.locator("pre.checkpoint").inner_text()
    shot(page, shots, "reviewed")
    # The same proposal does not apply twice.
    again = page.request.post(action, form={"proposal": key, "checkpoint": "late"}, max_redirects=0)
    assert again.status == 410
    open_session(page, base_url, "pydicom")
    diffs = page.locator("a.open-diff").evaluate_all("as => as.map(a => a.href)")
    assert len(diffs) == before + 1
    assert applied in diffs
    assert not page.errors  # type: ignore[attr-defined]


def test_a_review_of_planted_markup_is_inert(page: Any, base_url: str) -> None:
    page.goto(base_url + "/")
    page.locator("#sessions a", has_text="onerror").first.click()
    page.wait_for_selector("svg.sawtooth")
    page.click("#review-link")
    page.wait_for_selector("form#review")
    assert_inert(page)
    text = page.locator("textarea#checkpoint").input_value() if page.locator("textarea#checkpoint").count() else ""
    assert "<script>" not in page.content().split("<textarea", 1)[0]
    if text:
        # A planted closing tag stays inside the box, as text.
        assert page.locator("textarea").count() == 1
