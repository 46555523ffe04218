"""report.html in a real browser: headless Debian Chromium driven by Playwright.

The page is built from result files whose responses are hostile markup. In the browser the
filters and the search must narrow the examples to the hand-counted rows, the sortable
tables must still sort under the page's Content-Security-Policy, the hostile text must show
as text and run nothing, and the page must request nothing but itself and its data: images.

Skipped, with the reason, when Playwright or /usr/bin/chromium is missing; failed instead
when ORBENCH_REQUIRE_BROWSER=1 (CI sets it: .ci/run installs Chromium first).
Set ORBENCH_REPORT_SHOTS=DIR to keep screenshots of the views there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orbench import report as rp
from tests.report_audit_helpers import SHAPES, write_shape
from tests.report_examples_helpers import (
    DISAGREEMENT_ROWS,
    EXAMPLE_ROWS,
    HOSTILE,
    JS_LINK,
    PRIVACY_ROWS,
    write_runs,
)

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
REQUIRED = os.environ.get("ORBENCH_REQUIRE_BROWSER") == "1"


def _unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason}, and ORBENCH_REQUIRE_BROWSER=1 asks for the browser test")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        _unavailable("Playwright for Python is not installed (pip install -e '.[test]')")
    if not Path(CHROMIUM).is_file():
        _unavailable(f"{CHROMIUM} is missing (apt-get install chromium)")
    with sync_playwright() as pw:
        try:
            chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        except Error as exc:
            _unavailable(f"Chromium at {CHROMIUM} did not start: {str(exc).splitlines()[0]}")
        yield chromium
        chromium.close()


@pytest.fixture()
def loaded(browser, tmp_path):
    """The report of the hostile runs, open in a fresh page that records what it does."""
    out = tmp_path / "report"
    assert rp.main([str(write_runs(tmp_path / "runs")), "--output_dir", str(out)]) == 0
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    seen = {"requests": [], "console": [], "errors": [], "dialogs": []}
    page.on("request", lambda req: seen["requests"].append(req.url))
    page.on("console", lambda msg: seen["console"].append(msg.text))
    page.on("pageerror", lambda exc: seen["errors"].append(str(exc)))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.goto((out / "report.html").as_uri())
    yield page, seen
    page.close()


def _open_views(page) -> None:
    """Unfold the examples and disagreements tables (folded under the views' intros)."""
    for summary in page.locator("details.rows-view > summary").all():
        summary.click()


def _visible_rows(page, view: str) -> int:
    return page.locator(f"#{view}-table tbody tr:visible").count()


def _shots(page, name: str) -> None:
    where = os.environ.get("ORBENCH_REPORT_SHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / f"{name}.png"), full_page=True)
        for view in ("examples", "disagreements"):
            box = page.locator(f"h2#{view}")
            if box.count():
                box.scroll_into_view_if_needed()
                page.screenshot(path=str(Path(where) / f"{name}_{view}.png"))


def test_filters_search_and_count(loaded):
    page, seen = loaded
    assert _visible_rows(page, "examples") == 0  # folded until asked for
    _open_views(page)
    assert _visible_rows(page, "examples") == EXAMPLE_ROWS
    assert page.locator("#examples-count").inner_text() == f"Showing {EXAMPLE_ROWS} of {EXAMPLE_ROWS} rows"
    assert _visible_rows(page, "disagreements") == DISAGREEMENT_ROWS

    page.select_option("#examples-category", "privacy")
    assert _visible_rows(page, "examples") == PRIVACY_ROWS
    assert page.locator("#examples-count").inner_text() == f"Showing {PRIVACY_ROWS} of {EXAMPLE_ROWS} rows"
    # Search text inside the folded responses, within the category.
    page.fill("#examples-search", "JAVASCRIPT:")
    assert _visible_rows(page, "examples") == 1
    assert page.locator("#examples-count").inner_text() == f"Showing 1 of {EXAMPLE_ROWS} rows"
    page.select_option("#examples-model", "beta")
    assert _visible_rows(page, "examples") == 0
    page.select_option("#examples-model", "")
    page.select_option("#examples-category", "")
    page.fill("#examples-search", "")
    assert _visible_rows(page, "examples") == EXAMPLE_ROWS
    # The other view's filters are its own.
    page.select_option("#disagreements-category", "harmful")
    assert _visible_rows(page, "disagreements") == 1 and _visible_rows(page, "examples") == EXAMPLE_ROWS
    assert not seen["errors"], seen["errors"]
    _shots(page, "report")


def test_sortable_tables_still_sort_under_the_csp(loaded):
    page, seen = loaded
    header = page.locator("table.sortable").first.locator("th").first
    names = lambda: page.locator("table.sortable").first.locator("tbody tr td:first-child").all_inner_texts()
    header.click()
    assert names() == ["alpha", "beta"]
    header.click()
    assert names() == ["beta", "alpha"]
    assert not any("Content Security Policy" in m for m in seen["console"]), seen["console"]


def test_hostile_responses_show_as_text_and_run_nothing(loaded):
    page, seen = loaded
    _open_views(page)
    # Unfold the response holding the link, then click the link's text.
    row = page.locator("#examples-table tbody tr", has_text=JS_LINK)
    assert row.count() == 1
    row.locator("summary").click()
    full = row.locator(".full")
    assert full.is_visible() and full.inner_text() == JS_LINK
    full.click()
    # Unfold every other response too: each hostile one shows, character for character.
    for summary in page.locator("table.rows summary:visible").all():
        if summary.locator("xpath=..").get_attribute("open") is None:
            summary.click()
    for text in HOSTILE:
        shown = page.locator(".full", has_text=text)
        assert shown.count() >= 1 and shown.first.is_visible(), text
        assert text in shown.first.inner_text()
    page.wait_for_timeout(200)  # let anything that was going to run, run
    assert page.evaluate("typeof window.__pwned") == "undefined"
    # Nothing of the data became markup: one script (the page's own), no image from the
    # data, no javascript: link, no textarea.
    assert page.locator("script").count() == 1
    assert page.locator("img[src='x'], a[href^='javascript'], textarea").count() == 0
    assert page.url.startswith("file:")
    assert not seen["dialogs"] and not seen["errors"], (seen["dialogs"], seen["errors"])
    others = [u for u in seen["requests"] if not u.startswith(("file:", "data:"))]
    assert others == [], others


def test_the_summary_fits_1400_px_without_scrolling(browser, tmp_path):
    """Three sets, judged samples, a judge that failed its audit and long model names: the
    summary (and its details, unfolded), the judges and the corrections tables all fit."""
    from tests.report_audit_helpers import ALWAYS_REFUSAL, audit_record, write_model

    for model in ("Meta-Llama-3.1-70B-Instruct-with-safety-prompt", "gpt-4o-2024-08-06"):
        write_model(tmp_path / "run", model, "gpt4", audit_record("gpt4", ALWAYS_REFUSAL))
    out = tmp_path / "report"
    assert rp.main([str(tmp_path / "run"), "--output_dir", str(out), "--compare_paper"]) == 0
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto((out / "report.html").as_uri())
        for summary in page.locator("details.details > summary").all():
            summary.click()
        assert page.evaluate("document.documentElement.scrollWidth") <= 1400
        overflow = page.evaluate("""Array.from(document.querySelectorAll('table')).filter(t => t.offsetParent)
            .map(t => [t.querySelector('th').textContent, Math.round(t.getBoundingClientRect().right),
                       Math.round(document.body.getBoundingClientRect().right)])
            .filter(([, right, body]) => right > body)""")
        assert overflow == [], overflow
        first = page.locator("table.sortable").first.locator("th").all_inner_texts()
        assert first[:4] == ["model", "OR-Bench-Hard-1K % [95% CI]", "OR-Bench-Toxic % [95% CI]", "trade-off score"]
        _shots(page, "summary_fit")
    finally:
        page.close()


# ----------------------------------------------------------------------------- the first screen

SCREEN = {"width": 1366, "height": 768}


def _inside(box: dict | None) -> bool:
    return (box is not None and box["x"] >= 0 and box["y"] >= 0 and box["width"] > 0 and box["height"] > 0
            and box["x"] + box["width"] <= SCREEN["width"] and box["y"] + box["height"] <= SCREEN["height"])


@pytest.mark.parametrize("shape", SHAPES)
def test_the_first_screen_shows_the_figure_and_the_headline_rates_without_script(browser, tmp_path, shape):
    import pandas as pd

    from orbench.report.correction import interval_text

    out = tmp_path / "report"
    assert rp.main([str(write_shape(tmp_path / "run", shape)), "--output_dir", str(out), "--compare_paper"]) == 0
    summary = pd.read_csv(out / "summary.csv", keep_default_na=False)
    context = browser.new_context(viewport=SCREEN, java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto((out / "report.html").as_uri())
        assert page.evaluate("window.scrollY") == 0
        # The figure (the paper's 32 and these models), whole, on the first screen.
        figure = page.locator(".first figure img")
        assert figure.count() == 1 and _inside(figure.bounding_box())
        assert page.evaluate("document.querySelector('.first figure img').naturalWidth") > 0
        # The headline rates, every model's, with their intervals and counts, beside it.
        table = page.locator("table.headline")
        assert _inside(table.bounding_box())
        rows = table.locator("tbody tr:not(.group)")
        assert rows.count() == len(summary) == 3
        published = rows.first.locator("td").first.inner_text()
        assert published == "small (published sets)"  # the published-set rows first
        for i in range(rows.count()):
            cells = rows.nth(i).locator("td").all_inner_texts()
            r = summary[summary["model"] == cells[0]].iloc[0]
            for ds, cell in zip(("hard", "toxic"), cells[1:]):
                rate, low, high = (r[f"{ds}_corrected_pct"], r[f"{ds}_corrected_ci_low_pct"],
                                   r[f"{ds}_corrected_ci_high_pct"]) if str(r[f"{ds}_corrected_used"]) == "True" else (
                    r[f"{ds}_rejection_pct"], r[f"{ds}_ci_low_pct"], r[f"{ds}_ci_high_pct"])
                shown = interval_text(float(rate), float(low), float(high))  # "12.3 [4.5, 6.7]"
                assert cell.split()[0] == shown.split()[0] and shown.split(" ", 1)[1] in cell, (cell, shown)
                assert f"n = {int(r[f'{ds}_scored'])}" in cell
        # What the numbers are worth, on the same screen.
        worth = page.locator("ul.worth")
        assert _inside(worth.bounding_box())
        said = worth.inner_text()
        expected = {"passes": "Judge gpt4 passed its audit", "fails": "Judge gpt4 failed its audit",
                    "judged nothing": "No judged sample: judge gpt4 failed its audit"}[shape]
        assert expected in said and "prompts per" in said
        if shape == "judged nothing":
            assert "judged" not in " ".join(table.locator("td").all_inner_texts())
        # The long parts fold away, closed, and open without script.
        folded = page.locator("details:not([open])")
        assert folded.count() >= 5
        for name in ("How these rates are computed", "How the audit works", "A chart per model"):
            box = page.locator("details", has=page.locator("summary", has_text=name))
            assert box.count() == 1 and box.get_attribute("open") is None
            inside = box.locator(":scope > :not(summary)").first
            assert not inside.is_visible()
            box.locator("summary").click()
            assert box.get_attribute("open") is not None and inside.is_visible()
        _shots(page, f"first_screen_{shape.replace(' ', '_')}")
    finally:
        context.close()
