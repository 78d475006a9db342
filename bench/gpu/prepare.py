"""Prepare the GPU bench on a machine with PyPI, for a GPU machine without internet.

    .venv/bin/python bench/gpu/prepare.py --dry-run     # what it would fetch and copy
    .venv/bin/python bench/gpu/prepare.py               # var/gpu-bench/: wheels/, tiny-painter/, manifest.json

It fetches, as wheels for the GPU machine's Python (default CPython 3.12 on manylinux x86_64, what
the lent H200s run), every package the trainer imports beyond what a CUDA torch image already
holds: TRL, transformers, PEFT, accelerate, datasets and their dependencies, at the versions
installed here (this project's pins). Left out: torch and its CUDA runtime, and the heavy
binaries every such image has (numpy, pandas, pyarrow; `--with` adds any back). It copies the
tests' tiny painter (built here by the tests, or `--painter PATH`). The folder is git-ignored and
travels with the repository to the GPU box (the device tool's `carry`, or any copy), where
bench/gpu/run.py installs the wheels into a folder of its own; 64 MiB is the device tool's limit
for a working tree and what it carries, so it says when the bundle is larger.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "var" / "gpu-bench"
ROOTS = ("trl", "transformers", "peft", "accelerate", "datasets")
# What a CUDA torch image has already (torch's own dependencies, its CUDA runtime, the heavy
# binaries): carrying them would replace the box's builds of them, or not fit.
ON_A_TORCH_IMAGE = {"torch", "triton", "numpy", "pandas", "pyarrow", "sympy", "mpmath", "networkx", "setuptools"}
ON_A_TORCH_IMAGE_PREFIXES = ("nvidia-", "cuda-")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")
CARRY_LIMIT_MIB = 64
PAINTER_FILES = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                 "special_tokens_map.json", "chat_template.jinja", "paintapp.json")


def canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def closure(roots: tuple[str, ...] = ROOTS, *, keep: set[str] = frozenset()) -> dict[str, str]:
    """Every distribution the roots need (their Requires-Dist without extras, as installed here),
    name -> version, less what a torch image holds (unless kept)."""
    found: dict[str, str] = {}

    def walk(name: str) -> None:
        key = canonical(name)
        if key in found:
            return
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            return
        found[key] = distribution.version.split("+")[0]
        for line in distribution.requires or []:
            requirement = Requirement(line)
            if requirement.marker and not requirement.marker.evaluate({"extra": "", "python_version": "3.12"}):
                continue
            walk(requirement.name)

    for root in roots:
        walk(root)
    return {name: version for name, version in sorted(found.items())
            if name in keep or not (name in ON_A_TORCH_IMAGE or name.startswith(ON_A_TORCH_IMAGE_PREFIXES))}


def painter_source(given: str | None) -> Path | None:
    """The tests' tiny painter: --painter, else the tests' build, else the demo's."""
    candidates = [Path(given)] if given else [REPO / "models" / "tiny-painter-tests", REPO / "models" / "tiny-painter"]
    return next((c for c in candidates if (c / "config.json").exists() and (c / "model.safetensors").exists()), None)


def download(packages: dict[str, str], out: Path, python_version: str) -> list[Path]:
    from tqdm import tqdm

    out.mkdir(parents=True, exist_ok=True)
    platforms = [argument for platform in PLATFORMS for argument in ("--platform", platform)]
    for name, version in tqdm(packages.items(), desc="wheels", unit="wheel"):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--disable-pip-version-check", "--python-version", python_version, "--implementation", "cp",
                        *platforms, "-d", str(out), f"{name}=={version}"], check=True)
    return sorted(out.glob("*.whl"))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(BUNDLE))
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (major.minor)")
    parser.add_argument("--painter", help="the tiny painter's folder (default: the tests' build under models/)")
    parser.add_argument("--with", dest="keep", action="append", default=[], help="carry one the torch image has too")
    parser.add_argument("--dry-run", action="store_true", help="say what would be fetched and copied, and stop")
    options = parser.parse_args()
    out = Path(options.out)
    packages = closure(keep={canonical(k) for k in options.keep})
    painter = painter_source(options.painter)
    print(f"{len(packages)} packages for CPython {options.python_version} on manylinux x86_64 "
          f"(the trainer's imports beyond a CUDA torch image):")
    print("  " + ", ".join(f"{name}=={version}" for name, version in packages.items()))
    print(f"tiny painter: {painter or 'not built here: run the tests once, or build it: .venv/bin/python -m tests.support.painter models/tiny-painter-tests'}")
    print(f"into: {out}")
    if options.dry_run:
        return
    started = time.monotonic()
    shutil.rmtree(out / "wheels", ignore_errors=True)
    wheels = download(packages, out / "wheels", options.python_version)
    if painter is not None:
        target = out / "tiny-painter"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name in PAINTER_FILES:
            if (painter / name).exists():
                shutil.copy2(painter / name, target / name)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    manifest = {"python_version": options.python_version, "platforms": list(PLATFORMS), "commit": commit,
                "packages": packages, "painter": str(painter) if painter else None,
                "wheels": [{"file": w.name, "bytes": w.stat().st_size, "sha256": sha256(w)} for w in wheels]}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 1024**2
    print(f"{len(wheels)} wheels and {'the tiny painter' if painter else 'no painter'} in {out}: {total:.1f} MiB, "
          f"{time.monotonic() - started:.0f} s")
    if total > CARRY_LIMIT_MIB - 8:
        print(f"warning: {total:.0f} MiB leaves little of the device tool's {CARRY_LIMIT_MIB} MiB for the repository")


if __name__ == "__main__":
    main()
