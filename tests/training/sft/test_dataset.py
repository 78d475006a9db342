"""The SFT dataset builder: each source counted, de-duplicated on normalised code, and the eval
split's references kept out whichever source carries their code."""
from __future__ import annotations

import pytest

from curation.models import PoolMember
from curation.services import grade_set, pool_freeze
from paintapp.lib.storage import store_content_addressed
from paintenv.prompts import build_messages
from tests.curation.factories import make_reference, png_bytes
from tests.training.factories import make_run
from tests.training.sft.conftest import SKETCHES, variant
from training.models import Revision, Rollout
from training.sft_dataset import SftSources, build_dataset

pytestmark = pytest.mark.django_db


def members(pool, split: str) -> list[PoolMember]:
    return list(pool.members.filter(split=split).select_related("reference").order_by("reference_id"))


def revise(rollout: Rollout, code: str) -> Revision:
    """A curator's revision that came out as the editor leaves one: rendered, scored, passed."""
    return Revision.objects.create(rollout=rollout, code=code, status=Revision.Status.DONE, passed=True, reward=0.7,
                                   png=store_content_addressed(png_bytes(), folder="renders"))


def test_the_references_of_the_train_split_enter_by_tier_and_the_eval_split_never(pool):
    train_love = [m for m in members(pool, "train") if m.tier == "love"]
    built = build_dataset(SftSources(pool_id=pool.id, revisions=False, promoted=False))
    assert [e.origin for e in built.examples] == [f"reference {m.reference_id}" for m in train_love]
    assert built.counts["references"].kept == len(train_love) and built.counts["references"].eval_excluded == 0
    both = build_dataset(SftSources(pool_id=pool.id, reference_tiers=("love", "okay"), revisions=False, promoted=False))
    assert both.counts["references"].kept == len(members(pool, "train"))


def test_an_eval_references_code_is_kept_out_whichever_source_carries_it(pool, curator):
    [held_out, *_] = members(pool, "eval")
    run = make_run(pool, steps=1)
    rollout = Rollout.objects.filter(run=run).first()
    revise(rollout, "// a curator's touch\n" + held_out.reference.source)  # the same code, up to a comment
    built = build_dataset(SftSources(pool_id=pool.id, references=False, promoted=False))
    assert built.counts["revisions"].found == 1 and built.counts["revisions"].eval_excluded == 1
    assert built.examples == [] and built.left_out == [
        f"revision {Revision.objects.get().id} of rollout {rollout.id}: the code of eval reference {held_out.reference_id}"]


def test_a_promoted_rollout_graded_into_the_eval_split_is_kept_out_by_its_id(curator):
    promoted = make_reference(subject="a rose", provenance="rollout", source=SKETCHES["rose"])
    for i in range(4):
        grade_set(reference=make_reference(subject=f"x {i}", source=variant(SKETCHES["minimal"], i)), curator=curator,
                  tier="love")
    grade_set(reference=promoted, curator=curator, tier="love")
    pool = pool_freeze(name="promoted", curator=curator, eval_share=0.2, seed=0)
    in_eval = pool.members.filter(split="eval", reference=promoted).exists()
    built = build_dataset(SftSources(pool_id=pool.id, references=False, revisions=False))
    assert built.counts["promoted"].found == 1
    assert built.counts["promoted"].eval_excluded == int(in_eval) and built.counts["promoted"].kept == int(not in_eval)


def test_the_same_sketch_from_two_sources_is_one_example_and_the_gate_refuses_the_rest(pool):
    run = make_run(pool, steps=1, rewards=[[0.4, 0.3, 0.8, 0.5]])  # every rollout: the same good sketch
    rollout = Rollout.objects.filter(run=run).first()
    revise(rollout, "/* lightly edited */\n" + rollout.code)  # the rollouts' sketch again
    revise(rollout, SKETCHES["rose"])
    revise(rollout, SKETCHES["rose"] + "\nrect(0, 0, 10, 10);")  # a bare primitive: the gate refuses it
    built = build_dataset(SftSources(pool_id=pool.id, references=False, promoted=False, run_ids=(run.id,)))
    revisions, rollouts = built.counts["revisions"], built.counts["rollouts"]
    assert (revisions.found, revisions.kept) == (3, 2) and revisions.refused == 1
    # The top quarter of the run's rewards (0.5 and 0.8) is the revision's sketch again.
    assert (rollouts.found, rollouts.kept, rollouts.duplicates) == (2, 0, 2)


def test_an_imported_dataset_in_the_published_columns_gives_its_rewarded_sketches(pool, tmp_path):
    from datasets import Dataset

    good = f"Here it is:\n```javascript\n{SKETCHES['rose']}```"  # a sketch the pool does not hold
    Dataset.from_list([
        {"prompt": [{"role": "user", "content": "Paint a red rose in loose watercolour."}],
         "completion": [{"role": "assistant", "content": good}], "reward": 0.62},
        {"prompt": [{"role": "user", "content": "Paint a tulip in loose watercolour."}],
         "completion": [{"role": "assistant", "content": "no code here"}], "reward": 0.0},
    ]).to_parquet(str(tmp_path / "published.parquet"))
    built = build_dataset(SftSources(pool_id=pool.id, references=False, revisions=False, promoted=False,
                                     imported=str(tmp_path / "published.parquet")))
    [example] = built.examples
    assert (example.subject, example.source) == ("a red rose", "imported")
    row = example.row()
    assert row["prompt"] == build_messages("a red rose")  # GRPO's system prompt and user message
    assert row["completion"][0]["content"].startswith("```js\n") and row["completion"][0]["content"].endswith("\n```")


def test_sources_are_checked():
    with pytest.raises(ValueError, match="reward_quantile"):
        SftSources(pool_id=1, reward_quantile=1.5)
    with pytest.raises(ValueError, match="reference_tiers"):
        SftSources(pool_id=1, reference_tiers=("reject",))


def test_the_command_previews_each_source_and_writes_the_examples(pool, tmp_path):
    from io import StringIO

    from datasets import Dataset
    from django.core.management import call_command

    out = StringIO()
    call_command("sft_dataset", "--pool", pool.label, "--save", str(tmp_path / "sft.parquet"), stdout=out)
    kept = len([m for m in members(pool, "train") if m.tier == "love"])
    lines = out.getvalue().splitlines()
    assert lines[1].split() == ["references", str(kept), str(kept), "0", "0", "0"]
    assert f"{kept} examples; the eval split of {pool.label} kept out 0" in out.getvalue()
    written = Dataset.from_parquet(str(tmp_path / "sft.parquet"))
    assert len(written) == kept and written[0]["prompt"][0]["role"] == "system"
