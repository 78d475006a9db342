"""Progress bars for the management commands, on stderr so stdout stays a clean report."""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tqdm import tqdm


@contextmanager
def progress_bar(
    desc: str, unit: str, *, show_name: bool = False, unit_scale: bool = False
) -> Iterator[Callable[..., None]]:
    """Yield the `progress(done, total, name)` callback that the services take, drawing a bar;
    `unit_scale` shows counts as 1.2k / 3.4M (with unit "B": KB, MB, GB in steps of 1024)."""
    with tqdm(desc=desc, unit=unit, unit_scale=unit_scale, unit_divisor=1024, file=sys.stderr, disable=None,
              leave=False) as bar:
        def progress(done: int, total: int, name: str = "") -> None:
            bar.total = total
            bar.update(done - bar.n)
            if show_name:
                bar.set_postfix_str(name[-40:], refresh=False)

        yield progress
