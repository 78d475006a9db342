"""What the render page exposes, and which of it changes with the renderer's history.

A walker runs in the render page's own world (after the harness, before any sketch) and
reads every property reachable from a set of roots, getters included, down to plain
values: `console.memory.usedJSHeapSize` -> 11900000. Two readings are compared: a page
opened first in a fresh browser, and a page opened after that browser painted sketches and
churned its heap (a training worker's state). A path whose value differs is a probe a
sketch could place a flower by.

SKETCH_ROOTS are what a sketch can reach (the allowlist's built-ins and the prototypes
behind literals); PAGE_ROOTS (window, performance, navigator, document) are behind the
shadow stubs, listed so the report says what is there.

`python -m tests.paintenv.adversarial.page_surface` prints the differing paths of both.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from paintenv.render_config import SETUP_BUDGET_S, RendererConfig, chromium_args, density_for
from paintenv.render_page import ShadowStubs, close_page, load_assets, open_page
from paintenv.sandbox import compose_module

SKETCH_ROOTS = {
    "console": "console", "Math": "Math", "Object": "Object", "Array": "Array", "String": "String",
    "Number": "Number", "Boolean": "Boolean", "Map": "Map", "Set": "Set", "Error": "Error",
    "TypeError": "TypeError", "RangeError": "RangeError",
    "functionPrototype": "Object.getPrototypeOf(function () {})",
    "asyncPrototype": "Object.getPrototypeOf(async function () {})",
    "generatorPrototype": "Object.getPrototypeOf(function* () {})",
    "promise": "(async function () {})()", "regexp": "/x/", "symbol": "Object(Symbol.iterator)",
    "bigint": "Object(1n)", "errorInstance": "new Error('x')",
}
PAGE_ROOTS = {"window": "window", "performance": "performance", "navigator": "navigator",
              "document": "document"}

# Reads every own and inherited property (getters called on the root's object), depth-first,
# plain values as they are and functions by name; cycles and the page's sheer size are cut
# by `seen` and a depth and count limit.
_WALK = """([maxDepth, maxPaths]) => {
  const roots = ROOTS;
  const out = {};
  const seen = new Set();
  let count = 0;
  const plain = (v) => v === null || ["number", "string", "boolean", "undefined", "bigint"].includes(typeof v);
  function walk(obj, path, depth) {
    if (count > maxPaths || seen.has(obj)) return;
    seen.add(obj);
    const keys = new Set();
    for (let o = obj; o && o !== Object.prototype && o !== Function.prototype; o = Object.getPrototypeOf(o)) {
      for (const k of Object.getOwnPropertyNames(o)) keys.add(k);
    }
    for (const k of keys) {
      if (k === "caller" || k === "arguments" || k === "callee") continue;
      let v;
      try { v = obj[k]; } catch (e) { out[path + "." + k] = "<throws " + e.name + ">"; count++; continue; }
      count++;
      if (plain(v)) out[path + "." + k] = typeof v === "bigint" || Number.isNaN(v) ? String(v) : v;
      else if (typeof v === "function") out[path + "." + k] = "<function " + v.name + "/" + v.length + ">";
      else if (depth < maxDepth && (typeof v === "object")) walk(v, path + "." + k, depth + 1);
      else out[path + "." + k] = "<" + typeof v + ">";
    }
  }
  for (const [name, get] of Object.entries(roots)) {
    let root;
    try { root = get(); } catch (e) { root = undefined; }
    if (root === undefined || root === null) { out[name] = "<missing>"; continue; }
    walk(root, name, 0);
  }
  return out;
}"""

# A page's worth of garbage and a few renders: what a render worker's browser has behind it.
CHURN_SKETCHES = [
    "function setup() { createCanvas(600, 600, WEBGL); background(240); brush.noStroke();"
    " brush.fill('#c2185b', 200); brush.circle(300, 300, 150, 0.4); }",
    "function setup() { createCanvas(600, 600, WEBGL); background(250); let junk = [];"
    " for (let i = 0; i < 200000; i++) junk.push({ i, s: 'x' + i }); brush.noStroke();"
    " brush.fill('#2e7d32', 200); brush.circle(200, 300, 90, 0.3); }",
]


def _config() -> RendererConfig:
    return RendererConfig(timeout_s=30)


@contextmanager
def browser() -> Iterator[tuple[Any, dict, ShadowStubs]]:
    """A Chromium launched with the renderer's switches, its assets and stub list."""
    from playwright.sync_api import sync_playwright

    config = _config()
    executable = config.chromium_path if config.chromium_path and __import__("os").path.exists(
        config.chromium_path) else None
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, headless=True, args=chromium_args(config))
        try:
            yield b, load_assets(config.asset_dir), ShadowStubs()
        finally:
            b.close()


