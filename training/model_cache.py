"""Models in the shared Hugging Face cache: what `manage.py fetch_model` downloads before a run.

The train and score workers load a model by its Hub name (`from_pretrained("Qwen/Qwen3-4B")`),
which reads the cache under HF_HOME: fetching a model there first makes a run's start a load
from disk instead of a download of many GB inside the trainer, and lets the workers run with
HF_HUB_OFFLINE=1. huggingface_hub does the work (its cache layout, resumable downloads, the
per-commit file listing that tells a complete snapshot from a partial one); this module asks it
what is missing, reports download progress in bytes and turns its errors into plain messages.
"""
from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import constants, snapshot_download
from huggingface_hub.errors import (
    DryRunError,
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    IncompleteSnapshotError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import repo_folder_name
from tqdm import tqdm

DEFAULT_REVISION = "main"


class ModelNotFound(Exception):
    """The Hub answered that there is no such repository or revision (or it is gated / private)."""


class ModelUnavailable(Exception):
    """The model cannot be had: the Hub cannot be reached and it is not (completely) cached, or the
    download failed."""


@dataclass(frozen=True)
class CachedModel:
    repo_id: str
    revision: str  # as asked: a branch, a tag or a commit
    commit: str  # the commit the cached snapshot holds
    path: Path  # the snapshot folder: one entry per file of the repository
    files: int
    size_bytes: int
    downloaded_bytes: int  # 0 when everything was already cached
    # None: the cache was compared with the Hub (or the revision is a commit, which never
    # changes); otherwise why it could not be (offline mode, Hub unreachable).
    unchecked_reason: str | None = None


def hub_cache_dir() -> Path:
    """The cache the workers read: HF_HUB_CACHE, by default HF_HOME/hub."""
    return Path(constants.HF_HUB_CACHE)


def fetch_model(
    *,
    repo_id: str,
    revision: str | None = None,
    cache_dir: Path | None = None,
    endpoint: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CachedModel:
    """Make the snapshot of `repo_id` at `revision` complete in the cache, downloading only the
    files it lacks; `progress(done_bytes, total_bytes)` follows the download. Where the Hub cannot
    be asked, a complete cached snapshot is the answer. Raises ModelNotFound or ModelUnavailable."""
    revision = revision or DEFAULT_REVISION
    endpoint = (endpoint or constants.ENDPOINT).rstrip("/")
    where = dict(repo_id=repo_id, revision=revision, cache_dir=cache_dir, endpoint=endpoint)
    try:
        plan = snapshot_download(**where, dry_run=True, tqdm_class=_reporting_bars(None, 0))
    except HFValidationError as exc:
        raise ModelNotFound(f"{repo_id!r} is not a Hub repository name (owner/name): {exc}") from exc
    except (RepositoryNotFoundError, RevisionNotFoundError) as exc:  # the Hub refused a file (gated)
        raise _refusal(exc, repo_id=repo_id, revision=revision, endpoint=endpoint) from exc
    except DryRunError as exc:  # the Hub did not list the files: why is the error it raised from
        cause = exc.__cause__
        if isinstance(cause, RepositoryNotFoundError):
            raise _refusal(cause, repo_id=repo_id, revision=revision, endpoint=endpoint) from exc
        return _cached_snapshot(**where, reason=_unreachable_reason(cause, endpoint))
    except (HfHubHTTPError, OSError) as exc:
        raise ModelUnavailable(f"cannot list {repo_id} on {endpoint}: {exc}") from exc

    size = sum(entry.file_size or 0 for entry in plan)
    to_download = sum(entry.file_size or 0 for entry in plan if entry.will_download)
    if any(entry.will_download for entry in plan):
        try:
            snapshot_download(**where, tqdm_class=_reporting_bars(progress, to_download))
        except (HfHubHTTPError, OSError) as exc:
            raise ModelUnavailable(f"downloading {repo_id} from {endpoint} failed: {exc}") from exc
    commit = plan[0].commit_hash  # every repository has files (.gitattributes at least)
    path = Path(cache_dir or hub_cache_dir()) / repo_folder_name(repo_id=repo_id, repo_type="model") / "snapshots" / commit
    return CachedModel(
        repo_id=repo_id, revision=revision, commit=commit, path=path, files=len(plan),
        size_bytes=size, downloaded_bytes=to_download,
    )


def _cached_snapshot(*, repo_id: str, revision: str, cache_dir: Path | None, endpoint: str, reason: str) -> CachedModel:
    """The complete cached snapshot of `revision`, when the Hub cannot be asked."""
    try:
        folder = Path(snapshot_download(
            repo_id, revision=revision, cache_dir=cache_dir, endpoint=endpoint, local_files_only=True,
        ))
    except IncompleteSnapshotError as exc:
        raise ModelUnavailable(
            f"{repo_id} ({revision}) is only partly in the cache and {reason}; run fetch_model again "
            f"where {endpoint} can be reached to finish it ({exc})"
        ) from exc
    except LocalEntryNotFoundError as exc:
        raise ModelUnavailable(f"{repo_id} ({revision}) is not in the cache and {reason}") from exc
    files = [path for path in folder.rglob("*") if path.is_file()]
    return CachedModel(
        repo_id=repo_id, revision=revision, commit=folder.name, path=folder, files=len(files),
        size_bytes=sum(path.stat().st_size for path in files), downloaded_bytes=0, unchecked_reason=reason,
    )


def _refusal(exc: HfHubHTTPError, *, repo_id: str, revision: str, endpoint: str) -> ModelNotFound:
    """What the Hub's refusal means for the person fetching the model."""
    if isinstance(exc, GatedRepoError):
        return ModelNotFound(
            f"{repo_id} is gated on {endpoint}: accept its terms on the Hub, then set HF_TOKEN to a "
            "token of that account"
        )
    if isinstance(exc, RevisionNotFoundError):
        return ModelNotFound(f"{repo_id} has no revision {revision!r} on {endpoint}")
    return ModelNotFound(f"no model repository {repo_id} on {endpoint} (a private one needs HF_TOKEN)")


def _unreachable_reason(cause: BaseException | None, endpoint: str) -> str:
    if isinstance(cause, OfflineModeIsEnabled):
        return "HF_HUB_OFFLINE is set"
    detail = f" ({type(cause).__name__})" if cause is not None else ""
    return f"the Hub at {endpoint} cannot be reached{detail}"


class _Discard(io.TextIOBase):
    def write(self, text: str) -> int:
        return len(text)


def _reporting_bars(progress: Callable[[int, int], None] | None, total_bytes: int) -> type[tqdm]:
    """The `tqdm_class` for snapshot_download. It makes three bars from it: bytes received, bytes
    written to the cache ("Reconstructing…") and files done. Each is a working tqdm drawn into
    nothing (huggingface_hub calls any tqdm method on them); the bytes-written bar reports to
    `progress`, against the total of the files to download, known before the download starts."""

    class ReportingBar(tqdm):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **(kwargs | {"file": _Discard(), "disable": False}))
            self.reports = progress is not None and self.unit == "B" and self.desc.startswith("Reconstructing")

        def update(self, n: float | None = 1) -> bool | None:
            shown = super().update(n)
            if self.reports:
                progress(int(self.n), total_bytes)
            return shown

    return ReportingBar
