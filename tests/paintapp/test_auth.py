"""Every page needs a signed-in curator; every write needs a CSRF token (htmx included)."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from demo.curator import ensure_demo_curator

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["curation:pools", "training:runs", "system:index"])
def test_it_sends_anonymous_visitors_to_the_login_page(client, name):
    url = reverse(name)
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={url}"


def test_a_curator_signs_in_with_the_login_form(client, curator):
    response = client.post(reverse("login"), {"username": "ada", "password": "watercolour-2026"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("curation:pools")
    assert b"Sign out" in response.content


def test_a_wrong_password_shows_a_clear_error(client, curator):
    response = client.post(reverse("login"), {"username": "ada", "password": "nope"})
    assert response.status_code == 200
    assert b"did not match" in response.content


def test_a_post_without_csrf_token_is_refused_and_an_htmx_header_token_is_accepted(curator):
    client = Client(enforce_csrf_checks=True)
    client.force_login(curator)
    page = client.get(reverse("system:index"))
    assert client.post(reverse("logout")).status_code == 403
    # base.html puts the token in hx-headers on <body>, so htmx sends it as X-CSRFToken.
    token = page.context["csrf_token"]
    assert f'hx-headers=\'{{"X-CSRFToken": "{token}"}}\'' in page.content.decode()
    response = client.post(reverse("logout"), headers={"X-CSRFToken": str(token), "HX-Request": "true"})
    assert response.status_code == 302


@pytest.fixture
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


def test_the_demo_curator_command_creates_a_superuser_and_prints_its_password(capsys, django_user_model, var_dir):
    call_command("demo_curator", password="demo-pass-123")
    out = capsys.readouterr().out
    assert "user name: demo-curator" in out and "demo-pass-123" in out
    user = django_user_model.objects.get(username="demo-curator")  # the grader of the demo pool
    assert user.is_superuser and user.check_password("demo-pass-123")
    assert (var_dir / "demo-curator.txt").read_text() == "demo-curator:demo-pass-123\n"


def test_the_demo_signs_in_as_the_account_that_grades_the_demo_pool(django_user_model, var_dir):
    call_command("demo_curator", password="demo-pass-123")
    grader = ensure_demo_curator()  # what seed_pool --demo-grades grades as
    assert grader.username == "demo-curator" and grader.check_password("demo-pass-123")
    assert django_user_model.objects.count() == 1


def test_the_demo_curator_keeps_its_password_across_runs(capsys, django_user_model, var_dir):
    call_command("demo_curator")
    first = (var_dir / "demo-curator.txt").read_text()
    call_command("demo_curator")
    assert (var_dir / "demo-curator.txt").read_text() == first
    password = first.strip().partition(":")[2]
    assert django_user_model.objects.get(username="demo-curator").check_password(password)


def test_the_admin_is_reachable_for_the_demo_curator(client, django_user_model, var_dir):
    call_command("demo_curator", password="demo-pass-123")
    client.login(username="demo-curator", password="demo-pass-123")
    assert client.get("/admin/").status_code == 200
