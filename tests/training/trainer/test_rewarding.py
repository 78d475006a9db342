"""The reward function (training/trainer/rewarding.py) judging a step in-process and storing its rollouts."""
from __future__ import annotations

import pytest

from paintenv.extraction import reply_text
from paintenv.reward import PRESETS
from painting.pipeline import InProcess
from tests.curation.factories import make_pool
from tests.support.runs import FAST
from tests.training.factories import BARE_RECT, GOOD
from training.arguments import RunArguments
from training.models import Rollout, Run
from training.trainer.rewarding import PaintingReward

pytestmark = pytest.mark.django_db(transaction=True)  # the reward function manages its own connections


def test_a_reply_with_nul_characters_is_kept_with_them_replaced_and_never_fails_its_step(
    curator, renderer, settings, tmp_path
):
    """A byte-level tokenizer can write NUL, which PostgreSQL refuses in text and JSON columns:
    it used to fail the storing of the whole step, so every rollout's reward was None."""
    settings.MEDIA_ROOT = tmp_path / "media"
    recipe = PRESETS["studio-hps-only"]  # judged in-process: no taste model needed
    args = RunArguments.from_dict(FAST | {"max_steps": 1})
    run = Run.objects.create(name="nul", pool=make_pool(curator, name="nul"), base_model="unused", recipe_name=recipe.name,
                             recipe=recipe.to_dict(), subjects=["a peach hibiscus"], hyperparameters=args.to_dict(),
                             output_dir=str(tmp_path / "run"))
    nul_in_code = BARE_RECT.replace("rect(", "rect(\x00")
    completions = [
        [{"role": "assistant", "content": f"```js\n{GOOD}```\n\x00"}],  # paints; a NUL after the sketch
        [{"role": "assistant", "content": f"```js\n{nul_in_code}```"}],  # NUL in its code
        [{"role": "assistant", "content": "\x00\x00\x00"}],
        [{"role": "assistant", "content": f"```js\n// \x00 a note\n{GOOD}```"}],
    ]
    prompts = [[{"role": "user", "content": "a peach hibiscus"}]] * 4
    rewards = PaintingReward(run, executor=InProcess(renderer))(prompts, completions, subject=["a peach hibiscus"] * 4)

    assert all(r is not None for r in rewards), rewards
    assert rewards[0] > 0 and rewards[3] > 0 and rewards[1] == rewards[2] == 0.0
    rows = list(Rollout.objects.filter(run=run).order_by("position"))
    assert [r.reply for r in rows] == [reply_text(c[0]["content"]) for c in completions]
    assert all("\x00" not in r.reply + r.code for r in rows) and "\ufffd" in rows[3].code
    assert rows[0].passed and rows[3].passed and not rows[1].passed
