"""Generation `auto`: the launch form shows what the last runs measured on each train worker's box,
and a run launched for a GPU box takes the fastest backend measured there for its model whose
memory fits (else vLLM colocated where installed, else the compiled decode step); a run launched
where no GPU worker answers is resolved by the trainer on the box that trains it."""
from __future__ import annotations

import pytest

from tests.curation.factories import make_pool
from tests.training.factories import make_measured_run as measured_run
from training import generation_speeds, services
from training.arguments import RunArguments
from training.models import Run

pytestmark = pytest.mark.django_db

H100 = {"hostname": "train@gpu-box", "host": "gpu-box", "queues": ["train"], "gpus": ["GPU 0: NVIDIA H100 80GB HBM3"],
        "gpu_memory_mib": [81_559], "cuda_build": True, "vllm": ""}
QWEN3_4B = "Qwen/Qwen3-4B"


@pytest.fixture
def pool(curator):
    return make_pool(curator)


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))


def test_each_box_models_and_backends_speed_is_the_median_of_its_runs_steps_after_the_first(pool):
    first = measured_run(pool, host="gpu-box", base_model=QWEN3_4B, generation="compiled", rates=[40, 2800, 3000, 2900])
    second = measured_run(pool, host="gpu-box", base_model=QWEN3_4B, generation="compiled", rates=[35, 3100, 3100])
    measured_run(pool, host="gpu-box", base_model=QWEN3_4B, generation="generate", rates=[60, 150, 148])
    measured_run(pool, host="other-box", base_model=QWEN3_4B, generation="generate", rates=[999])  # one step: itself
    measured_run(pool, host="gpu-box", base_model="Qwen/Qwen3.5-35B-A3B", generation="vllm-colocate", rates=[5, 900])

    speeds = generation_speeds.generation_speeds()
    table = [(s.host, s.base_model, s.backend, s.tokens_per_s, s.runs) for s in speeds]
    assert table == [
        ("gpu-box", "Qwen/Qwen3-4B", "compiled", 3000.0, (second.id, first.id)),  # medians 2900 and 3100
        ("gpu-box", "Qwen/Qwen3-4B", "generate", 149.0, (table[1][4][0],)),
        ("gpu-box", "Qwen/Qwen3.5-35B-A3B", "vllm-colocate", 900.0, (table[2][4][0],)),
        ("other-box", "Qwen/Qwen3-4B", "generate", 999.0, (table[3][4][0],)),
    ]
    assert generation_speeds.measured_generation(host="gpu-box", base_model=QWEN3_4B) == {"compiled": 3000.0, "generate": 149.0}


def test_the_launch_form_shows_the_measured_speeds_with_links_to_their_runs(signed_in, pool):
    run = measured_run(pool, host="gpu-box", base_model=QWEN3_4B, generation="compiled", rates=[40, 2950])
    page = signed_in.get("/runs/new/").content.decode()
    assert "Generation measured on the train workers" in page
    assert "<td>gpu-box</td>" in page and "<td>compiled</td>" in page and '<td class="num">2,950</td>' in page
    assert f'href="/runs/{run.id}/">#{run.id}</a>' in page


def test_the_launch_form_says_what_auto_does_before_anything_was_measured(signed_in):
    page = signed_in.get("/runs/new/").content.decode()
    assert "No run has measured its generation yet" in page


def launch(pool, monkeypatch, settings, workers, **arguments) -> Run:
    settings.LAUNCH_CHECKS_WORKERS = True
    monkeypatch.setattr(services, "live_workers", lambda: ("inspect", workers))
    monkeypatch.setattr(services, "_check_workers", lambda recipe: None)  # the render and score workers: not here
    monkeypatch.setattr(services, "_check_parts", lambda recipe, pool: None)
    return services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=QWEN3_4B, arguments=arguments)


def test_auto_on_a_gpu_box_takes_the_fastest_backend_measured_there_for_the_model(pool, monkeypatch, settings,
                                                                                  empty_hub_cache):
    measured_run(pool, host="gpu-box", base_model=QWEN3_4B, generation="continuous-batching", rates=[10, 1800])
    measured_run(pool, host="gpu-box", base_model=QWEN3_4B, generation="generate", rates=[10, 150])
    measured_run(pool, host="other-box", base_model=QWEN3_4B, generation="generate", rates=[10, 9000])  # another box
    run = launch(pool, monkeypatch, settings, [H100])
    assert run.hyperparameters["generation"] == "continuous-batching"


def test_auto_on_a_gpu_box_with_nothing_measured_takes_vllm_where_it_fits_else_the_compiled_step(
        pool, monkeypatch, settings, empty_hub_cache):
    assert launch(pool, monkeypatch, settings, [H100]).hyperparameters["generation"] == "compiled"
    with_vllm = {**H100, "vllm": "0.30.0"}
    assert launch(pool, monkeypatch, settings, [with_vllm]).hyperparameters["generation"] == "vllm-colocate"
    # The 35B policy on an 80 GB card: vLLM's 0.3 share does not fit beside it (93.8 GiB), its own generation does.
    monkeypatch.setattr(services, "live_workers", lambda: ("inspect", [with_vllm]))
    big = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model="Qwen/Qwen3.5-35B-A3B",
                              arguments={})
    assert big.hyperparameters["generation"] == "compiled"


def test_a_backend_named_at_launch_is_kept(pool, monkeypatch, settings, empty_hub_cache):
    assert launch(pool, monkeypatch, settings, [H100], generation="generate").hyperparameters["generation"] == "generate"


@pytest.mark.django_db(transaction=True)  # the trainer's reads outlast restarts: they close stale connections
def test_without_a_gpu_worker_the_trainer_resolves_auto_on_its_own_box_and_records_it(pool, monkeypatch, settings,
                                                                                      tiny_model, no_worker):
    from training.trainer.auto_generation import resolved_generation

    settings.LAUNCH_CHECKS_WORKERS = False
    run = services.run_launch(pool=pool, recipe_name="studio-judge-led", base_model=tiny_model, arguments={})
    assert run.hyperparameters["generation"] == "auto"
    args = resolved_generation(run, run.arguments)
    assert args.generation == "generate"  # this box has no GPU
    run.refresh_from_db()
    assert run.hyperparameters["generation"] == "generate" and run.arguments == RunArguments.from_dict(
        {**run.hyperparameters})
