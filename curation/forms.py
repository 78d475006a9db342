"""Forms for curation pages: the reference list's filters, read from a query string."""
from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from curation.models import Provenance
from curation.selectors import ORDERS, SHOW_MODES, TIER_FILTERS, GradeView, ReferenceFilter


class FilterError(ValueError):
    """Filter parameters that cannot be read, with a message fit for the person who sent them."""


class ReferenceFilterForm(forms.Form):
    """What the grid, the focus view, bulk grading, the pool builder and `freeze_pool` filter by.

    Bound to request.GET (or a POST that carries the filter along); other keys are ignored.
    """

    tier = forms.ChoiceField(required=False, choices=[(value, value) for value in TIER_FILTERS])
    subject = forms.CharField(required=False, max_length=120)
    provenance = forms.ChoiceField(required=False, choices=[("", "Any"), *Provenance.choices])
    has_source = forms.TypedChoiceField(
        required=False, choices=[("", "Either"), ("yes", "Has source"), ("no", "Image only")],
        coerce=lambda value: value == "yes", empty_value=None,
    )

    def reference_filter(self) -> ReferenceFilter:
        """The filter the parameters describe; FilterError names every bad one."""
        if not self.is_valid():
            problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in self.errors.items())
            raise FilterError(f"Bad filter ({problems})")
        data = self.cleaned_data
        return ReferenceFilter(tier=data["tier"] or "all", subject=data["subject"], provenance=data["provenance"],
                               has_source=data["has_source"])



class GradeViewForm(forms.Form):
    """How the grid and the focus view show grades (curation.selectors.GradeView), from a
    query string: `show` one / all / disagree, `among` curators (repeated), `order` uncertain."""

    show = forms.ChoiceField(required=False, choices=[(value, value) for value in SHOW_MODES])
    among = forms.MultipleChoiceField(required=False)
    order = forms.ChoiceField(required=False, choices=[(value, value) for value in ORDERS])

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        name_field = get_user_model().USERNAME_FIELD
        names = get_user_model().objects.filter(grades__isnull=False).values_list(name_field, flat=True).distinct()
        self.fields["among"].choices = [(name, name) for name in names]

    def grade_view(self) -> GradeView:
        """The view the parameters describe; FilterError names every bad one."""
        if not self.is_valid():
            problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in self.errors.items())
            raise FilterError(f"Bad view ({problems})")
        data = self.cleaned_data
        show = data["show"] or "one"
        among = tuple(sorted(data["among"])) if show == "disagree" else ()  # only a disagreement list is narrowed by it
        return GradeView(show=show, among=among, order=data["order"])
