"""Import structure beyond import-linter's contracts: no package imports itself in a circle
(a module that imports one that imports it back, however far round, even inside a function)."""
from __future__ import annotations

import grimp
import pytest

PACKAGES = ["paintenv", "paintapp", "painting", "curation", "training", "serving", "system", "demo"]


def circles(package: str) -> list[tuple[str, str]]:
    """Each pair (a, b) of the package where a imports b and b leads back to a."""
    graph = grimp.build_graph(package)
    found = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.split(".")[0] == package and graph.find_shortest_chain(importer=imported, imported=module):
                found.add(tuple(sorted((module, imported))))
    return sorted(found)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_package_imports_itself_in_a_circle(package):
    assert circles(package) == []


def test_the_circle_check_finds_a_circle(tmp_path, monkeypatch):
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop" / "__init__.py").write_text("")
    (tmp_path / "loop" / "a.py").write_text("from loop import b\n")
    (tmp_path / "loop" / "b.py").write_text("def f():\n    from loop import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert circles("loop") == [("loop.a", "loop.b")]


def folder_pairs(package: str) -> list[tuple[str, str]]:
    """Each pair of the package's sub-folders (packages) where each imports the other."""
    graph = grimp.build_graph(package)
    folders = {m for m in graph.modules if m != package and graph.find_children(m)}

    def folder(module: str) -> str | None:
        return max((f for f in folders if module == f or module.startswith(f + ".")), key=len, default=None)

    edges = {(folder(m), folder(i)) for m in graph.modules for i in graph.find_modules_directly_imported_by(m)
             if i.split(".")[0] == package}
    return sorted({tuple(sorted(e)) for e in edges if None not in e and e[0] != e[1] and e[::-1] in edges})


def test_no_two_folders_of_training_import_each_other():
    assert folder_pairs("training") == []
