"""How fast can a curator grade with the keyboard? Drives the focus view in headless Chromium.

Against a running studio (make demo): signs in as the account make demo printed
(var/demo-curator.txt, the demo pool's grader), opens the focus view on all references and
grades N of them with keys 1/2/3 only, waiting each time until the next painting is shown
(what a person waits for). Prints the time per grade and whether every grade was confirmed
by the server. Then it presses `u` N times, which puts every grade back as it was.

    .venv/bin/python bench/grading.py [--count 50] [--base http://127.0.0.1:8000]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    args = parser.parse_args()
    user, _, password = (REPO / "var" / "demo-curator.txt").read_text().strip().partition(":")

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"),
            args=["--disable-gpu", "--no-sandbox", "--disable-background-networking"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"{args.base}/login/")
        page.fill("input[name=username]", user)
        page.fill("input[name=password]", password)
        page.click("button[type=submit]")
        page.wait_for_load_state("networkidle")
        page.goto(f"{args.base}/pools/references/?tier=all")
        page.click("text=Grade these with the keyboard")
        page.wait_for_selector("#focus-img")

        per_grade = []
        start = time.perf_counter()
        for i in range(args.count):
            t0 = time.perf_counter()
            current = page.evaluate("document.getElementById('focus').dataset.current")
            page.keyboard.press("123"[i % 3])
            # The next painting is on screen (decoded) before a person would press again.
            page.wait_for_function(
                f"document.getElementById('focus').dataset.current !== '{current}' && document.getElementById('focus-img').complete",
                timeout=10_000,
            )
            per_grade.append(time.perf_counter() - t0)
        page.wait_for_function(
            "document.querySelectorAll('#recent li').length > 0 && "
            "[...document.querySelectorAll('#recent li')].every(li => li.dataset.status === 'saved')",
            timeout=30_000,
        )
        total = time.perf_counter() - start
        pending = page.evaluate("localStorage.getItem('paintapp.pendingGrades.' + document.getElementById('focus').dataset.user)")
        for _ in range(args.count):  # keys are taken in order: each undo goes back one grade
            page.keyboard.press("u")
        page.wait_for_function(
            f"document.querySelectorAll('#recent li[data-status=saved]').length >= {min(args.count, 8)} && "
            "[...document.querySelectorAll('#recent li')].every(li => li.dataset.status === 'saved') && "
            f"document.getElementById('focus-position').textContent.startsWith('1 /')",
            timeout=60_000,
        )
        browser.close()

    print(f"graded {args.count} references with the keyboard in {total:.1f} s of machine time "
          f"({statistics.median(per_grade) * 1000:.0f} ms median from key to next painting, "
          f"max {max(per_grade) * 1000:.0f} ms); all confirmed by the server: {pending in ('{}', None)}")
    print(f"a person who looks at each painting for 1.5 s needs about {args.count * 1.5 + total:.0f} s for {args.count}")


if __name__ == "__main__":
    main()
