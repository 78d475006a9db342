"""Models in the shared Hugging Face cache: training/model_cache.py and `manage.py fetch_model`.

No Hub can be reached here: huggingface_hub talks to a real local server that answers the Hub's
file API (tests/support/hub_server.py), serving a tiny model built here.
"""
from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.hub_server import LocalHub
from training.model_cache import ModelNotFound, ModelUnavailable, fetch_model

REPO = Path(__file__).resolve().parents[2]
MODEL = "studio/tiny-painter"
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing listens there


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    """An untrained tiny Qwen3 with the project's tokenizer, saved like any Hub checkpoint."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from demo.tiny_model import sft_examples
    from demo.tokenizer import build_tokenizer, tokenizer_corpus

    out = tmp_path_factory.mktemp("tiny-model")
    tokenizer = build_tokenizer(tokenizer_corpus(sft_examples(4)), vocab_size=400)
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, tie_word_embeddings=True,
    )
    Qwen3ForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture
def hub(tiny_model_dir):
    with LocalHub() as server:
        server.publish(MODEL, tiny_model_dir)
        yield server


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def downloads(hub: LocalHub) -> list[str]:
    return hub.requests_for("GET", r"/resolve/")


def test_it_downloads_every_file_of_the_model_into_the_cache_layout(hub, tiny_model_dir, tmp_path):
    model = fetch_model(repo_id=MODEL, cache_dir=tmp_path, endpoint=hub.endpoint)

    assert model.path == tmp_path / "models--studio--tiny-painter" / "snapshots" / model.commit
    assert files_of(model.path) == files_of(tiny_model_dir)
    assert (tmp_path / "models--studio--tiny-painter" / "refs" / "main").read_text() == model.commit
    assert model.files == len(files_of(tiny_model_dir))
    assert model.size_bytes == model.downloaded_bytes == sum(len(b) for b in files_of(tiny_model_dir).values())
    assert model.unchecked_reason is None


@pytest.mark.slow
def test_a_fetched_model_loads_by_its_name_from_the_cache_without_the_hub(hub, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    fetch_model(repo_id=MODEL, cache_dir=tmp_path, endpoint=hub.endpoint)
    hub.clear_requests()

    tokenizer = AutoTokenizer.from_pretrained(MODEL, cache_dir=tmp_path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(MODEL, cache_dir=tmp_path, local_files_only=True)
    assert model.config.num_hidden_layers == 1 and len(tokenizer) == model.config.vocab_size
    assert hub.requests == []


def test_it_reports_the_download_in_bytes_up_to_the_total(hub, tmp_path):
    reports: list[tuple[int, int]] = []
    model = fetch_model(repo_id=MODEL, cache_dir=tmp_path, endpoint=hub.endpoint,
                        progress=lambda done, total: reports.append((done, total)))

    assert reports and {total for _, total in reports} == {model.downloaded_bytes}
    assert [done for done, _ in reports] == sorted(done for done, _ in reports)
    assert reports[-1][0] == model.downloaded_bytes


def test_a_model_already_cached_is_reported_after_one_question_to_the_hub(hub, tmp_path):
    first = fetch_model(repo_id=MODEL, cache_dir=tmp_path, endpoint=hub.endpoint)
    hub.clear_requests()
    reports = []

    again = fetch_model(repo_id=MODEL, cache_dir=tmp_path, endpoint=hub.endpoint, progress=lambda *a: reports.append(a))

    assert again.downloaded_bytes == 0 and reports == []
    assert (again.commit, again.path, again.files, again.size_bytes) == (first.commit, first.path, first.files, first.size_bytes)
    assert hub.requests == [("GET", f"/api/models/{MODEL}/revision/main")]


def test_a_new_commit_on_the_hub_is_fetched_beside_the_cached_one(hub, tiny_model_dir, tmp_path):
    old = fetch_model(repo_id=MODEL, cache_dir=tmp_path, endpoint=hub.endpoint)
    changed = tmp_path / "changed"
    changed.mkdir()
    for name, data in files_of(tiny_model_dir).items():
        (changed / name).parent.mkdir(parents=True, exist_ok=True)
        (changed / name).write_bytes(data)
    (changed / "README.md").write_text("A tiny painter.\n")
    new_commit = hub.publish(MODEL, changed)
    hub.clear_requests()

    new = fetch_model(repo_id=MODEL, cache_dir=tmp_path, endpoint=hub.endpoint)

    assert new.commit == new_commit != old.commit and "README.md" in files_of(new.path)
    # Unchanged files are the same blobs: only the new one crosses the network.
    assert downloads(hub) == [f"/{MODEL}/resolve/{new_commit}/README.md"]
    assert new.downloaded_bytes == len("A tiny painter.\n") < new.size_bytes
    assert old.path.is_dir()


def test_a_named_revision_is_the_commit_it_names(hub, tiny_model_dir, tmp_path):
    tagged = hub.publish(MODEL, tiny_model_dir, tag="v1")
    later = tmp_path / "later"
    later.mkdir()
    (later / "config.json").write_text("{}")
    hub.publish(MODEL, later)  # main moves on

    model = fetch_model(repo_id=MODEL, revision="v1", cache_dir=tmp_path, endpoint=hub.endpoint)

    assert model.revision == "v1" and model.commit == tagged
    assert files_of(model.path) == files_of(tiny_model_dir)
    assert (tmp_path / "models--studio--tiny-painter" / "refs" / "v1").read_text() == tagged


def test_an_interrupted_download_is_finished_by_fetching_only_the_missing_file(hub, tmp_path):
    whole = fetch_model(repo_id=MODEL, cache_dir=tmp_path, endpoint=hub.endpoint)
    weights = whole.path / "model.safetensors"
    blob = weights.resolve()
    weights.unlink()
    blob.unlink()

    with pytest.raises(ModelUnavailable, match="only partly in the cache"):
        fetch_model(repo_id=MODEL, cache_dir=tmp_path, endpoint=UNREACHABLE)
    hub.clear_requests()
    finished = fetch_model(repo_id=MODEL, cache_dir=tmp_path, endpoint=hub.endpoint)

    assert downloads(hub) == [f"/{MODEL}/resolve/{whole.commit}/model.safetensors"]
    assert finished.downloaded_bytes == blob.stat().st_size == finished.size_bytes - sum(
        p.stat().st_size for p in whole.path.rglob("*") if p.is_file() and p.name != "model.safetensors"
    )


def test_when_the_hub_cannot_be_reached_the_cached_model_is_the_answer(hub, tmp_path):
    cached = fetch_model(repo_id=MODEL, cache_dir=tmp_path, endpoint=hub.endpoint)

    model = fetch_model(repo_id=MODEL, cache_dir=tmp_path, endpoint=UNREACHABLE)

    assert (model.commit, model.path, model.files, model.size_bytes) == (
        cached.commit, cached.path, cached.files, cached.size_bytes)
    assert model.downloaded_bytes == 0
    assert "cannot be reached" in model.unchecked_reason
    with pytest.raises(ModelUnavailable, match="studio/other .*not in the cache.*cannot be reached"):
        fetch_model(repo_id="studio/other", cache_dir=tmp_path, endpoint=UNREACHABLE)


@pytest.mark.parametrize(("repo_id", "revision", "message"), [
    ("studio/no-such-model", None, "no model repository studio/no-such-model"),
    (MODEL, "v9", "has no revision 'v9'"),
    ("studio/gated-painter", None, "gated.*HF_TOKEN"),
    ("not/a/name", None, "not a Hub repository name"),
])
def test_it_refuses_what_the_hub_does_not_have_or_will_not_give(hub, tiny_model_dir, tmp_path, repo_id, revision, message):
    hub.publish("studio/gated-painter", tiny_model_dir, gated=True)

    with pytest.raises(ModelNotFound, match=message):
        fetch_model(repo_id=repo_id, revision=revision, cache_dir=tmp_path, endpoint=hub.endpoint)
    assert downloads(hub) == []


# --- the command, as a person runs it: HF_HOME, HF_ENDPOINT and HF_HUB_OFFLINE from the environment


def hub_env(hub: LocalHub, hf_home: Path, **extra: str) -> dict[str, str]:
    return os.environ | {"HF_HOME": str(hf_home), "HF_ENDPOINT": hub.endpoint} | extra


def fetch_command(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", "fetch_model", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=180)


def fetch_command_in_a_terminal(*args: str, env: dict[str, str], timeout: float = 180) -> tuple[int, str]:
    """The command with its output on a pseudo-terminal, where a person sees its progress bar."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    # A terminal 120 columns wide (a new pseudo-terminal has none, and tqdm fits its bar to the width).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen([sys.executable, "manage.py", "fetch_model", *args], cwd=REPO, env=env,
                               stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    output, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([leader], [], [], 1)[0]:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: the command has exited and closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
    return process.wait(timeout=10), output.decode(errors="replace")


