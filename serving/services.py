"""Writes of the OpenEnv server: tokens, and each served episode stored as a rollout of a run
trained elsewhere (one run per client-given name, else per token and day; one step per reset
seed), with that step's curves recomputed as its rollouts arrive."""
from __future__ import annotations

import secrets
from datetime import date
from statistics import fmean, pstdev

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone

from curation.models import Pool
from paintenv.reward import Recipe
from serving.models import EnvToken
from serving.selectors import secret_hash
from training import metrics as keys
from training.arguments import RunArguments
from training.models import Rollout, RolloutTurn, Run, Step
from training.recording import TurnOutcome, painted_fields, rollout_reward, step_metrics

SECRET_PREFIX = "pwc_"
# A trainer elsewhere times its own generation and update; these figures of ours would only
# describe one episode, so an external step leaves them out.
TRAINER_TIMINGS = (keys.GENERATION_S, keys.RENDER_S, keys.SCORE_S, keys.REWARD_S)


class TokenError(ValueError):
    pass


def token_create(*, name: str, created_by: AbstractBaseUser | None = None) -> tuple[EnvToken, str]:
    """A new token and its secret, which is shown once and never stored."""
    name = " ".join(name.split())[:120]
    if not name:
        raise TokenError("give the token a name: who or what trains with it")
    if EnvToken.objects.filter(name=name).exists():
        raise TokenError(f"a token named {name!r} exists already")
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    token = EnvToken.objects.create(name=name, key_hash=secret_hash(secret), prefix=secret[:10],
                                    created_by=created_by)
    return token, secret


def token_revoke(*, token: EnvToken) -> EnvToken:
    """From now on the token plays no episode; its runs and rollouts stay."""
    EnvToken.objects.filter(id=token.id, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db()
    return token


def external_run(*, pool: Pool, recipe: Recipe, name: str, fed_by: str, today: date | None = None) -> Run:
    """The run trained elsewhere that a client's episodes belong to: `name` as the client gave
    it (`run=` on reset), else one per token and day."""
    name = (" ".join(name.split()) or f"{fed_by} {(today or timezone.localdate()):%Y-%m-%d}")[:120]
    found = Run.objects.filter(status=Run.Status.EXTERNAL, name=name, fed_by=fed_by, pool=pool, recipe_name=recipe.name)
    run = found.first()
    if run is not None:
        return run
    # A group's sessions reset at once and each asks for the new run. No constraint can make
    # the run unique (older databases may hold same-named external runs), so whoever creates
    # it holds the pool's row (NO KEY UPDATE: rows that only point at the pool are not held up):
    # the others wait, then find it.
    with transaction.atomic():
        Pool.objects.select_for_update(no_key=True).get(id=pool.id)
        run = found.first()
        if run is None:
            run = Run.objects.create(
                name=name, pool=pool, base_model="", recipe_name=recipe.name, recipe=recipe.to_dict(),
                status=Run.Status.EXTERNAL, fed_by=fed_by, started_at=timezone.now(), hyperparameters={},
            )
    return run


def episode_step(*, run: Run, seed: int) -> int:
    """The run's step for reset `seed`: a GRPO group is one draw, so every episode that reset
    with one seed shares one step, numbered in the order the seeds first arrived."""
    for _ in range(3):
        found = Step.objects.filter(run=run, reset_seed=seed).values_list("step", flat=True).first()
        if found is not None:
            return found
        try:
            with transaction.atomic():
                # Numbers steps one at a time. NO KEY UPDATE, not UPDATE: an episode being recorded
                # holds the run's row KEY SHARE (its rollout's foreign key) and must not be waited on.
                Run.objects.select_for_update(no_key=True).filter(id=run.id).first()
                number = (Step.objects.filter(run=run).aggregate(n=Max("step"))["n"] or 0) + 1
                Step.objects.create(run=run, step=number, reset_seed=seed)
                Run.objects.filter(id=run.id).update(steps_done=number)
                return number
        except IntegrityError:
            continue
    raise RuntimeError(f"could not number the step of seed {seed}")


def episode_record(*, run: Run, step: int, rollout_id: int | None, subject: str, prompt: str,
                   chain: list[TurnOutcome], reference_ids: list[int], fed_by: str) -> Rollout:
    """Store an episode as a rollout of `run` at `step` (its slot the next free position on the
    first turn; its row and chain rewritten on each later turn), and recompute that step's
    curves from every rollout it holds."""
    last = chain[-1]
    gain_weight = RunArguments().revision_gain_weight
    reward = rollout_reward([t.reward for t in chain], gain_weight=gain_weight) if len(chain) > 1 else last.reward
    fields = {**painted_fields(last.painted), "reply": last.reply, "reward": reward, "turns": len(chain),
              "subject": subject[:120], "prompt": prompt, "reference_ids": list(reference_ids)}
    with transaction.atomic():
        Step.objects.select_for_update().get(run=run, step=step)  # one writer per step: positions, curves
        if rollout_id is None:
            position = Rollout.objects.filter(run=run, step=step).count()
            rollout = Rollout.objects.create(run=run, step=step, group=0, position=position, **fields)
        else:
            Rollout.objects.filter(id=rollout_id).update(**fields)
            rollout = Rollout.objects.get(id=rollout_id)
        if len(chain) > 1:
            RolloutTurn.objects.filter(rollout=rollout).delete()
            RolloutTurn.objects.bulk_create([
                RolloutTurn(rollout=rollout, turn=number, reply=t.reply, reward=t.reward, feedback=t.feedback,
                            kept=t.kept, **painted_fields(t.painted))
                for number, t in enumerate(chain, start=1)])
        _step_curves(run, step)
    # After the commit: holding the run's row to the end would make every other episode of the
    # run, and the next seed's step numbering, wait on this one (and deadlock with them).
    Run.objects.filter(id=run.id).update(heartbeat_at=timezone.now())
    if rollout_id is None:
        EnvToken.objects.filter(name=fed_by).update(episodes=F("episodes") + 1, last_used_at=timezone.now())
    return rollout


def _step_curves(run: Run, step: int) -> None:
    rows = list(Rollout.objects.filter(run=run, step=step))
    rewards = [row.reward for row in rows]
    metrics = step_metrics(rows, rewards, generation_s=0.0, render_s=0.0, score_s=0.0, reward_s=0.0)
    for key in TRAINER_TIMINGS:
        metrics.pop(key, None)
    valid = [r for r in rewards if r is not None]
    mean = fmean(valid) if valid else None
    std = pstdev(valid) if valid else None
    if mean is not None:
        metrics[keys.REWARD] = mean
        metrics[keys.REWARD_STD] = std
    metrics["ours/episodes"] = float(len(rows))
    Step.objects.filter(run=run, step=step).update(reward_mean=mean, reward_std=std, metrics=metrics)

