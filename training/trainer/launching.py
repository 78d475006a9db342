"""A run's training processes started with `accelerate launch` (num_processes > 1, or an
accelerate config file).

The train task's process stays what it is for a single process: it beats the heartbeat,
owns the run and writes every status. It starts

    python -m accelerate.commands.launch --num_processes N ... manage.py train_process RUN ...

logs the processes' lines to the worker log, and reads back how training ended: the main
process writes the outcome into a folder of the task's, and a process that fails writes its
traceback there, which the run records. The processes die with the task's process whichever
way it ends: each watches it and kills itself once it is gone (torchrun starts them in
sessions of their own, so a kill of the worker's process group does not reach them), and the
task's process ends the launcher's whole tree when it leaves.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
from django.conf import settings

log = logging.getLogger(__name__)

OUTCOME = "outcome.json"
PARENT_ENV = "PAINTAPP_TRAINER_PROCESS"  # "pid:create_time" of the train task's process
WATCH_EVERY_S = 1.0
TAIL_LINES = 40  # of the processes' output, in a failure without a traceback
END_GRACE_S = 10.0


class ProcessesFailed(Exception):
    """The training processes ended without an outcome; `report` is what the run records."""

    def __init__(self, report: str):
        self.report = report
        super().__init__(report.splitlines()[0] if report else "the training processes failed")


def free_port() -> int:
    """A port for the processes' rendezvous (torchrun's fixed default would clash between runs)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch_command(*, run_id: int, task_id: str, checkpoint: Path | None, processes: int, config_file: str,
                   report_dir: Path, port: int) -> list[str]:
    command = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(processes),
               "--num_machines", "1", "--main_process_port", str(port)]
    if config_file:
        command += ["--config_file", config_file]  # its distributed type (DeepSpeed, FSDP, DDP) decides
    else:
        # torchrun's launcher, on GPUs (NCCL) and on CPU (gloo) alike; bf16 is the run's own argument.
        command += ["--multi_gpu", "--mixed_precision", "no", "--dynamo_backend", "no"]
    return [*command, str(settings.BASE_DIR / "manage.py"), "train_process", str(run_id), "--task-id", task_id,
            "--checkpoint", str(checkpoint or ""), "--processes", str(processes), "--report-dir", str(report_dir)]


def train_in_processes(*, run_id: int, task_id: str, checkpoint: Path | None, processes: int,
                       config_file: str) -> dict:
    """Run the training processes to their end; the outcome the main one wrote (a
    training.trainer.steps.Outcome as a dict). ProcessesFailed with the failing process's traceback."""
    if config_file and not Path(config_file).is_file():
        raise ProcessesFailed(f"accelerate_config {config_file!r} is not a file on the train worker's machine "
                              f"({socket.gethostname()})")
    with tempfile.TemporaryDirectory(prefix=f"paintapp-run-{run_id}-") as folder:
        report_dir = Path(folder)
        command = launch_command(run_id=run_id, task_id=task_id, checkpoint=checkpoint, processes=processes,
                                 config_file=config_file, report_dir=report_dir, port=free_port())
        me = psutil.Process()
        env = {**os.environ, PARENT_ENV: f"{me.pid}:{me.create_time()!r}"}
        log.info("run %s: starting %s training processes: %s", run_id, processes, " ".join(command))
        launcher = subprocess.Popen(command, cwd=settings.BASE_DIR, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1)
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        try:
            for line in launcher.stdout:
                tail.append(line.rstrip())
                log.info("run %s | %s", run_id, tail[-1])
            code = launcher.wait()
        finally:
            end_tree(launcher)
        outcome = report_dir / OUTCOME
        if outcome.exists():  # the main process finished the run (adapter saved, evaluated) before any failure
            if code != 0:
                log.warning("run %s: training processes exited with %s after their outcome: %s", run_id, code,
                            failure_report(report_dir, code, list(tail), processes))
            return json.loads(outcome.read_text())
        raise ProcessesFailed(failure_report(report_dir, code, list(tail), processes))


def end_tree(launcher: subprocess.Popen) -> None:
    """Terminate the launcher and every process under it, then kill what is left."""
    try:
        root = psutil.Process(launcher.pid)
        tree = [*root.children(recursive=True), root]
    except psutil.NoSuchProcess:
        tree = []
    for process in tree:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            pass
    _gone, alive = psutil.wait_procs(tree, timeout=END_GRACE_S)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=END_GRACE_S)
    if launcher.poll() is None:
        launcher.wait(timeout=END_GRACE_S)


def failure_report(report_dir: Path, code: int, tail: list[str], processes: int) -> str:
    """The first failing process's traceback (the others usually fail because it did), or
    the exit status and the output's last lines when none wrote one (killed, out of memory)."""
    failures = sorted(report_dir.glob("failure-*.txt"), key=lambda path: path.stat().st_mtime_ns)
    if failures:
        first = failures[0]
        rank = first.stem.removeprefix("failure-")
        return f"{first.read_text(errors='replace')}\n(training process {rank} of {processes})"
    lines = "\n".join(tail)
    return (f"The training processes ended with exit status {code} and no traceback (a process killed, e.g. out "
            f"of memory?). Their last lines:\n\n{lines}")


# -- in each training process ----------------------------------------------------------------------


def watch_parent() -> None:
    """Kill this process once the train task's process that started it is gone (SIGKILLed
    with its worker, or by the out-of-memory killer): a run's processes never outlive it."""
    identity = os.environ.get(PARENT_ENV)
    if not identity:
        return
    pid, created = identity.split(":", 1)
    threading.Thread(target=_watch, args=(int(pid), float(created)), name="trainer-watch", daemon=True).start()


def _alive(pid: int, created: float) -> bool:
    try:
        parent = psutil.Process(pid)
        return parent.create_time() == created and parent.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _watch(pid: int, created: float) -> None:
    while _alive(pid, created):
        time.sleep(WATCH_EVERY_S)
    os.kill(os.getpid(), signal.SIGKILL)


@contextmanager
def reporting_failure(report_dir: Path) -> Iterator[None]:
    """Write this process's traceback for the train task (the run records it) and re-raise."""
    try:
        yield
    except BaseException as exc:
        text = f"{type(exc).__name__}: {exc}\n\n{traceback.format_exc()[-4000:]}"
        (report_dir / f"failure-{os.environ.get('RANK', '0')}.txt").write_text(text)
        raise


def report_outcome(report_dir: Path, outcome: dict) -> None:
    staged = report_dir / f"{OUTCOME}.tmp"
    staged.write_text(json.dumps(outcome))
    os.replace(staged, report_dir / OUTCOME)