@pytest.mark.slow
def test_the_command_shows_a_byte_progress_bar_then_finds_the_model_already_cached(tmp_path):
    weights = tmp_path / "big-painter"
    weights.mkdir()
    (weights / "config.json").write_text("{}")
    # Over huggingface_hub's 10 MB read size, and sent slowly, so the bar moves while one watches.
    (weights / "model.safetensors").write_bytes(os.urandom(24 * 1024 * 1024))
    with LocalHub(bytes_per_second=24 * 1024 * 1024) as hub:
        hub.publish("studio/big-painter", weights)
        env = hub_env(hub, tmp_path / "hf")

        status, screen = fetch_command_in_a_terminal("studio/big-painter", env=env)
        assert status == 0, screen
        assert re.search(r"fetching studio/big-painter:\s+\d{1,2}%\|", screen), screen  # partway
        assert re.search(r"[\d.]+MB/s", screen), screen
        assert "Fetched studio/big-painter (main = " in screen and "downloaded 24.0 MB" in screen
        assert str(tmp_path / "hf" / "hub") in screen

        again = fetch_command("studio/big-painter", env=env)
        assert again.returncode == 0, again.stderr
        assert again.stdout.startswith("Already in the cache: studio/big-painter (main = ")
        assert "24.0 MB" in again.stdout


