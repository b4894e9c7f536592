"""Page load of the web view in Chromium (bench/ui.sh): opens each page of a served store RUNS times
and prints the median time from the request to the load event (server time, transfer, parsing,
layout of the inline SVG) as the browser's Navigation Timing reports it.

    python bench/ui_browser.py BASE_URL SESSION [RUNS]
"""

from __future__ import annotations

import os
import statistics
import sys

from playwright.sync_api import sync_playwright


def main() -> None:
    base, session = sys.argv[1].rstrip("/"), sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    chromium = os.environ.get("COMPACT_TEST_CHROMIUM", "/usr/bin/chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(f"{base}/s/{session}")
        diff = page.locator("a.open-diff").last.get_attribute("href")
        pages = [("session list", "/"), ("session page", f"/s/{session}"), ("compaction diff", diff)]
        print(f"{'page':<16} {'median ms':>10} {'max ms':>10}   (Chromium: request start to load event, {runs} runs)")
        for name, path in pages:
            times = []
            for _ in range(runs):
                page.goto(base + path)
                times.append(page.evaluate(
                    "(() => { const n = performance.getEntriesByType('navigation')[0];"
                    " return n.loadEventEnd - n.requestStart; })()"
                ))
            print(f"{name:<16} {statistics.median(times):>10.1f} {max(times):>10.1f}")
        browser.close()


if __name__ == "__main__":
    main()
