"""The launch form: the recipe presets and the published defaults pre-filled.

The hyper-parameter fields are built from RunArguments' declarations (training/grpo/config.py):
their widgets, bounds, choices, labels and help text are not repeated here.
"""
from __future__ import annotations

from django import forms

from curation.models import Pool
from paintenv.prompts import SUBJECTS
from painting.selectors import default_recipe_name
from training.grpo.config import ArgumentSpec, argument_specs


def argument_field(spec: ArgumentSpec) -> forms.Field:
    """The form field for one declared run argument."""
    common = {"initial": spec.default, "label": spec.label, "help_text": spec.help}
    if spec.choices is not None:
        return forms.TypedChoiceField(coerce=spec.kind, choices=[(c, str(c)) for c in spec.choices], **common)
    if spec.kind is bool:
        return forms.BooleanField(required=False, **common)
    if spec.kind is int:
        return forms.IntegerField(min_value=spec.min, max_value=spec.max, **common)
    if spec.kind is float:
        return forms.FloatField(min_value=spec.min, max_value=spec.max, **common)
    return forms.CharField(required=spec.default != "", **common)  # "" is a value (e.g. no environment_url)


class LaunchForm(forms.Form):
    name = forms.CharField(max_length=120, required=False, help_text="optional; defaults to recipe on pool")
    # No pool is preselected: the curator names the one the run trains toward.
    pool = forms.ModelChoiceField(queryset=Pool.objects.select_related("curator").order_by("name", "-version"),
                                  empty_label="Choose a pool…")
    recipe = forms.ChoiceField(choices=())
    base_model = forms.CharField(max_length=500, help_text="local path or Hugging Face id")
    subjects = forms.MultipleChoiceField(
        choices=[(s.text, s.text) for s in SUBJECTS], initial=[SUBJECTS[0].text],
        widget=forms.SelectMultiple(attrs={"size": 6}),
    )
    extra_subjects = forms.CharField(required=False, help_text="more subjects, one per line (e.g. a blue iris)",
                                     widget=forms.Textarea(attrs={"rows": 2}))
    seed = forms.IntegerField(initial=0)

    ARGUMENT_FIELDS = tuple(spec.name for spec in argument_specs() if spec.on_form)

    def __init__(self, *args, recipe_names: list[str], default_base_model: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields.update({spec.name: argument_field(spec) for spec in argument_specs() if spec.on_form})
        self.fields["recipe"].choices = [(n, n) for n in recipe_names]
        self.fields["recipe"].initial = default_recipe_name()
        self.fields["base_model"].initial = default_base_model

    def arguments(self) -> dict:
        return {name: self.cleaned_data[name] for name in self.ARGUMENT_FIELDS}

    def all_subjects(self) -> list[str]:
        extra = [line.strip() for line in self.cleaned_data.get("extra_subjects", "").splitlines() if line.strip()]
        return list(dict.fromkeys([*self.cleaned_data["subjects"], *extra]))
