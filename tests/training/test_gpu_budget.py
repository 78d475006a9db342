"""Launch refusals for a GPU run, with the arithmetic, from the workers' own descriptions (what
`paintapp_capabilities` answers on a GPU box; none exists here, so they are written out)."""
from __future__ import annotations

from pathlib import Path

import pytest

from paintenv.reward import PRESETS
from training import gpu_budget
from training.gpu_budget import BudgetRefused, check
from training.grpo.config import RunArguments

H200_MIB = 143_771  # nvidia-smi's memory.total of one H200
TRAINER = {"hostname": "train@gpu-box", "host": "gpu-box", "queues": ["train"], "gpus": ["GPU 0: NVIDIA H200"],
           "gpu_memory_mib": [H200_MIB]}
GPU_SCORER = {"hostname": "score@gpu-box", "host": "gpu-box", "queues": ["score"], "gpus": ["GPU 0: NVIDIA H200"],
              "gpu_memory_mib": [H200_MIB]}
JUDGE_LED = PRESETS["judge-led"]  # VLM judge + HPSv3


@pytest.fixture
def model_of(tmp_path):
    """model_of(gib) -> a model folder whose weights take `gib` GiB (a sparse file: no disk)."""
    def make(gib: float) -> str:
        folder = tmp_path / f"model-{gib}"
        folder.mkdir(exist_ok=True)
        (folder / "config.json").write_text("{}")
        with open(folder / "model.safetensors", "wb") as fh:
            fh.truncate(int(gib * gpu_budget.GIB))
        return str(folder)
    return make


def args(**changes) -> RunArguments:
    return RunArguments.from_dict(changes)


def test_vllm_server_on_the_trainers_only_gpu_is_refused_naming_nccl(model_of):
    with pytest.raises(BudgetRefused, match="NCCL refuses two ranks on one device"):
        check(args(generation="vllm-server"), JUDGE_LED, model_of(1), [TRAINER])


def test_vllm_server_on_a_gpu_the_run_does_not_use_or_another_machine_passes(model_of):
    two_gpus = {**TRAINER, "gpus": ["GPU 0: NVIDIA H200", "GPU 1: NVIDIA H200"], "gpu_memory_mib": [H200_MIB] * 2}
    check(args(generation="vllm-server", num_processes=1), JUDGE_LED, model_of(1), [two_gpus])
    with pytest.raises(BudgetRefused, match="trains on all"):
        check(args(generation="vllm-server", num_processes=0), JUDGE_LED, model_of(1), [two_gpus])
    check(args(generation="vllm-server", vllm_server_base_url="http://vllm-box:8002"), JUDGE_LED, model_of(1),
          [TRAINER])


def test_a_policy_vllm_and_hpsv3_that_overflow_the_gpu_are_refused_with_the_arithmetic(model_of):
    run = args(generation="vllm-colocate", vllm_gpu_memory_utilization=0.5)
    with pytest.raises(BudgetRefused) as refused:
        check(run, JUDGE_LED, model_of(65), [TRAINER, GPU_SCORER])
    message = str(refused.value)
    # 65 × 1.2 = 78.0; 0.5 × 140.4 = 70.2; + 17 = 165.2 GiB against 140.4 GiB
    assert "needs 165.2 GiB" in message and "policy 65.0 GiB of weights + 20%" in message
    assert "colocated vLLM 0.5 × 140.4 GiB = 70.2 GiB" in message and "HPSv3 17 GiB" in message
    assert "has 140.4 GiB (GPU 0: NVIDIA H200)" in message


def test_the_same_run_fits_with_a_smaller_vllm_share_or_hpsv3_elsewhere(model_of):
    check(args(generation="vllm-colocate", vllm_gpu_memory_utilization=0.3), JUDGE_LED, model_of(65), [TRAINER])
    check(args(generation="vllm-colocate", vllm_gpu_memory_utilization=0.3), JUDGE_LED, model_of(65),
          [TRAINER, {**GPU_SCORER, "host": "score-box"}])


