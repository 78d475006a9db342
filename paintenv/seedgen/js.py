"""The seed sketches' JavaScript, read from the .js files in js/ beside this module.

A file is a list of sections: a `//@ name` line opens one, which runs to the next (blank
lines round it dropped); lines before the first section are the file's own notes. `$name`
in a section marks a value the generator fills in (`string.Template`), and `$name` is a
valid JS identifier, so a section with placeholders still reads as JavaScript.
"""
from __future__ import annotations

import functools
from pathlib import Path
from string import Template

JS_DIR = Path(__file__).resolve().parent / "js"
_SECTION_MARK = "//@ "


@functools.cache
def sections(file: str) -> dict[str, Template]:
    """The sections of js/`file`, by name, in the file's order (read once)."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in (JS_DIR / file).read_text(encoding="utf-8").split("\n"):
        if line.startswith(_SECTION_MARK):
            name = line[len(_SECTION_MARK):].strip()
            if name in found:
                raise ValueError(f"js/{file}: section {name!r} appears twice")
            current = found[name] = []
        elif current is not None:
            current.append(line)
    return {name: Template("\n".join(lines).strip("\n")) for name, lines in found.items()}


def fill(file: str, section: str, **values: object) -> str:
    """Section `section` of js/`file` with its placeholders filled: exactly the values it names."""
    try:
        template = sections(file)[section]
    except KeyError:
        raise KeyError(f"js/{file} has no section {section!r}") from None
    wanted = set(template.get_identifiers())
    if wanted != set(values):
        raise ValueError(f"js/{file} section {section!r} takes {sorted(wanted)}, got {sorted(values)}")
    return template.substitute({name: str(value) for name, value in values.items()})
