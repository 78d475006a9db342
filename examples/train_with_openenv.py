"""GRPO against the studio's OpenEnv environment, in the shape of TRL's example scripts.

The studio serves a curator's frozen pool (`manage.py serve_env --pool NAME --recipe RECIPE`);
this script knows nothing of it but its URL and a token. It asks the environment for prompts
(`reset`), lets TRL sample the model, and plays every completion as one episode (`step`), whose
reward is the studio's: the gate, the sandboxed render and the judges of the pool's recipe. The
studio keeps every episode as a rollout of a run "trained elsewhere", with live curves.

    python examples/train_with_openenv.py \\
        --model_name_or_path Qwen/Qwen3-4B --env_url http://127.0.0.1:8010 --studio_run my-run \\
        --output_dir out/openenv --num_generations 8 --per_device_train_batch_size 8 \\
        --max_steps 100 --use_peft --lora_r 16 --bf16

The token comes from --env_token or PAINTAPP_ENV_TOKEN. A reward the environment could not
give (`render_unavailable`, or a judge or scorer that did not answer) is None: TRL leaves it
out of its group's baseline instead of training on a made-up 0.
"""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field

from datasets import Dataset
from openenv import GenericEnvClient
from trl import GRPOConfig, GRPOTrainer, ModelConfig, TrlParser, get_peft_config


@dataclass
class EnvArguments:
    env_url: str = field(default="http://127.0.0.1:8010", metadata={"help": "the studio's serve_env"})
    env_token: str = field(default="", metadata={"help": "bearer token (default: $PAINTAPP_ENV_TOKEN)"})
    studio_run: str = field(default="", metadata={"help": "the run's name in the studio (default: token and day)"})
    prompts: int = field(default=64, metadata={"help": "distinct tasks (reset seeds) in the dataset"})
    message_timeout_s: float = field(default=600.0, metadata={"help": "how long a step may take to judge"})


def headers(args: EnvArguments) -> dict[str, str]:
    token = args.env_token or os.environ.get("PAINTAPP_ENV_TOKEN", "")
    return {"Authorization": f"Bearer {token}"} if token else {}


def task_dataset(args: EnvArguments) -> Dataset:
    """One row per task: the environment's chat for reset seed i, and that seed, so every
    completion of a GRPO group is judged on the group's one draw of references."""

    async def tasks() -> list[dict]:
        async with GenericEnvClient(base_url=args.env_url, headers=headers(args)) as env:
            rows = []
            for seed in range(args.prompts):
                task = (await env.reset(seed=seed)).observation
                rows.append({"prompt": [{"role": "system", "content": task["system_prompt"]},
                                        {"role": "user", "content": task["prompt"]}],
                             "subject": task["subject"], "seed": seed})
            return rows

    return Dataset.from_list(asyncio.run(tasks()))


class EnvironmentReward:
    """Plays each completion as one episode, all of a batch at once (each in its own session),
    and returns the environment's rewards."""

    __name__ = "openenv_painting"

    def __init__(self, args: EnvArguments):
        self.args = args

    def __call__(self, prompts, completions, subject, seed, **kwargs) -> list[float | None]:
        replies = [c if isinstance(c, str) else "".join(m.get("content", "") for m in c) for c in completions]
        return asyncio.run(self._play_all(replies, subject, seed))

    async def _play_all(self, replies, subjects, seeds) -> list[float | None]:
        return await asyncio.gather(*(self._play(r, s, seed) for r, s, seed in zip(replies, subjects, seeds)))

    async def _play(self, reply: str, subject: str, seed: int) -> float | None:
        async with GenericEnvClient(base_url=self.args.env_url, headers=headers(self.args),
                                    message_timeout_s=self.args.message_timeout_s) as env:
            await env.reset(seed=int(seed), subject=subject, run=self.args.studio_run)
            result = await env.step({"response": reply})
        return result.reward


def main(env_args: EnvArguments, training_args: GRPOConfig, model_args: ModelConfig) -> None:
    trainer = GRPOTrainer(
        model=model_args.model_name_or_path,
        reward_funcs=[EnvironmentReward(env_args)],
        args=training_args,
        train_dataset=task_dataset(env_args),
        peft_config=get_peft_config(model_args),
    )
    trainer.train()
    trainer.save_model(training_args.output_dir)


if __name__ == "__main__":
    parser = TrlParser((EnvArguments, GRPOConfig, ModelConfig))
    main(*parser.parse_args_and_config())