def test_what_cannot_be_weighed_is_not_refused(model_of):
    check(args(generation="vllm-colocate"), JUDGE_LED, "Qwen/not-in-this-cache", [TRAINER])  # not fetched here
    check(args(generation="vllm-colocate"), JUDGE_LED, model_of(500), [{**TRAINER, "gpus": [], "gpu_memory_mib": []}])
    check(args(generation="vllm-colocate", accelerate_config="zero3.yaml"), JUDGE_LED, model_of(500), [TRAINER])


def test_one_train_worker_that_fits_is_enough(model_of):
    small = {**TRAINER, "hostname": "train@small", "host": "small", "gpu_memory_mib": [24_576]}
    check(args(), JUDGE_LED, model_of(30), [small, TRAINER])
    with pytest.raises(BudgetRefused, match="small.*; .*gpu-box|gpu-box.*; .*small"):
        check(args(), JUDGE_LED, model_of(130), [small, TRAINER])


def test_the_weights_are_read_from_a_folder_or_the_hub_cache(model_of, monkeypatch, tmp_path):
    assert gpu_budget.weights_bytes(model_of(2)) == 2 * gpu_budget.GIB
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    assert gpu_budget.weights_bytes("Qwen/Qwen3-0.6B") is None
    assert gpu_budget.weights_bytes(str(Path(tmp_path / "missing"))) is None


@pytest.mark.parametrize(("changes", "problem"), [
    ({"generation": "vllm-colocate", "vllm_max_model_length": 4096, "max_completion_length": 4096},
     "cannot hold 1 turn"),
    ({"generation": "vllm-server", "vllm_tensor_parallel_size": 2}, "vllm_tensor_parallel_size is for vllm-colocate"),
])
def test_vllm_lengths_and_parallelism_are_checked_with_the_run(changes, problem):
    with pytest.raises(ValueError, match=problem):
        RunArguments.from_dict(changes)


def test_vllm_gets_a_bounded_context_and_a_tensor_parallel_size_by_default():
    from trl import GRPOConfig

    shared = RunArguments().shared_with(GRPOConfig)
    assert shared["vllm_max_model_length"] == 20_480 and shared["vllm_tensor_parallel_size"] == 1


@pytest.mark.django_db
def test_a_launch_that_cannot_fit_is_refused_before_anything_is_queued(curator, settings, model_of, monkeypatch):
    from tests.curation.factories import make_pool
    from training import services
    from training.models import Run

    settings.LAUNCH_CHECKS_WORKERS = True
    monkeypatch.setattr(services, "live_workers", lambda: ("inspect", [TRAINER]))  # a GPU box, which is not here
    with pytest.raises(services.LaunchError, match=r"needs 1\d\d\.\d GiB on each training GPU"):
        services.run_launch(pool=make_pool(curator), recipe_name="studio-judge-led", base_model=model_of(100),
                            arguments={"generation": "vllm-colocate", "vllm_gpu_memory_utilization": 0.5})
    assert not Run.objects.exists()


# --- a preset's model not on this machine: its preset's figure (training/presets.py)

H100_MIB = 81_559  # nvidia-smi's memory.total of one H100 80GB
H100_TRAINER = {**TRAINER, "gpus": ["GPU 0: NVIDIA H100 80GB HBM3"], "gpu_memory_mib": [H100_MIB]}


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch):
    """A Hugging Face cache with nothing in it: no Hub model is on this machine."""
    from huggingface_hub import constants

    cache = tmp_path / "hub-cache"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


def cache_weights(cache: Path, repo_id: str, gib: float) -> None:
    """A snapshot of `repo_id` in the cache whose weights take `gib` GiB (sparse)."""
    folder = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = folder / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text("0" * 40)
    (snapshot / "config.json").write_text("{}")
    with open(snapshot / "model.safetensors", "wb") as fh:
        fh.truncate(int(gib * gpu_budget.GIB))


