"""What one SFT example is: a subject and its code, where it came from, and the chat row TRL's
`SFTTrainer` reads. A leaf below the trainer: training/sft_dataset.py builds examples, the SFT
trainer (training/trainer/sft.py) and the export read them."""
from __future__ import annotations

from dataclasses import dataclass

from paintenv.prompts import build_messages

# Qwen3 templates think by default; GRPO samples with thinking off, so SFT renders its prompts
# the same way (a template without the switch ignores it). TRL's SFTTrainer reads the kwargs
# from each row's `chat_template_kwargs`.
CHAT_TEMPLATE_KWARGS = {"enable_thinking": False}


@dataclass(frozen=True)
class Example:
    subject: str
    code: str
    source: str  # one of training/sft_dataset.py's SOURCES
    origin: str  # where it came from, e.g. "reference 12", "run 3 step 4 rollout 1"

    def chat(self) -> dict:
        """TRL's conversational prompt/completion row."""
        return {"prompt": build_messages(self.subject),
                "completion": [{"role": "assistant", "content": f"```js\n{self.code.strip()}\n```"}],
                "chat_template_kwargs": CHAT_TEMPLATE_KWARGS}

    def row(self) -> dict:
        """The chat row with where it came from (the export's columns)."""
        return {**self.chat(), "subject": self.subject, "source": self.source, "origin": self.origin}

    def stored(self) -> dict:
        return {"subject": self.subject, "code": self.code, "source": self.source, "origin": self.origin}
