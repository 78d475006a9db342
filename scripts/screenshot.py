#!/usr/bin/env python
"""Screenshot studio pages in headless Chromium, signed in as the demo curator.

    .venv/bin/python scripts/screenshot.py /system/ out.png [--base http://127.0.0.1:8000]
        [--user curator --password ...] [--wait-for SELECTOR] [--width 1280 --height 900]

The password defaults to the one `manage.py demo_curator` keeps in var/demo-curator.txt.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path")
    parser.add_argument("out")
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--user", default=None)
    parser.add_argument("--password", default=None)
    parser.add_argument("--wait-for", default=None)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--dark", action="store_true")
    args = parser.parse_args()

    user, password = args.user, args.password
    secret = REPO / "var" / "demo-curator.txt"
    if (user is None or password is None) and secret.exists():
        stored_user, _, stored_password = secret.read_text().strip().partition(":")
        user, password = user or stored_user, password or stored_password

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"),
            args=["--disable-gpu", "--no-sandbox", "--disable-background-networking"],
        )
        context = browser.new_context(
            viewport={"width": args.width, "height": args.height},
            color_scheme="dark" if args.dark else "light",
        )
        page = context.new_page()
        if user:
            page.goto(f"{args.base}/login/")
            page.fill("input[name=username]", user)
            page.fill("input[name=password]", password or "")
            page.click("button[type=submit]")
            page.wait_for_load_state("networkidle")
        page.goto(args.base + args.path)
        if args.wait_for:
            page.wait_for_selector(args.wait_for)
        page.wait_for_timeout(500)
        page.screenshot(path=args.out, full_page=True)
        browser.close()
    print(args.out)


if __name__ == "__main__":
    main()
