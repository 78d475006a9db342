"""The launch form: the recipe presets and the published defaults pre-filled."""
from __future__ import annotations

from django import forms

from curation.models import Pool
from paintapp.env.prompts import SUBJECTS
from training.config import RunArguments

DEFAULTS = RunArguments()


class LaunchForm(forms.Form):
    name = forms.CharField(max_length=120, required=False, help_text="optional; defaults to recipe on pool")
    pool = forms.ModelChoiceField(queryset=Pool.objects.select_related("curator").order_by("name", "-version"))
    recipe = forms.ChoiceField(choices=())
    base_model = forms.CharField(max_length=500, help_text="local path or Hugging Face id")
    subjects = forms.MultipleChoiceField(
        choices=[(s.text, s.text) for s in SUBJECTS], initial=[SUBJECTS[0].text],
        widget=forms.SelectMultiple(attrs={"size": 6}),
    )
    extra_subjects = forms.CharField(required=False, help_text="more subjects, one per line (e.g. a blue iris)",
                                     widget=forms.Textarea(attrs={"rows": 2}))
    seed = forms.IntegerField(initial=0)
    max_steps = forms.IntegerField(initial=DEFAULTS.max_steps, min_value=1, max_value=100000, label="Steps")
    num_generations = forms.IntegerField(initial=DEFAULTS.num_generations, min_value=2, max_value=64, label="Generations per prompt (G)")
    learning_rate = forms.FloatField(
        initial=DEFAULTS.learning_rate, min_value=1e-8, max_value=1.0,
        help_text="5e-5 as published (a 35B model); the tiny demo model shows its progress in 20 steps at 1e-3",
    )
    warmup_steps = forms.IntegerField(initial=DEFAULTS.warmup_steps, min_value=0)
    lr_scheduler_type = forms.ChoiceField(initial=DEFAULTS.lr_scheduler_type, choices=[
        (c, c) for c in ("constant_with_warmup", "constant", "linear", "cosine")
    ])
    scale_rewards = forms.ChoiceField(initial=DEFAULTS.scale_rewards, choices=[(c, c) for c in ("none", "group", "batch")])
    top_p = forms.FloatField(initial=DEFAULTS.top_p, min_value=0.01, max_value=1.0)
    top_k = forms.IntegerField(initial=DEFAULTS.top_k, min_value=0)
    temperature = forms.FloatField(initial=DEFAULTS.temperature, min_value=0.01, max_value=5.0)
    max_completion_length = forms.IntegerField(initial=DEFAULTS.max_completion_length, min_value=16, max_value=65536)
    beta = forms.FloatField(initial=DEFAULTS.beta, min_value=0.0)
    lora_r = forms.IntegerField(initial=DEFAULTS.lora_r, min_value=1, label="LoRA r")
    lora_alpha = forms.IntegerField(initial=DEFAULTS.lora_alpha, min_value=1, label="LoRA α")
    render_size = forms.TypedChoiceField(coerce=int, initial=DEFAULTS.render_size, choices=[
        (s, f"{s} px") for s in (600, 512, 448, 384, 320, 256)
    ])
    checkpoint_every = forms.IntegerField(initial=DEFAULTS.checkpoint_every, min_value=1)
    use_vllm = forms.BooleanField(required=False, initial=False, label="vLLM generation (GPU box)")

    ARGUMENT_FIELDS = (
        "max_steps", "num_generations", "learning_rate", "warmup_steps", "lr_scheduler_type", "scale_rewards",
        "top_p", "top_k", "temperature", "max_completion_length", "beta", "lora_r", "lora_alpha", "render_size",
        "checkpoint_every", "use_vllm",
    )

    def __init__(self, *args, recipe_names: list[str], default_base_model: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["recipe"].choices = [(n, n) for n in recipe_names]
        self.fields["recipe"].initial = "judge-led"
        self.fields["base_model"].initial = default_base_model
        latest = Pool.objects.order_by("-created_at").first()
        if latest is not None:
            self.fields["pool"].initial = latest.pk  # the pool most likely meant: the newest

    def arguments(self) -> dict:
        return {name: self.cleaned_data[name] for name in self.ARGUMENT_FIELDS}

    def all_subjects(self) -> list[str]:
        extra = [line.strip() for line in self.cleaned_data.get("extra_subjects", "").splitlines() if line.strip()]
        return list(dict.fromkeys([*self.cleaned_data["subjects"], *extra]))
