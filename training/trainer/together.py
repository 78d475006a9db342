"""What the processes of a multi-process run decide together (accelerate launch, torch.distributed).

Every process of a run makes the same calls in the same order (TRL's GRPOTrainer and the
Trainer's callbacks run on each): a decision that only one of them may take, because it reads
the database (the stop flag, whether the run is still its task's) or the workers (a reward),
is taken by the main process and handed to the others, so none of them goes another way and
leaves the rest waiting in a collective. In a single process each of these is plain Python.
No Django here.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _distributed():
    """torch.distributed when this process is one of several, else None."""
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1 else None


def rank() -> int:
    dist = _distributed()
    return dist.get_rank() if dist else 0


def count() -> int:
    dist = _distributed()
    return dist.get_world_size() if dist else 1


def is_main() -> bool:
    return rank() == 0


def main_decides(decide: Callable[[], T]) -> T:
    """`decide()` in the main process, its result in every process (the others do not call it)."""
    dist = _distributed()
    if dist is None:
        return decide()
    box = [decide() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gather(value: Any) -> list[Any]:
    """Every process's `value`, in rank order, in every process."""
    dist = _distributed()
    if dist is None:
        return [value]
    values: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    return values


def wait_for_all() -> None:
    """Return once every process has got here."""
    dist = _distributed()
    if dist is not None:
        dist.barrier()
