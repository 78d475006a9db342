"""Length padding: a baseline sketch's exact painting with code added (or rewritten) that
paints nothing new, as a cross product: every padding kind × every baseline × every size.

The kinds are the ones a hidden attack corpus took a sketch's length score from 0.117 to
1.0 with: functions never called, an unread number table, hundreds of no-op brush calls,
a string array nothing reads, dead branches (`if (false)` and a condition never true at
run time) and hand-unrolled loops. Padding sizes are in characters of code; the largest is
past the old rule's full marks (3,000 tokens ≈ 12,000 characters) on its own.

    .venv/bin/python -m tests.paintenv.adversarial.length_padding   # the corpus's size
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from paintenv import seedgen
from paintenv.js_syntax import parse_js

KINDS = ("dead_functions", "number_table", "noop_brush_calls", "string_array", "dead_branch",
         "unrolled_loops")
SIZES = (3_000, 12_000, 24_000)
GOOD_DIR = Path(__file__).resolve().parents[1] / "corpus" / "good"
# Baselines without draw(): a state change after setup's last mark paints nothing.
BASELINES: dict[str, str] = {
    "good/rose": (GOOD_DIR / "rose.js").read_text(),
    "good/poppy": (GOOD_DIR / "poppy.js").read_text(),
    "good/hibiscus": (GOOD_DIR / "hibiscus.js").read_text(),
    "seedgen/11": seedgen.generate(11).code,
    "seedgen/77": seedgen.generate(77).code,
}
_WORDS = ("petal", "wash", "bloom", "stem", "leaf", "bleed", "grain", "rim", "paper", "soft", "edge",
          "glaze", "layer", "shadow", "light", "pigment", "dry", "wet", "blush", "sepal")


@dataclass(frozen=True)
class Padded:
    name: str  # kind/baseline/size
    kind: str
    baseline: str
    size: int
    code: str


def corpus(kinds: tuple[str, ...] = KINDS, baselines: dict[str, str] | None = None,
           sizes: tuple[int, ...] = SIZES) -> list[Padded]:
    out = []
    for kind in kinds:
        for base_name, base in (baselines or BASELINES).items():
            for size in sizes:
                rng = random.Random(f"{kind}:{base_name}:{size}")
                out.append(Padded(f"{kind}/{base_name}/{size}", kind, base_name, size,
                                  pad(base, kind, size, rng)))
    return out


def pad(code: str, kind: str, size: int, rng: random.Random) -> str:
    if kind == "unrolled_loops":
        return unrolled(code, passes=1 + SIZES.index(size) if size in SIZES else 1)
    if kind in ("noop_brush_calls", "dead_branch"):
        return _in_setup(code, _filler(kind, size, rng))
    return code.rstrip() + "\n\n" + _filler(kind, size, rng) + "\n"


def _filler(kind: str, size: int, rng: random.Random) -> str:
    parts: list[str] = []
    total = 0
    n = 0
    while total < size:
        piece = _PIECES[kind](rng, n)
        parts.append(piece)
        total += len(piece)
        n += 1
    return "\n".join(parts)


def _colour(rng: random.Random) -> str:
    return "#" + "".join(rng.choice("0123456789abcdef") for _ in range(6))


def _num(rng: random.Random) -> str:
    return str(round(rng.uniform(-300, 600), rng.choice((0, 1, 2, 3))))


def _brush_line(rng: random.Random, x: str = "x", y: str = "y") -> str:
    return rng.choice((
        f'  brush.fill("{_colour(rng)}", {rng.randint(20, 240)});',
        f"  brush.fillBleed({rng.random():.2f});",
        f"  brush.fillTexture({rng.random():.2f}, {rng.random():.2f});",
        f"  brush.circle({x} + {_num(rng)}, {y} - {_num(rng)}, {rng.randint(4, 90)}, {rng.random():.2f});",
        f"  brush.vertex({x} * {rng.random():.2f}, {y} + {_num(rng)});",
        f"  const k{rng.randint(0, 999)} = {x} * {rng.random():.3f} + sin({y} * {rng.random():.3f});",
    ))


def _dead_function(rng: random.Random, n: int) -> str:
    name = rng.choice(_WORDS) + rng.choice(_WORDS).title() + str(n)
    lines = [f"function {name}(x, y, r) {{", "  brush.beginShape(0.5);"]
    lines += [_brush_line(rng) for _ in range(rng.randint(3, 9))]
    lines += ["  brush.endShape(true);", f"  return r * {rng.random():.3f};", "}"]
    return "\n".join(lines)


def _number_table(rng: random.Random, n: int) -> str:
    values = ", ".join(_num(rng) for _ in range(40))
    return f"const {rng.choice(_WORDS).upper()}_TABLE_{n} = [{values}];"


def _string_array(rng: random.Random, n: int) -> str:
    words = ", ".join(f'"{rng.choice(_WORDS)} {rng.choice(_WORDS)} {rng.choice(_WORDS)}"' for _ in range(12))
    return f"const {rng.choice(_WORDS).upper()}_NOTES_{n} = [{words}];"


def _noop_call(rng: random.Random, n: int) -> str:
    # State set after the last mark of a sketch without draw(): nothing is painted with it.
    style = n % 3
    if style == 0:
        return "  brush.noStroke();"
    return rng.choice((
        "  brush.noStroke();",
        "  brush.noFill();",
        f'  brush.fill("{_colour(rng)}", {rng.randint(0, 255)});',
        f"  brush.fillBleed({rng.random():.3f});",
        f"  brush.fillTexture({rng.random():.3f}, {rng.random():.3f});",
    ))


def _dead_branch(rng: random.Random, n: int) -> str:
    # never true while it runs (random() would be, but it would move the random stream)
    condition = rng.choice(("false", "width < 0", "height > 1e9", f"{n} > {n + 1}", "abs(sin(frameCount)) > 2"))
    body = [_brush_line(rng, "width / 2", "height / 2") for _ in range(rng.randint(3, 8))]
    return "\n".join([f"  if ({condition}) {{", "  brush.beginShape(0.4);", *body, "  brush.endShape(true);",
                      "  }"])


_PIECES = {"dead_functions": _dead_function, "number_table": _number_table, "string_array": _string_array,
           "noop_brush_calls": _noop_call, "dead_branch": _dead_branch}


def _in_setup(code: str, filler: str) -> str:
    """`filler` as the last statements of setup()."""
    data = code.encode()
    for node in parse_js(data).named_children:
        name = node.child_by_field_name("name")
        if node.type == "function_declaration" and name is not None and name.text == b"setup":
            body = node.child_by_field_name("body")
            assert body is not None
            close = body.end_byte - 1
            return (data[:close].decode() + "\n" + filler + "\n" + data[close:].decode())
    raise ValueError("no setup() to pad")


# ---------------------------------------------------------------------------- unrolling
def unrolled(code: str, passes: int = 1) -> str:
    """Every counted loop with known bounds (`for (let i = A; i < B; i++)`, <=, >, >=, or
    `i < NAME.length` of a top-level array literal) written out iteration by iteration, each
    a block with the counter replaced by its value; `passes` times (inner loops copied by
    the first pass are unrolled by the next)."""
    for _ in range(passes):
        code = _unroll_once(code)
    return code


def _unroll_once(code: str) -> str:
    data = code.encode()
    root = parse_js(data)
    lengths = _array_lengths(root)
    edits: list[tuple[int, int, str]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "for_statement":
            text = _unroll_loop(node, data, lengths)
            if text is not None:
                edits.append((node.start_byte, node.end_byte, text))
                continue  # inner loops: the next pass
        stack.extend(node.named_children)
    for start, end, text in sorted(edits, reverse=True):
        data = data[:start] + text.encode() + data[end:]
    return data.decode()


def _array_lengths(root) -> dict[str, float]:
    """Constants a loop's bound may name: `const N = 5` (anywhere) and a top-level array's
    length (`const A = [...]`, read as `A.length`)."""
    out: dict[str, float] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "lexical_declaration" and node.children[0].type == "const":
            for decl in node.named_children:
                name, value = decl.child_by_field_name("name"), decl.child_by_field_name("value")
                if name is None or value is None:
                    continue
                if value.type == "array" and node.parent is not None and node.parent.type == "program":
                    out[name.text.decode()] = value.named_child_count
                elif value.type == "number":
                    out.setdefault(name.text.decode(), float(value.text))
        stack.extend(node.named_children)
    return out


def _unroll_loop(node, data: bytes, lengths: dict[str, float]) -> str | None:
    init, cond, inc, body = (node.child_by_field_name(f) for f in ("initializer", "condition", "increment", "body"))
    if init is None or cond is None or inc is None or body is None or body.type != "statement_block":
        return None
    decls = [c for c in init.named_children if c.type == "variable_declarator"]
    if init.type != "lexical_declaration" or len(decls) != 1:
        return None
    var, start = decls[0].child_by_field_name("name"), decls[0].child_by_field_name("value")
    if var is None or start is None or start.type != "number":
        return None
    name = var.text.decode()
    if cond.type == "expression_statement":
        cond = cond.named_children[0]
    if cond.type != "binary_expression" or cond.child_by_field_name("left").text.decode() != name:
        return None
    op = cond.child_by_field_name("operator").type
    right = cond.child_by_field_name("right")
    if right.type == "number":
        bound = float(right.text)
    elif right.type == "identifier" and right.text.decode() in lengths:
        bound = lengths[right.text.decode()]
    elif right.type == "member_expression" and right.text.decode().endswith(".length") \
            and right.child_by_field_name("object").text.decode() in lengths:
        bound = lengths[right.child_by_field_name("object").text.decode()]
    else:
        return None
    step = {f"{name}++": 1, f"++{name}": 1, f"{name}--": -1, f"--{name}": -1}.get(inc.text.decode().replace(" ", ""))
    if step is None:
        return None
    body_text = body.text.decode()
    changes = rf"\b(break|continue|return)\b|\b{name}\s*(=(?!=)|\+\+|--|\+=|-=)|\b(let|const|var)\s+{name}\b"
    if re.search(changes, body_text):
        return None
    value, values = int(float(start.text)), []
    test = {"<": lambda v: v < bound, "<=": lambda v: v <= bound, ">": lambda v: v > bound,
            ">=": lambda v: v >= bound}.get(op)
    if test is None:
        return None
    while test(value) and len(values) < 200:
        values.append(value)
        value += step
    if not values or len(values) >= 200:
        return None
    idents = []
    stack = [body]
    while stack:
        cur = stack.pop()
        if cur.type == "identifier" and cur.text.decode() == name:
            idents.append((cur.start_byte - body.start_byte, cur.end_byte - body.start_byte))
        stack.extend(cur.children)
    raw = data[body.start_byte:body.end_byte]
    blocks = []
    for v in values:
        text = raw
        for a, b in sorted(idents, reverse=True):
            text = text[:a] + (f"({v})" if v < 0 else str(v)).encode() + text[b:]
        blocks.append(text.decode())
    return "{\n" + "\n".join(blocks) + "\n}"  # one statement still, wherever the loop stood


if __name__ == "__main__":
    from paintenv.length import code_chars

    for case in corpus():
        print(f"{case.name:45s} {code_chars(case.code) // 4:6d} tokens (old rule)")
