"""Experiment tracking of a run in trackio (local files) and/or Weights & Biases.

The run argument `report_to` chooses. TRL does the logging: transformers' TrackioCallback and
WandbCallback send every step's metrics, and GRPOTrainer (`log_completions`) sends each step's
prompts, completions, rewards and advantages as a table named `completions`. This module checks
that a launch can report where it asks, names the run alike in both, opens the W&B run in the
run's own folder, and writes `tracking.json` there: where the run's tracking lives, for the run
page. trackio writes to `TRACKIO_DIR` (default `~/.cache/huggingface/trackio`) of the train
worker; W&B follows `WANDB_MODE` (offline: a run directory to `wandb sync` later).
"""
from __future__ import annotations

import importlib.util
import io
import json
import logging
import netrc
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings
from django.core.files.storage import default_storage
from django.utils.text import slugify
from PIL import Image

from training.models import Rollout, Run

log = logging.getLogger(__name__)
BEST_PAINTING = "ours/best_painting"

TRACKING_PROJECT = "paint-with-code"
TRACKING_FILE = "tracking.json"
PACKAGES = {"trackio": "trackio", "wandb": "wandb"}
# W&B modes that write nothing to a server, so need no login.
_WANDB_LOCAL_MODES = {"offline", "dryrun", "disabled"}
_WANDB_DEFAULT_HOST = "https://api.wandb.ai"


def backends(report_to: str) -> list[str]:
    """The trackers a `report_to` value names, as TRL's `report_to` list."""
    return [] if report_to == "none" else report_to.split(",")


def tracking_problem(report_to: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """Why this process could not report to the trackers `report_to` names, or None.

    Checked where the run is launched; the train worker's environment should match it."""
    for backend in backends(report_to):
        if importlib.util.find_spec(PACKAGES[backend]) is None:
            return (f"report_to={report_to} needs the {PACKAGES[backend]} package, which is not installed "
                    "(pip install -r requirements-tracking.txt)")
    if "wandb" in backends(report_to):
        mode = environ.get("WANDB_MODE", "").lower()
        if mode not in _WANDB_LOCAL_MODES and not environ.get("WANDB_API_KEY") and not _wandb_netrc_login(environ):
            return ("report_to=wandb needs a W&B login: set WANDB_API_KEY (or run `wandb login`), "
                    "or WANDB_MODE=offline to write the run to disk and `wandb sync` it later")
    return None


def _wandb_netrc_login(environ: Mapping[str, str]) -> bool:
    """Whether `wandb login` left a key for the W&B host in the netrc file."""
    host = urlparse(environ.get("WANDB_BASE_URL") or _WANDB_DEFAULT_HOST).hostname
    path = environ.get("NETRC") or str(Path.home() / ".netrc")
    try:
        return netrc.netrc(path).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


def leave_out_unchosen_trackers(report_to: str) -> list[str]:
    """Make the trackers `report_to` does not name unimportable in this process; the ones left out.

    TRL and transformers import W&B and trackio whenever they are installed, chosen or not: about
    1 CPU s of each trainer's ~7 s start on the test machines. Only for a process that trains one
    run and exits (a train worker's fresh child, a run's launched process): TRL decides at import
    whether W&B is there, so a later run in the same process could not report to it."""
    chosen = backends(report_to)
    left_out = [package for backend, package in PACKAGES.items()
                if backend not in chosen and package not in sys.modules]
    for package in left_out:
        sys.modules[package] = None  # import raises ImportError and find_spec says None: "not installed"
    return left_out


def tracking_name(run: Run) -> str:
    """The run's name in the trackers: its id and its name, e.g. `12-judge-led-on-demo-v1`."""
    return f"{run.id}-{slugify(run.name)}"[:120]


def grpo_tracking_arguments(run: Run, report_to: str) -> dict:
    """GRPOConfig's arguments for tracking: the trackers, the run's name and completions, and
    trackio's Space when PAINTAPP_TRACKIO_SPACE_ID names one (then the dashboard lives there)."""
    chosen = backends(report_to)
    return {
        "report_to": chosen,
        "run_name": tracking_name(run),
        "project": TRACKING_PROJECT,  # trackio's project; W&B's is set where its run opens
        "log_completions": bool(chosen),
        "num_completions_to_print": 1,  # the worker's log gets one; the trackers get the whole table
        **({"trackio_space_id": settings.TRACKIO_SPACE_ID} if "trackio" in chosen and settings.TRACKIO_SPACE_ID else {}),
    }


def best_painting(run: Run, step: int) -> tuple[Image.Image, str] | None:
    """The step's best painting (the highest reward among those painted) and its caption."""
    best = (Rollout.objects.filter(run=run, step=step, reward__isnull=False).exclude(png="")
            .order_by("-reward", "group", "position").first())
    if best is None:
        return None
    with default_storage.open(best.png, "rb") as fh:
        image = Image.open(io.BytesIO(fh.read())).convert("RGB")
    return image, f"step {step} · reward {best.reward:.3f} · {best.subject} (rollout {best.group}.{best.position})"


def log_best_painting(run: Run, step: int, chosen: list[str]) -> bool:
    """Log the step's best painting as an image to each chosen tracker, under `BEST_PAINTING`
    at `train/global_step`, as the trackers' callbacks log the step's metrics; never raises."""
    try:
        found = best_painting(run, step)
        if found is None:
            return False
        image, caption = found
        for backend in chosen:
            if backend == "trackio":
                import trackio

                trackio.log({BEST_PAINTING: trackio.Image(image, caption=caption), "train/global_step": step})
            elif backend == "wandb":
                import wandb

                wandb.log({BEST_PAINTING: wandb.Image(image, caption=caption), "train/global_step": step})
        return True
    except Exception:  # noqa: BLE001 - a painting the trackers did not get never stops training
        log.warning("run %s: could not log step %s's best painting", run.id, step, exc_info=True)
        return False


def trackio_place(run: Run) -> dict:
    from trackio.utils import TRACKIO_DIR

    place = {
        "backend": "trackio", "project": TRACKING_PROJECT, "run": tracking_name(run), "dir": str(TRACKIO_DIR),
        "view": f"TRACKIO_DIR={TRACKIO_DIR} trackio show --project {TRACKING_PROJECT}",
    }
    if settings.TRACKIO_SPACE_ID:
        place["url"] = f"https://huggingface.co/spaces/{settings.TRACKIO_SPACE_ID}"
    return place


def wandb_place() -> dict:
    import wandb

    mode = wandb.run.settings.mode
    place = {"backend": "wandb", "project": TRACKING_PROJECT, "run": wandb.run.name, "mode": mode,
             "dir": wandb.run.settings.sync_dir, "url": wandb.run.url}
    if mode == "offline":
        place["view"] = f"wandb sync {wandb.run.settings.sync_dir}"
    return place


def tracking_places(run: Run) -> list[dict]:
    """Where the run's tracking lives, as its trainer recorded it (none before it started)."""
    path = Path(run.output_dir or "") / TRACKING_FILE
    try:
        return json.loads(path.read_text()) if run.output_dir else []
    except (OSError, ValueError):
        return []
