"""The studio's template filters."""
from __future__ import annotations

import pytest

from system.templatetags.studio import duration


@pytest.mark.parametrize(("seconds", "shown"), [
    (0, "0 s"), (44.6, "45 s"), (90, "1 min 30 s"), (600, "10 min"), (725, "12 min"), (4000, "1 h 6 min"),
])
def test_a_duration_is_shown_to_the_unit_that_matters(seconds, shown):
    assert duration(seconds) == shown


def test_an_unknown_duration_shows_nothing():
    assert duration(None) == ""
