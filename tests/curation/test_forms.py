"""The reference list's filters, read from query-string parameters by a Django form."""
from __future__ import annotations

import pytest
from django.http import QueryDict

from curation.forms import FilterError, ReferenceFilterForm
from curation.selectors import ReferenceFilter


def read(query: str) -> ReferenceFilter:
    return ReferenceFilterForm(QueryDict(query)).reference_filter()


def test_no_parameters_is_the_unfiltered_list():
    assert read("") == ReferenceFilter() == read("tier=&provenance=&has_source=&subject=")


def test_every_filter_is_read_and_round_trips_through_its_parameters():
    flt = read("tier=ungraded&subject=+a+rose+&provenance=upload&has_source=no&page=3")
    assert flt == ReferenceFilter(tier="ungraded", subject="a rose", provenance="upload", has_source=False)
    assert ReferenceFilterForm(flt.to_params()).reference_filter() == flt
    assert read("has_source=yes").has_source is True and read("tier=love").tier == "love"


@pytest.mark.parametrize(("query", "message"), [
    ("tier=lovely", "tier: Select a valid choice. lovely is not one of the available choices."),
    ("provenance=stolen", "provenance: Select a valid choice."),
    ("has_source=maybe", "has_source: Select a valid choice."),
    ("subject=" + "x" * 121, "subject: Ensure this value has at most 120 characters"),
])
def test_a_bad_value_is_a_clear_error_naming_the_parameter(query, message):
    with pytest.raises(FilterError, match=f"^Bad filter \\(.*{message}"):
        read(query)


def test_every_bad_parameter_is_named_at_once():
    with pytest.raises(FilterError, match="tier: .*; provenance: "):
        read("tier=lovely&provenance=stolen")
