"""What a run's processes decide together: two real processes over gloo, and one on its own."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.trainer import together
from training.trainer.launching import free_port


def _two_processes_decide(rank: int, port: int, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        asked = []
        decided = together.main_decides(lambda: asked.append(rank) or f"read by process {rank}")
        gathered = together.gather({"rank": rank, "share": [rank * 2, rank * 2 + 1]})
        together.wait_for_all()
        Path(out, f"{rank}.json").write_text(json.dumps({
            "asked": asked, "decided": decided, "gathered": gathered,
            "rank": together.rank(), "count": together.count(), "main": together.is_main(),
        }))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow  # starts two Python processes that import torch
def test_in_two_processes_only_the_main_one_decides_and_each_gets_every_share_in_rank_order(tmp_path):
    import torch.multiprocessing as mp

    mp.start_processes(_two_processes_decide, args=(free_port(), str(tmp_path)), nprocs=2, start_method="spawn")
    seen = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in (0, 1)]
    assert [s["asked"] for s in seen] == [[0], []]
    assert [s["decided"] for s in seen] == ["read by process 0"] * 2
    assert all(s["gathered"] == [{"rank": 0, "share": [0, 1]}, {"rank": 1, "share": [2, 3]}] for s in seen)
    assert [(s["rank"], s["count"], s["main"]) for s in seen] == [(0, 2, True), (1, 2, False)]


def test_a_single_process_decides_for_itself_without_torch_distributed():
    assert together.main_decides(lambda: 42) == 42
    assert together.gather("mine") == ["mine"]
    assert (together.rank(), together.count(), together.is_main()) == (0, 1, True)
    together.wait_for_all()
