"""The templates stay readable HTML: one element or attribute group a line, none over 160 characters.

Where a run of text must stay one string in the rendered page (a test matches it, or a regular
expression reads it without re.S), a line ends in `{% comment "continued" %}` and the next one
opens with `{% endcomment %}`: Django renders nothing between them, so the page reads as before.

Plain file reads: no database, broker or browser, so these run anywhere (and in `make test-fast`).
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
MAX_LINE_CHARS = 160
CONTINUED = re.compile(r'\{% comment "continued" %\}\n[ \t]*\{% endcomment %\}')


def long_lines(text: str) -> list[int]:
    return [number for number, line in enumerate(text.splitlines(), 1) if len(line) > MAX_LINE_CHARS]


def in_templates(lines_of) -> dict[str, list[int]]:
    """{template path: the line numbers `lines_of` finds in it}, for the templates where it finds any."""
    return {
        path.relative_to(ROOT).as_posix(): lines
        for path in sorted(TEMPLATES.rglob("*.html"))
        if (lines := lines_of(path.read_text(encoding="utf-8")))
    }


def test_the_template_walk_finds_the_templates():
    # A walk that silently found nothing would make the length check pass vacuously.
    names = {path.relative_to(TEMPLATES).as_posix() for path in TEMPLATES.rglob("*.html")}
    assert {"base.html", "training/run.html", "training/rollout.html", "curation/pool.html"} <= names


def test_no_template_line_is_longer_than_160_characters():
    found = in_templates(long_lines)
    assert not found, f"template lines over {MAX_LINE_CHARS} characters (file: line numbers): {found}"


def test_the_length_check_counts_characters_not_bytes():
    assert long_lines("é" * MAX_LINE_CHARS + "\n" + "x" * (MAX_LINE_CHARS + 1)) == [2]


def test_a_continued_line_renders_as_one():
    from django.template import Context, Template

    source = 'a <b>{{ n }}</b>{% comment "continued" %}\n      {% endcomment %} (<code>x</code>)'
    assert CONTINUED.search(source)
    assert Template(source).render(Context({"n": 0})) == "a <b>0</b> (<code>x</code>)"


def unclosed_comments(text: str) -> list[int]:
    """Lines that open a `{# … #}` comment without closing it: Django's short comments end at the
    line's end, so the rest is printed on the page as text."""
    return [number for number, line in enumerate(text.splitlines(), 1) if re.search(r"\{#(?!.*#\})", line)]


def test_no_short_comment_spans_lines():
    found = in_templates(unclosed_comments)
    assert not found, f"{{# … #}} comments over more than one line (use {{% comment %}}): {found}"
    assert unclosed_comments("{# one line #}\n{# two\nlines #}") == [2]