# Garbage kept alive in the page before the reading: a page whose own heap has a history.
_CHURN = "() => { const keep = []; for (let i = 0; i < 100000; i++) keep.push({ i, s: 'x' + i }); window[Symbol.for('kept')] = keep; }"


def read_surface(b: Any, assets: dict, stubs: ShadowStubs, roots: dict[str, str], *, churn: bool = False,
                 max_depth: int = 3, max_paths: int = 40_000) -> dict[str, Any]:
    """One fresh render page's reading of everything under `roots` (after garbage in the
    page, with `churn`)."""
    slot = open_page(b, assets, stubs, time.monotonic() + SETUP_BUDGET_S)
    try:
        if churn:
            slot.page.evaluate(_CHURN)
        # The page's CSP allows no eval, so the roots are written into the walker's source.
        table = "{" + ", ".join(f"{name}: () => ({expr})" for name, expr in roots.items()) + "}"
        return slot.page.evaluate(_WALK.replace("ROOTS", table), [max_depth, max_paths])
    finally:
        close_page(slot)


def paint(b: Any, assets: dict, stubs: ShadowStubs, code: str, size: int = 128) -> None:
    """Render one sketch in this browser as the worker does (for its history, not its result)."""
    slot = open_page(b, assets, stubs, time.monotonic() + SETUP_BUDGET_S)
    try:
        slot.code = compose_module(code, stubs.names or [])
        slot.page.evaluate("o => window.__paint.render(o)", {
            "seed": 1, "density": density_for(size), "maxPixels": 2048 * 2048,
            "maxGraphicsPixels": 4 * 2048 * 2048, "drawFrames": 1, "sketchUrl": "/sketch.js"})
    finally:
        close_page(slot)


def readings(roots: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Readings of the first page of a fresh browser, of a page after that browser painted,
    and of a page with garbage of its own."""
    with browser() as (b, assets, stubs):
        fresh = read_surface(b, assets, stubs, roots)
        for code in CHURN_SKETCHES * 2:
            paint(b, assets, stubs, code)
        warm = read_surface(b, assets, stubs, roots)
        churned = read_surface(b, assets, stubs, roots, churn=True)
    return {"fresh": fresh, "warm": warm, "churned": churned}


def history_dependent(found: dict[str, dict[str, Any]]) -> dict[str, list[Any]]:
    """The paths whose value is not the same in every reading."""
    names = list(found)
    paths = set().union(*(found[n] for n in names))
    return {p: [found[n].get(p) for n in names] for p in sorted(paths)
            if len({repr(found[n].get(p)) for n in names}) > 1}


def main() -> None:
    roots = {**SKETCH_ROOTS, **PAGE_ROOTS}
    found = readings(roots)
    print(f"{len(found['fresh'])} paths read; not the same in a fresh, a warm and a churned page:")
    for path, values in history_dependent(found).items():
        print(f"  {path}: " + " | ".join(repr(v)[:60] for v in values))
    if "-v" in sys.argv:
        for path in sorted(p for p in found["fresh"] if p.startswith("console.")):
            print(f"  {path} = {found['fresh'][path]!r}")


if __name__ == "__main__":
    main()