def test_the_published_model_not_yet_fetched_is_refused_on_an_80_gib_gpu_with_the_presets_figure(empty_hub_cache):
    with pytest.raises(BudgetRefused) as refused:
        check(args(), JUDGE_LED, "Qwen/Qwen3.5-35B-A3B", [H100_TRAINER])
    message = str(refused.value)
    # 143,771 MiB = 140.4 GiB (the H200 it was trained on) against 81,559 MiB = 79.6 GiB
    assert message.startswith("the run needs 140.4 GiB on each training GPU (policy 140.4 GiB, the qwen3.5-35b-a3b "
                              "preset's published figure as its weights are not on this machine: trained on one H200 "
                              "(141 GB) in the reference write-up")
    assert "35B × 2 bytes = 65.2 GiB (arithmetic from the published parameter count)" in message
    assert "the train worker on gpu-box has 79.6 GiB (GPU 0: NVIDIA H100 80GB HBM3)" in message
    assert "manage.py fetch_model qwen3.5-35b-a3b" in message


def test_the_published_model_fits_the_gpu_it_was_published_on(empty_hub_cache):
    check(args(), JUDGE_LED, "Qwen/Qwen3.5-35B-A3B", [TRAINER])
    with pytest.raises(BudgetRefused, match=r"needs 182\.5 GiB .*published figure.* \+ colocated vLLM 0\.3 × 140\.4 GiB"):
        check(args(generation="vllm-colocate"), JUDGE_LED, "Qwen/Qwen3.5-35B-A3B", [TRAINER])


def test_the_small_model_is_refused_on_a_small_gpu_with_its_estimate(empty_hub_cache):
    eight_gib = {**TRAINER, "gpus": ["GPU 0: NVIDIA GeForce RTX 3070"], "gpu_memory_mib": [8_192]}
    with pytest.raises(BudgetRefused) as refused:
        check(args(), JUDGE_LED, "Qwen/Qwen3-4B", [eight_gib])
    message = str(refused.value)
    assert "needs 9.0 GiB on each training GPU (policy 9.0 GiB, the qwen3-4b preset's estimated figure" in message
    assert "4.02B parameters (published) × 2 bytes (bf16) = 7.5 GiB of weights + 20%" in message
    assert "has 8.0 GiB (GPU 0: NVIDIA GeForce RTX 3070)" in message
    check(args(), JUDGE_LED, "Qwen/Qwen3-4B", [H100_TRAINER])


def test_weights_on_this_machine_are_weighed_before_any_presets_figure(empty_hub_cache):
    cache_weights(empty_hub_cache, "Qwen/Qwen3-4B", 30)  # not what Qwen3-4B weighs: the budget reads the disk
    small = {**TRAINER, "gpu_memory_mib": [24_576]}
    with pytest.raises(BudgetRefused) as refused:
        check(args(), JUDGE_LED, "Qwen/Qwen3-4B", [small])
    assert "needs 36.0 GiB on each training GPU (policy 30.0 GiB of weights + 20%)" in str(refused.value)
    assert "preset" not in str(refused.value)


def test_a_tiny_preset_not_built_here_counts_its_measured_figure(settings, tmp_path):
    from training.presets import preset_named

    settings.MODELS_DIR = tmp_path / "models"
    tiny = preset_named("tiny-painter")
    little = {**TRAINER, "gpus": ["GPU 0: a tiny GPU"], "gpu_memory_mib": [128]}
    with pytest.raises(BudgetRefused) as refused:
        check(args(), JUDGE_LED, tiny.model, [little])
    message = str(refused.value)
    assert f"policy {tiny.train_memory_gib:.1f} GiB, the tiny-painter preset's measured figure" in message
    assert "measured on CPU (peak RSS of a training step, 2-core box)" in message
    assert "manage.py build_tiny_model" in message


@pytest.mark.django_db
def test_a_launch_of_the_published_model_on_an_80_gib_gpu_is_refused_before_anything_is_queued(
        curator, settings, empty_hub_cache, monkeypatch):
    from tests.curation.factories import make_pool
    from training import services
    from training.models import Run

    settings.LAUNCH_CHECKS_WORKERS = True
    monkeypatch.setattr(services, "live_workers", lambda: ("inspect", [H100_TRAINER]))
    with pytest.raises(services.LaunchError, match=r"needs 140\.4 GiB on each training GPU .*published figure.*has 79\.6 GiB"):
        services.run_launch(pool=make_pool(curator), recipe_name="studio-judge-led", base_model="Qwen/Qwen3.5-35B-A3B",
                            arguments={})
    assert not Run.objects.exists()
