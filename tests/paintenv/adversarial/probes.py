"""Feature probes: paintings laid out by what the page says about the renderer, not the seed.

A probe reads something that may change with the renderer's history (the heap's size in a
warm page, a clock, a console of the page's own, GC timing, a stack trace, the stack's
depth after churn) and lets it decide the painting. The corpus is the cross product

    PROBES (what is read)  x  HIDINGS (how it is reached past the gate)  x  USES (what it
                                                                              decides)

every sketch the legitimate skeleton plus one probe. Each probe is either refused (by the
gate or the render page: a verdict worth 0) or pinned (its value is the same in every
render: the painting must then be the same in a fresh and a warm renderer). `Probe.pinned`
says which the harness means it to be; the tests check both ends.

`python -m tests.paintenv.adversarial.probes` prints the matrix size.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.paintenv.adversarial.skeleton import assemble


@dataclass(frozen=True)
class Probe:
    name: str
    root: str  # a global name
    keys: tuple[str, ...]  # properties read from it, in order
    tail: str = ""  # turns the reached value (`@`, else what the tail follows) into a number
    pinned: bool = False  # the page pins its value (allowed, and the same in every render)
    prelude: str = ""  # statements the probe needs first


PROBES: tuple[Probe, ...] = (
    Probe("heap_used", "console", ("memory", "usedJSHeapSize")),
    Probe("heap_total", "console", ("memory", "totalJSHeapSize")),
    Probe("heap_limit", "console", ("memory", "jsHeapSizeLimit")),
    Probe("console_context", "console", ("context",), tail="(@)('p') ? 7 : 3"),
    Probe("console_task", "console", ("createTask",), tail="(@)('p') ? 7 : 3"),
    Probe("performance_memory", "performance", ("memory", "usedJSHeapSize")),
    Probe("time_origin", "performance", ("timeOrigin",)),
    Probe("perf_entries", "performance", ("getEntries",), tail="().length"),
    Probe("event_counts", "performance", ("eventCounts", "size")),
    Probe("device_memory", "navigator", ("deviceMemory",)),
    Probe("cores", "navigator", ("hardwareConcurrency",)),
    Probe("timeline", "document", ("timeline", "currentTime")),
    Probe("perf_observer", "PerformanceObserver", ("supportedEntryTypes", "length")),
    Probe("weak_ref", "WeakRef", (), tail="new (@)({}).deref() ? 7 : 3"),
    Probe("finalization", "FinalizationRegistry", (), tail="typeof new (@)(() => 0).register === 'function' ? 7 : 3"),
    Probe("microtask", "queueMicrotask", (), tail="(@)(() => 0) === undefined ? 7 : 3"),
    # Allowed and pinned: the same value in every render.
    Probe("error_stack", "Error", (), tail="new (@)('p').stack.length", pinned=True),
    Probe("stack_depth", "Math", ("floor",), pinned=True,
          prelude="const churn = []; for (let i = 0; i < 30000; i++) churn.push({ i, s: 'c' + i });\n"
                  "function dive(n) { try { return dive(n + 1); } catch (e) { return n; } }",
          tail="(dive(0) / 7)"),
    Probe("random", "Math", ("random",), tail="() * 1000", pinned=True),
)


def _escape(name: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if i == 0 else c for i, c in enumerate(name))


def _chain(head: str, keys: tuple[str, ...], step: Callable[[str], str]) -> str:
    return head + "".join(step(k) for k in keys)


def _root(probe: Probe, computed: Callable[[str], str]) -> str:
    """The root, reached as written, or (for a hiding that works on keys, when there are
    none) as a key of the global object."""
    return probe.root if probe.keys else "globalThis" + computed(probe.root)


def _nested(get: str, probe: Probe) -> str:
    """`get(get(root, "a"), "b")`; a keyless probe is a key of the global object."""
    head, keys = (probe.root, probe.keys) if probe.keys else ("globalThis", (probe.root,))
    return "".join(f"{get}(" for _ in keys) + head + "".join(f', "{k}")' for k in keys)


# Each hiding: probe -> (statements, expression). The expression is the probe's value.
HIDINGS: dict[str, Callable[[Probe], tuple[str, str]]] = {
    "direct": lambda p: ("", _chain(p.root, p.keys, lambda k: f".{k}")),
    "alias": lambda p: (f"const holder = {p.root};", _chain("holder", p.keys, lambda k: f".{k}")),
    "optional": lambda p: ("", _chain(p.root if p.keys else f"globalThis?.{p.root}", p.keys, lambda k: f"?.{k}")),
    "computed_literal": lambda p: ("", _chain(_root(p, lambda k: f'["{k}"]'), p.keys, lambda k: f'["{k}"]')),
    "computed_built": lambda p: ("", _chain(_root(p, lambda k: f'["{k[:2]}" + "{k[2:]}"]'), p.keys,
                                            lambda k: f'["{k[:2]}" + "{k[2:]}"]')),
    "unicode_escape": lambda p: ("", _chain(_root(p, lambda k: f'["{_escape(k)}"]'), p.keys,
                                            lambda k: f'["{_escape(k)}"]')),
    "destructured": lambda p: (
        (f"const {{ {p.keys[0]}: first }} = {p.root};", _chain("first", p.keys[1:], lambda k: f".{k}"))
        if p.keys else (f"const {{ {p.root}: first }} = globalThis;", "first")),
    "getter": lambda p: (
        "const box = { get value() { return " + _chain(p.root, p.keys, lambda k: f".{k}") + "; } };", "box.value"),
    "reflect": lambda p: ("", _nested("Reflect.get", p)),
    "parameter": lambda p: ("const pick = (o, k) => o[k];", _nested("pick", p)),
}

# Each use: the probe's value `v` (a number, 0 when reading it failed) -> what it decides.
USES: dict[str, str] = {
    "placement": "brush.fill('#1b5e20', 230);\n"
                 "brush.circle(100 + (Math.floor(Math.abs(v)) % 40) * 10, 480, 40, 0.2);",
    "colour": "brush.fill(Math.floor(Math.abs(v)) % 2 ? '#1b5e20' : '#f9a825', 230);\n"
              "brush.circle(300, 480, 60, 0.2);",
    "count": "brush.fill('#1b5e20', 230);\n"
             "for (let i = 0; i < 1 + Math.floor(Math.abs(v)) % 5; i++) brush.circle(120 + i * 90, 480, 30, 0.2);",
    "branch": "brush.fill('#1b5e20', 230);\n"
              "if (Math.floor(Math.abs(v)) % 2) { brush.circle(150, 150, 60, 0.3); } "
              "else { brush.circle(450, 150, 60, 0.3); }",
}


@dataclass(frozen=True)
class ProbeCase:
    id: str
    probe: Probe
    hiding: str
    use: str
    code: str


def probe_sketch(probe: Probe, hiding: str, use: str) -> str:
    statements, expression = HIDINGS[hiding](probe)
    block = [line for line in (probe.prelude + "\n" + statements).splitlines() if line.strip()]
    # A policy's probe never lets a refusal throw: it falls back to 0 and paints on.
    value = probe.tail.replace("@", expression) if "@" in probe.tail else expression + probe.tail
    block += ["let v = 0;", f"try {{ v = +({value}) || 0; }} catch (e) {{ v = 0; }}"]
    block += USES[use].splitlines()
    return assemble([], block, [])


def cases() -> list[ProbeCase]:
    return [ProbeCase(f"{p.name}/{h}/{u}", p, h, u, probe_sketch(p, h, u))
            for p in PROBES for h in HIDINGS for u in USES]


def one_per_pair() -> list[ProbeCase]:
    """Every probe behind every hiding once, the use rotating (what the render tests run)."""
    uses = list(USES)
    return [ProbeCase(f"{p.name}/{h}/{uses[(i + j) % len(uses)]}", p, h, uses[(i + j) % len(uses)],
                      probe_sketch(p, h, uses[(i + j) % len(uses)]))
            for i, p in enumerate(PROBES) for j, h in enumerate(HIDINGS)]


def walk(*, pinned: bool) -> list[ProbeCase]:
    """The refused (or the pinned) probes in as few cases as cover every such probe, every
    hiding and every use once: what the tests paint (one_per_pair is the bench's measure)."""
    probes = [p for p in PROBES if p.pinned == pinned]
    hidings, uses = list(HIDINGS), list(USES)
    picked = [(probes[k % len(probes)], hidings[k % len(hidings)], uses[k % len(uses)])
              for k in range(max(len(probes), len(hidings), len(uses)))]
    return [ProbeCase(f"{p.name}/{h}/{u}", p, h, u, probe_sketch(p, h, u)) for p, h, u in picked]


if __name__ == "__main__":
    all_cases = cases()
    print(f"{len(PROBES)} probes x {len(HIDINGS)} hidings x {len(USES)} uses = {len(all_cases)} sketches; "
          f"{len(one_per_pair())} rendered")
