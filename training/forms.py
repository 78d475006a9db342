"""The launch form (GRPO or SFT runs; GRPO from an SFT run's adapter): the recipe presets and the
published defaults pre-filled; and the SFT dataset builder's form.

The hyper-parameter fields are built from RunArguments' declarations (training/arguments.py):
their widgets, bounds, choices, labels, help text and the run kinds they are for are not
repeated here.
"""
from __future__ import annotations

from django import forms

from curation.models import Pool
from paintenv.prompts import SUBJECTS
from painting.selectors import default_recipe_name
from training.arguments import GRPO, SFT, ArgumentSpec, argument_specs
from training.models import Run, SftDataset
from training.presets import preset_choices
from training.sft_dataset import SftSources


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


def _for_kinds(field: forms.Field, kinds: tuple[str, ...]) -> forms.Field:
    """The run kinds a field is for, on its widget: static/js/launch.js shows a kind's fields only."""
    field.widget.attrs["data-kinds"] = " ".join(kinds)
    return field


class LaunchForm(forms.Form):
    kind = forms.ChoiceField(choices=Run.Kind.choices, initial=GRPO, widget=forms.RadioSelect, label="Kind",
                             help_text="GRPO trains toward the pool's taste with rewards; SFT imitates a frozen SFT "
                                       "dataset of the studio's best code, a warm start for GRPO")
    sft_dataset = forms.ModelChoiceField(
        queryset=SftDataset.objects.select_related("pool").order_by("name", "-version"), required=False,
        empty_label="Choose an SFT dataset…", label="SFT dataset",
        help_text="frozen on the SFT datasets page; its pool's eval split evaluates the run")
    init_run = forms.ModelChoiceField(
        queryset=Run.objects.filter(kind=SFT, status__in=(Run.Status.FINISHED, Run.Status.STOPPED), steps_done__gt=0),
        required=False, empty_label="No: a new LoRA", label="Start from SFT run",
        help_text="continue an SFT run's LoRA (its base model, rank and α)")
    name = forms.CharField(max_length=120, required=False, help_text="optional; defaults to recipe on pool")
    # No pool is preselected: the curator names the one the run trains toward.
    pool = forms.ModelChoiceField(queryset=Pool.objects.select_related("curator").order_by("name", "-version"),
                                  empty_label="Choose a pool…")
    recipe = forms.ChoiceField(choices=())
    base_model = forms.CharField(max_length=500, help_text="local path or Hugging Face id; the list offers the presets "
                                                           "with the memory one GPU needs to train each",
                                 widget=forms.TextInput(attrs={"list": "model-presets"}))
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
        self.fields.update({spec.name: _for_kinds(argument_field(spec), spec.kinds)
                            for spec in argument_specs() if spec.on_form})
        _for_kinds(self.fields["sft_dataset"], (SFT,))
        _for_kinds(self.fields["init_run"], (GRPO,))
        self.fields["pool"].required = False  # an SFT run's is its dataset's (clean)
        self.fields["recipe"].choices = [(n, n) for n in recipe_names]
        self.fields["recipe"].initial = default_recipe_name()
        self.fields["base_model"].initial = default_base_model
        self.model_presets = preset_choices()  # the base model's <datalist>

    def clean(self):
        data = super().clean()
        if data.get("kind") == SFT:
            if not data.get("sft_dataset"):
                self.add_error("sft_dataset", "an SFT run trains on a frozen SFT dataset: choose one")
            elif data.get("pool") and data["pool"] != data["sft_dataset"].pool:
                self.add_error("pool", f"{data['sft_dataset'].label} was built clear of "
                                       f"{data['sft_dataset'].pool.label}'s eval split: evaluate it there")
            else:
                data["pool"] = data["sft_dataset"].pool
            data["init_run"] = None
        else:
            data["sft_dataset"] = None
            if not data.get("pool"):
                self.add_error("pool", "This field is required.")
        return data

    def arguments(self) -> dict:
        """The declared arguments the chosen kind reads (the others keep their defaults)."""
        kind = self.cleaned_data.get("kind", GRPO)
        return {spec.name: self.cleaned_data[spec.name] for spec in argument_specs()
                if spec.name in self.ARGUMENT_FIELDS and kind in spec.kinds}

    def all_subjects(self) -> list[str]:
        extra = [line.strip() for line in self.cleaned_data.get("extra_subjects", "").splitlines() if line.strip()]
        return list(dict.fromkeys([*self.cleaned_data["subjects"], *extra]))


class SftDatasetForm(forms.Form):
    """What an SFT dataset is built from (training/sft_dataset.SftSources), previewed before it is frozen."""

    name = forms.CharField(max_length=80, required=False, help_text="a new name, or an existing one for its next version")
    pool = forms.ModelChoiceField(queryset=Pool.objects.select_related("curator").order_by("name", "-version"),
                                  empty_label="Choose a pool…",
                                  help_text="its train split's references enter; its eval split never does")
    tiers = forms.ChoiceField(choices=[("love", "love only"), ("love,okay", "love and okay")], initial="love",
                              label="References")
    references = forms.BooleanField(required=False, initial=True, label="The pool's references' code")
    revisions = forms.BooleanField(required=False, initial=True, label="Curators' revisions that passed")
    promoted = forms.BooleanField(required=False, initial=True, label="Promoted rollouts")
    runs = forms.ModelMultipleChoiceField(
        queryset=Run.objects.filter(kind=GRPO, steps_done__gt=0).order_by("-created_at"), required=False,
        label="Best rollouts of runs", widget=forms.SelectMultiple(attrs={"size": 5}),
        help_text="their rollouts at or above the quantile below, passed and not blank (runs trained elsewhere too)")
    reward_quantile = forms.FloatField(min_value=0.0, max_value=1.0, initial=0.75, label="Reward quantile")
    imported = forms.CharField(required=False, label="Imported rollouts dataset",
                               help_text="a datasets folder (save_to_disk) or parquet file on this machine, in the "
                                         "studio's export columns or the published prompt / completion / reward")

    def sources(self) -> SftSources:
        data = self.cleaned_data
        return SftSources(pool_id=data["pool"].id, reference_tiers=tuple(data["tiers"].split(",")),
                          references=data["references"], revisions=data["revisions"], promoted=data["promoted"],
                          run_ids=tuple(run.id for run in data["runs"]), reward_quantile=data["reward_quantile"],
                          imported=data["imported"].strip())
