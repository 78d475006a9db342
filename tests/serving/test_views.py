"""The Environment page: a curator creates a token (its secret shown once) and revokes it."""
from __future__ import annotations

import pytest
from django.urls import reverse

from serving.models import EnvToken
from serving.selectors import token_name_for

pytestmark = pytest.mark.django_db


def test_a_new_tokens_secret_is_shown_once_and_then_names_the_token(signed_in):
    created = signed_in.post(reverse("serving:tokens"), {"name": "  ada's   H100 run "}, follow=True)
    page = created.content.decode()
    token = EnvToken.objects.get()
    assert token.name == "ada's H100 run"
    secret = page.split('<pre id="new-secret" class="secret">')[1].split("</pre>")[0]
    assert secret.startswith(token.prefix) and token.key_hash not in page
    assert token_name_for(secret) == "ada's H100 run"
    assert secret not in signed_in.get(reverse("serving:tokens")).content.decode()  # shown once


def test_a_revoked_token_plays_no_more_and_stays_listed(signed_in):
    signed_in.post(reverse("serving:tokens"), {"name": "cluster"})
    token = EnvToken.objects.get()
    page = signed_in.post(reverse("serving:token-revoke", args=[token.id]), follow=True).content.decode()
    token.refresh_from_db()
    assert token.revoked and "Revoked cluster" in page and 'data-token="cluster"' in page


def test_a_token_needs_a_name_of_its_own(signed_in):
    signed_in.post(reverse("serving:tokens"), {"name": "cluster"})
    again = signed_in.post(reverse("serving:tokens"), {"name": "cluster"})
    assert again.status_code == 400 and "exists already" in again.content.decode()
    blank = signed_in.post(reverse("serving:tokens"), {"name": "   "})
    assert blank.status_code == 400 and "give the token a name" in blank.content.decode()
    assert EnvToken.objects.count() == 1


def test_the_deployments_token_is_checked_in_constant_time_and_names_its_episodes(settings):
    settings.ENV_TOKEN = "deploy"
    assert token_name_for("deploy") == "PAINTAPP_ENV_TOKEN"
    assert token_name_for("deplo") is None and token_name_for("") is None and token_name_for(None) is None
