"""Launch refusals for a GPU run, with the arithmetic, from the workers' own descriptions (what
`paintapp_capabilities` answers on a GPU box; none exists here, so they are written out)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from paintenv.reward import PRESETS
from training import gpu_budget
from training.arguments import RunArguments
from training.gpu_budget import BudgetRefused, check
from training.presets import QWEN3_4B_CONFIG

H200_MIB = 143_771  # nvidia-smi's memory.total of one H200
TRAINER = {"hostname": "train@gpu-box", "host": "gpu-box", "queues": ["train"], "gpus": ["GPU 0: NVIDIA H200"],
           "gpu_memory_mib": [H200_MIB]}
GPU_SCORER = {"hostname": "score@gpu-box", "host": "gpu-box", "queues": ["score"], "gpus": ["GPU 0: NVIDIA H200"],
              "gpu_memory_mib": [H200_MIB]}
JUDGE_LED = PRESETS["judge-led"]  # VLM judge + HPSv3


@pytest.fixture
def model_of(tmp_path):
    """model_of(gib, config) -> a model folder whose weights take `gib` GiB (a sparse file with no
    readable header: no disk; its size over 2 bytes counts the parameters) and whose config.json
    is `config` (none: no sizes)."""
    def make(gib: float, config: dict | None = None) -> str:
        folder = tmp_path / f"model-{gib}-{len(config or {})}"
        folder.mkdir(exist_ok=True)
        (folder / "config.json").write_text(json.dumps(config or {}))
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


def test_a_policy_vllm_and_hpsv3_that_overflow_the_gpu_are_refused_with_every_term(model_of):
    run = args(generation="vllm-colocate", vllm_gpu_memory_utilization=0.5)
    with pytest.raises(BudgetRefused) as refused:
        check(run, JUDGE_LED, model_of(65), [TRAINER, GPU_SCORER])
    message = str(refused.value)
    # A config with no sizes: 65 GiB of weights, the CUDA context, vLLM's half of 140.4 GiB and HPSv3's 17 GiB.
    assert "needs 153.2 GiB" in message and "weights 65.0 GiB (34.90B parameters × 2 bytes (bf16))" in message
    assert "colocated vLLM 70.2 GiB (0.5 × 140.4 GiB: its weights and KV cache)" in message and "HPSv3 17.0 GiB" in message
    assert "activations and KV cache 0.0 GiB (not counted: the model's config gives no sizes)" in message
    assert "has 140.4 GiB (GPU 0: NVIDIA H200)" in message


def test_a_model_here_is_weighed_by_its_config_and_its_kv_cache_grows_with_the_completion(model_of):
    four_b = model_of(7.49, QWEN3_4B_CONFIG)
    small = {**TRAINER, "gpus": ["GPU 0: NVIDIA RTX 4000 Ada"], "gpu_memory_mib": [20_475]}
    check(args(max_completion_length=2048), JUDGE_LED, four_b, [small])
    with pytest.raises(BudgetRefused) as refused:
        check(args(max_completion_length=8192), JUDGE_LED, four_b, [small])
    message = str(refused.value)
    assert "needs 21.6 GiB on each training GPU" in message and "has 20.0 GiB" in message
    assert "its config.json and weights here" in message
    assert "generation phase: KV cache 11.2 GiB (36 attention layers × 8 KV heads × 128 × 2 × 2 bytes = 144 KiB a " \
           "token × 8 sequences × 10,240 tokens (1 × (2,048 prompt + 8,192 completion)))" in message
    assert "[training phase, smaller: activations" in message and "LM-head tiles" in message


def test_vllm_generates_in_its_own_share_so_the_trainer_holds_no_kv_cache(model_of):
    four_b = model_of(7.49, QWEN3_4B_CONFIG)
    with pytest.raises(BudgetRefused) as refused:
        check(args(generation="vllm-colocate", vllm_gpu_memory_utilization=0.95), JUDGE_LED, four_b, [TRAINER])
    message = str(refused.value)
    assert "colocated vLLM 133.4 GiB" in message and "KV cache 1" not in message and "training phase: activations" in message


def test_the_same_run_fits_with_a_smaller_vllm_share_or_hpsv3_elsewhere(model_of):
    check(args(generation="vllm-colocate", vllm_gpu_memory_utilization=0.3), JUDGE_LED, model_of(65), [TRAINER])
    check(args(generation="vllm-colocate", vllm_gpu_memory_utilization=0.45), JUDGE_LED, model_of(65),
          [TRAINER, {**GPU_SCORER, "host": "score-box"}])
    with pytest.raises(BudgetRefused):
        check(args(generation="vllm-colocate", vllm_gpu_memory_utilization=0.45), JUDGE_LED, model_of(65),
              [TRAINER, GPU_SCORER])


def test_an_sft_run_has_no_generation_phase(model_of):
    four_b = model_of(7.49, QWEN3_4B_CONFIG)
    small = {**TRAINER, "gpus": ["GPU 0: NVIDIA L4"], "gpu_memory_mib": [12_288]}
    check(RunArguments.from_dict({}, kind="sft"), JUDGE_LED, four_b, [small], kind="sft")
    with pytest.raises(BudgetRefused, match="KV cache"):
        check(args(), JUDGE_LED, four_b, [small])


def test_what_cannot_be_weighed_is_not_refused(model_of):
    check(args(generation="vllm-colocate"), JUDGE_LED, "Qwen/not-in-this-cache", [TRAINER])  # not fetched here
    check(args(generation="vllm-colocate"), JUDGE_LED, model_of(500), [{**TRAINER, "gpus": [], "gpu_memory_mib": []}])
    check(args(generation="vllm-colocate", accelerate_config="zero3.yaml"), JUDGE_LED, model_of(500), [TRAINER])


def test_one_train_worker_that_fits_is_enough(model_of):
    small = {**TRAINER, "hostname": "train@small", "host": "small", "gpu_memory_mib": [24_576]}
    check(args(), JUDGE_LED, model_of(22), [small, TRAINER])
    with pytest.raises(BudgetRefused, match="small.*; .*gpu-box|gpu-box.*; .*small"):
        check(args(), JUDGE_LED, model_of(140), [small, TRAINER])


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


def test_the_published_model_not_yet_fetched_is_weighed_by_its_presets_shape(empty_hub_cache):
    check(args(), JUDGE_LED, "Qwen/Qwen3.5-35B-A3B", [H100_TRAINER])  # 69.9 GiB: LoRA on 80 GB, own generation
    with pytest.raises(BudgetRefused) as refused:
        check(args(generation="vllm-colocate"), JUDGE_LED, "Qwen/Qwen3.5-35B-A3B", [H100_TRAINER])
    message = str(refused.value)
    # 65.2 weights + 0.3 LoRA + 1.0 context + 0.3 × 79.6 vLLM + 3.4 training phase
    assert message.startswith("the run needs 93.8 GiB on each training GPU (Qwen/Qwen3.5-35B-A3B by its preset (35B "
                              "parameters (the model card) and its published config), as it is not on this machine: "
                              "weights 65.2 GiB (35.00B parameters × 2 bytes (bf16))")
    assert "colocated vLLM 23.9 GiB (0.3 × 79.6 GiB" in message
    assert "the train worker on gpu-box has 79.6 GiB (GPU 0: NVIDIA H100 80GB HBM3)" in message
    assert "manage.py fetch_model qwen3.5-35b-a3b" in message


def test_the_published_model_fits_the_gpu_it_was_published_on_with_vllm_colocated(empty_hub_cache):
    check(args(generation="vllm-colocate"), JUDGE_LED, "Qwen/Qwen3.5-35B-A3B", [TRAINER])
    with pytest.raises(BudgetRefused, match=r"needs 1\d\d\.\d GiB .*colocated vLLM 70\.2 GiB \(0\.5 × 140\.4 GiB"):
        check(args(generation="vllm-colocate", vllm_gpu_memory_utilization=0.5), JUDGE_LED, "Qwen/Qwen3.5-35B-A3B",
              [TRAINER, GPU_SCORER])


def test_the_small_model_is_refused_on_a_small_gpu_with_its_terms(empty_hub_cache):
    sixteen_gib = {**TRAINER, "gpus": ["GPU 0: NVIDIA RTX A4000"], "gpu_memory_mib": [16_376]}
    with pytest.raises(BudgetRefused) as refused:
        check(args(), JUDGE_LED, "Qwen/Qwen3-4B", [sixteen_gib])
    message = str(refused.value)
    assert "needs 21.6 GiB on each training GPU (Qwen/Qwen3-4B by its preset (4.02B parameters" in message
    assert "KV cache 11.2 GiB" in message and "has 16.0 GiB (GPU 0: NVIDIA RTX A4000)" in message
    check(args(max_completion_length=2048), JUDGE_LED, "Qwen/Qwen3-4B", [sixteen_gib])  # 12.0 GiB: it fits


def test_weights_on_this_machine_are_weighed_before_any_presets_shape(empty_hub_cache):
    cache_weights(empty_hub_cache, "Qwen/Qwen3-4B", 30)  # not what Qwen3-4B weighs: the budget reads the disk
    small = {**TRAINER, "gpu_memory_mib": [24_576]}
    with pytest.raises(BudgetRefused) as refused:
        check(args(), JUDGE_LED, "Qwen/Qwen3-4B", [small])
    assert "needs 31.0 GiB on each training GPU (Qwen/Qwen3-4B as its weights here (30.0 GiB of weight files / 2 " \
           "bytes); its config.json gives no sizes: weights 30.0 GiB" in str(refused.value)
    assert "preset" not in str(refused.value)


def test_a_tiny_preset_not_built_here_counts_its_presets_shape(settings, tmp_path):
    from training.presets import preset_named

    settings.MODELS_DIR = tmp_path / "models"
    tiny = preset_named("tiny-painter")
    little = {**TRAINER, "gpus": ["GPU 0: a tiny GPU"], "gpu_memory_mib": [128]}
    with pytest.raises(BudgetRefused) as refused:
        check(args(), JUDGE_LED, tiny.model, [little])
    message = str(refused.value)
    assert f"needs {tiny.train_memory_gib:.1f} GiB" in message and "by its preset (the studio's build spec" in message
    assert "manage.py build_tiny_model" in message


@pytest.mark.django_db
def test_a_launch_of_the_published_model_with_vllm_on_an_80_gib_gpu_is_refused_before_anything_is_queued(
        curator, settings, empty_hub_cache, monkeypatch):
    from tests.curation.factories import make_pool
    from training import services
    from training.models import Run

    settings.LAUNCH_CHECKS_WORKERS = True
    monkeypatch.setattr(services, "live_workers", lambda: ("inspect", [{**H100_TRAINER, "vllm": "0.30.0",
                                                                        "cuda_build": True}]))
    with pytest.raises(services.LaunchError, match=r"needs 93\.8 GiB on each training GPU .*by its preset.*has 79\.6 GiB"):
        services.run_launch(pool=make_pool(curator), recipe_name="studio-judge-led", base_model="Qwen/Qwen3.5-35B-A3B",
                            arguments={"generation": "vllm-colocate"})
    assert not Run.objects.exists()
