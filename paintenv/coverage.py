"""Which parts of the sketch ran: V8's block coverage of the sketch's module, read through
the render page's DevTools session, as character ranges of the sketch's own source.

The length part of the reward counts only code that ran (length.py); a function never
called, a branch never taken and the code after a `return` count nothing. Coverage is
binary (callCount false): whether a block ran, not how often, which is all length needs
and the cheapest mode V8 has.
"""
from __future__ import annotations

from typing import Any

__all__ = ["executed_ranges", "start_coverage", "take_coverage"]


def start_coverage(cdp: Any) -> None:
    """Start block coverage on the page before the sketch's module is fetched (code that ran
    before this is not reported)."""
    cdp.send("Profiler.enable")
    cdp.send("Profiler.startPreciseCoverage", {"callCount": False, "detailed": True})


def take_coverage(cdp: Any, script_url: str, module: str, code: str) -> list[tuple[int, int]] | None:
    """The ranges of `code` that ran, from the coverage of the script at `script_url`, whose
    source is `module` (the sketch composed with the harness's import line first, and its
    hand-over last: sandbox.compose_module). None when the page cannot say (the page is
    gone, or the module never loaded)."""
    try:
        taken = cdp.send("Profiler.takePreciseCoverage")
        cdp.send("Profiler.stopPreciseCoverage")
    except Exception:  # noqa: BLE001 - a crashed or closed page: coverage is unknown
        return None
    scripts = [s for s in taken.get("result", []) if s.get("url") == script_url]
    if len(scripts) != 1:
        return None  # the module never loaded (a syntax error), or was not ours alone
    start = module.find("\n") + 1  # the harness's line comes first, then the sketch verbatim
    if module[start:start + len(code)] != code:
        return None
    ranges = [(int(r["startOffset"]), int(r["endOffset"]), int(r["count"]))
              for f in scripts[0].get("functions", []) for r in f.get("ranges", [])]
    return executed_ranges(ranges, module, start, len(code))


def executed_ranges(ranges: list[tuple[int, int, int]], module: str, start: int,
                    length: int) -> list[tuple[int, int]]:
    """V8's nested (start, end, count) ranges, in UTF-16 offsets of `module`, flattened to the
    sorted, disjoint ranges of `module[start:start + length]` (Python indices from `start`)
    whose innermost range ran. V8's ranges nest (a block inside its function), and the
    innermost one holds the count, so painting them outermost first leaves the answer."""
    units = _utf16_to_index(module)
    spans = sorted(((units(a), units(b), c) for a, b, c in ranges), key=lambda r: (r[0], -r[1]))
    ran = bytearray(len(module) + 1)
    for a, b, count in spans:
        ran[a:b] = (b"\x01" if count > 0 else b"\x00") * (b - a)
    out: list[tuple[int, int]] = []
    i, end = start, start + length
    while i < end:
        i = ran.find(1, i, end)
        if i < 0:
            break
        j = ran.find(0, i, end)
        j = end if j < 0 else j
        out.append((i - start, j - start))
        i = j
    return out


def _utf16_to_index(text: str):
    """A function from a UTF-16 offset in `text` (what V8 reports) to a Python index."""
    if all(ord(ch) < 0x10000 for ch in text):
        return lambda unit: min(unit, len(text))
    table: list[int] = []
    for i, ch in enumerate(text):
        table.append(i)
        if ord(ch) >= 0x10000:
            table.append(i)  # the second half of a surrogate pair
    table.append(len(text))
    return lambda unit: table[min(unit, len(table) - 1)]