@pytest.mark.slow
def test_the_command_offline_answers_from_the_cache_and_fails_for_a_model_it_lacks(hub, tmp_path):
    hf_home = tmp_path / "hf"
    assert fetch_command(MODEL, env=hub_env(hub, hf_home)).returncode == 0
    hub.clear_requests()

    offline = hub_env(hub, hf_home, HF_HUB_OFFLINE="1")
    cached = fetch_command(MODEL, env=offline)
    missing = fetch_command("studio/other-painter", env=offline)

    assert cached.returncode == 0, cached.stderr
    assert cached.stdout.startswith(f"Already in the cache: {MODEL}")
    assert "not compared with the Hub: HF_HUB_OFFLINE is set" in cached.stdout
    assert missing.returncode == 1
    assert "studio/other-painter (main) is not in the cache and HF_HUB_OFFLINE is set" in missing.stderr
    assert hub.requests == []


@pytest.mark.slow
def test_the_command_exits_2_for_a_model_the_hub_does_not_have(hub, tmp_path):
    result = fetch_command("studio/no-such-model", env=hub_env(hub, tmp_path / "hf"))

    assert result.returncode == 2
    assert f"no model repository studio/no-such-model on {hub.endpoint}" in result.stderr
    assert "Traceback" not in result.stderr


# --- the command and the model presets (training/presets.py), in this process


def run_fetch(*args: str) -> str:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("fetch_model", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def hub_as_default(hub, tmp_path, monkeypatch):
    """The command in this process fetching from the local Hub into an empty cache (HF_ENDPOINT is
    read once, when huggingface_hub is imported: the endpoint is handed to fetch_model instead)."""
    import functools

    from huggingface_hub import constants

    from training.management.commands import fetch_model as command

    monkeypatch.setattr(command, "fetch_model", functools.partial(fetch_model, endpoint=hub.endpoint))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    return hub


def test_the_command_lists_the_presets_with_their_memory_and_its_source():
    from training.presets import presets

    listing = run_fetch("--list")

    for preset in presets():
        assert f"{preset.key}  {preset.label}" in listing
        assert f"  {preset.memory}: {preset.memory_note}" in listing
    assert "Qwen/Qwen3.5-35B-A3B (on the Hub), 35B parameters" in listing
    assert "GiB on one GPU (arithmetic, default run): 35B parameters (the model card) and its published config: " \
           "weights 65.2 GiB" in listing
    assert "Qwen/Qwen3-4B (on the Hub), 4.02B parameters" in listing
    assert "21.6 GiB on one GPU (arithmetic, default run)" in listing
    assert "(built here by manage.py build_tiny_model)" in listing
    assert "Measured on CPU (peak RSS of a training step, 2-core box)" in listing


def test_a_preset_key_fetches_its_hub_model_and_says_what_training_it_needs(hub_as_default, tiny_model_dir, tmp_path):
    hub_as_default.publish("Qwen/Qwen3-4B", tiny_model_dir)  # a stand-in under the preset's name

    said = run_fetch("qwen3-4b")

    assert said.startswith("qwen3-4b: Qwen/Qwen3-4B\nFetched Qwen/Qwen3-4B (main = ")
    assert "  to train: 21.6 GiB on one GPU (arithmetic, default run): 4.02B parameters and the sizes of its " \
           "published config: weights 7.5 GiB" in said
    snapshots = tmp_path / "hf" / "hub" / "models--Qwen--Qwen3-4B" / "snapshots"
    assert files_of(next(snapshots.iterdir())) == files_of(tiny_model_dir)
    assert run_fetch("Qwen/Qwen3-4B").startswith("Already in the cache: Qwen/Qwen3-4B")  # by its Hub name too


def test_a_tiny_preset_is_built_here_not_fetched(hub_as_default, settings, tmp_path):
    from django.core.management.base import CommandError

    settings.MODELS_DIR = tmp_path / "models"
    with pytest.raises(CommandError) as missing:
        run_fetch("tiny-painter")
    assert missing.value.returncode == 1
    assert str(missing.value) == (f"tiny-painter is built here, not fetched from the Hub, and is not built: run "
                                  f"`manage.py build_tiny_model` (it builds into {tmp_path / 'models' / 'tiny-painter'})")
    with pytest.raises(CommandError, match=r"`manage.py build_tiny_model --arch qwen3_5_moe`"):
        run_fetch("tiny-painter-qwen3_5_moe")

    built = tmp_path / "models" / "tiny-painter"
    built.mkdir(parents=True)
    (built / "config.json").write_text("{}")
    (built / "model.safetensors").write_bytes(b"\0" * 2048)
    said = run_fetch("tiny-painter")
    assert said.startswith(f"tiny-painter is built here, not fetched from the Hub: present at {built} (2 files, ")
    assert "to train: " in said and "(arithmetic, default run)" in said and "Measured on CPU" in said
    assert hub_as_default.requests == []  # the Hub was never asked


def test_the_command_needs_a_name_or_list():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="fetch_model --list shows the presets") as refused:
        run_fetch()
    assert refused.value.returncode == 2
