"""docker/compose.yaml is valid compose and matches the Dockerfile (no engine runs here)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker" / "compose.yaml"
DOCKERFILE = REPO / "docker" / "Dockerfile"


def compose_config(env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.fail("docker-compose is missing: `make setup` installs it (scripts/system-deps.sh)")
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"} | env_extra
    return subprocess.run([binary, "-f", str(COMPOSE), "config"], capture_output=True, text=True, env=env, timeout=60)


def test_the_compose_file_is_valid_and_defines_every_role():
    result = compose_config({"SECRET_KEY": "s" * 60})
    assert result.returncode == 0, result.stderr
    for service in ("postgres", "redis", "web", "worker-train", "worker-render", "worker-score", "beat"):
        assert re.search(rf"^  {service}:$", result.stdout, re.MULTILINE), service


def test_the_trainer_reserves_a_gpu():
    result = compose_config({"SECRET_KEY": "s" * 60})
    train = result.stdout.split("  worker-train:")[1]
    assert "driver: nvidia" in train and "- gpu" in train


def test_compose_refuses_to_start_without_a_secret_key():
    result = compose_config({})
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_every_build_target_exists_in_the_dockerfile():
    targets = set(re.findall(r"^FROM \S+ AS (\S+)$", DOCKERFILE.read_text(), re.MULTILINE))
    used = set(re.findall(r"target: ([\w-]+)", COMPOSE.read_text()))
    assert used and used <= targets


def test_the_image_copies_every_django_app_and_the_project():
    copied = set(re.findall(r"^COPY (\w+) \./\1$", DOCKERFILE.read_text(), re.MULTILINE))
    apps = {path.parent.name for path in REPO.glob("*/apps.py")}
    assert apps | {"paintapp", "templates", "static"} <= copied


def test_the_assets_stage_builds_the_editor_bundle_the_settings_serve():
    import json

    dockerfile = DOCKERFILE.read_text()
    build = json.loads((REPO / "package.json").read_text())["scripts"]["build"]
    outfile = re.search(r"--outfile=(\S+)", build).group(1)
    assert "npm run --silent build" in dockerfile and "COPY static/src ./static/src" in dockerfile
    # The settings serve the bundle from the folder the build writes to.
    from django.conf import settings

    served = {str(source) for _, source in (d for d in settings.STATICFILES_DIRS if isinstance(d, tuple))}
    assert str((REPO / outfile).parent) in served


def compose_services(env_extra: dict[str, str] | None = None) -> dict:
    import yaml

    result = compose_config({"SECRET_KEY": "s" * 60} | (env_extra or {}))
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def test_the_train_and_score_workers_share_one_hugging_face_cache():
    config = compose_services()
    assert "hf-cache" in config["volumes"]
    for name in ("worker-train", "worker-score"):
        service = config["services"][name]
        assert service["environment"]["HF_HOME"] == "/hf-cache", name
        assert "hf-cache:/hf-cache:rw" in service["volumes"], name
    # The image owns the mount point, so a new volume is writable by the workers' user.
    assert re.search(r"mkdir -p [^\n]*/hf-cache && chown studio [^\n]*/hf-cache", DOCKERFILE.read_text())


def test_the_trainer_reserves_the_gpus_asked_for_and_room_for_shared_memory():
    train = compose_services({"TRAIN_GPUS": "all"})["services"]["worker-train"]
    (device,) = train["deploy"]["resources"]["reservations"]["devices"]
    assert device["count"] == "all" and device["capabilities"] == ["gpu"]
    default = compose_services()["services"]["worker-train"]
    assert str(default["deploy"]["resources"]["reservations"]["devices"][0]["count"]) == "1"
    assert default["shm_size"] == "16gb"


def stage(name: str) -> str:
    """The Dockerfile's stage `name`, up to the next FROM."""
    return DOCKERFILE.read_text().split(f" AS {name}\n", 1)[1].split("\nFROM ", 1)[0]


def test_the_gpu_image_has_a_compiler_and_the_gpu_requirements_with_their_dependencies():
    gpu = stage("gpu")
    assert "build-essential" in gpu  # Triton and vLLM compile kernels at run time
    assert "COPY requirements-gpu.txt" in gpu and "pip install -r requirements-gpu.txt" in gpu
    assert "--no-deps" not in gpu
    dockerfile = DOCKERFILE.read_text()
    assert "FROM gpu AS worker-train" in dockerfile and "FROM gpu AS worker-score-gpu" in dockerfile


def test_the_gpu_score_worker_loads_hpsv3_once_with_one_process():
    assert "-Q ${PAINTAPP_GPU_SCORE_QUEUE:-score-gpu} -c 1" in stage("worker-score-gpu")


def test_the_gpu_profile_adds_the_judge_trls_vllm_server_and_a_gpu_scorer_each_on_a_gpu():
    gpu = compose_config({"SECRET_KEY": "s" * 60, "COMPOSE_PROFILES": "gpu", "TRL_VLLM_MODEL": "Qwen/Qwen3-4B"})
    assert gpu.returncode == 0, gpu.stderr
    def service(name: str) -> str:  # its lines only, up to the next service
        return re.search(rf"^  {name}:\n((?:    .*\n)*)", gpu.stdout, re.MULTILINE).group(1)

    for name in ("worker-score-gpu", "vlm-judge", "trl-vllm-server"):
        section = service(name)
        assert "driver: nvidia" in section and re.search(r"profiles:\n\s+- gpu\n", section), name
    trl = service("trl-vllm-server")
    assert "--port 8002" in trl and "--max_model_len 20480" in trl
    assert "published:" not in trl and "published:" not in service("vlm-judge")  # not on the host's ports


def test_the_env_server_is_an_opt_in_profile_that_names_its_pool():
    served = compose_config({"SECRET_KEY": "s" * 60, "ENV_POOL": "hibiscus:3", "COMPOSE_PROFILES": "env"})
    assert served.returncode == 0, served.stderr
    env_server = served.stdout.split("  env-server:")[1]
    assert "target: env-server" in env_server and "ENV_POOL: hibiscus:3" in env_server and "8010" in env_server
    assert re.search(r"profiles:\n\s+- env\n", env_server)  # `up` leaves it out unless --profile env
    assert compose_config({"SECRET_KEY": "s" * 60}).returncode == 0  # no ENV_POOL needed without it


def test_the_image_installs_openenv_without_its_dependencies():
    assert "pip install --no-deps -r requirements-openenv.txt" in DOCKERFILE.read_text()
