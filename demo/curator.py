"""The demo curator and the documented rule it grades the seed pool by.

The rule, so that anyone can check the demo pool: the seed generator's deliberately weak
styles (muddy, hard edges, near-empty, overfilled, scribbly) are `reject`; a well-made
("good") painting is `love` when its paint covers a balanced 12–40% of the canvas, else
`okay` (sparse or crowded). It stands in for a person until one grades the pool.
"""
from __future__ import annotations

from django.contrib.auth import get_user_model

DEMO_CURATOR = "demo-curator"
DEMO_NAMES = {"first_name": "Demo", "last_name": "curator (rule-based grades)"}
LOVE_COVERAGE = (0.12, 0.40)


def demo_tier(*, style: str, paint_fraction: float) -> str:
    if style != "good":
        return "reject"
    low, high = LOVE_COVERAGE
    return "love" if low <= paint_fraction <= high else "okay"


def ensure_demo_curator():
    """The account whose grades are the demo's; it signs in only once `manage.py demo_curator`
    gave it a password (make demo does), else its password is unusable."""
    User = get_user_model()
    user, created = User.objects.get_or_create(username=DEMO_CURATOR, defaults=DEMO_NAMES)
    if created:
        user.set_unusable_password()
        user.save()
    return user
