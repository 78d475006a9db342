"""Create (or reuse) the demo curator account and print its credentials.

The account is `demo-curator`, the one whose rule-based grades make the demo pool
(demo/curator.py), so the studio opens on the grades its pools hold; grading in the demo
takes over from the rule.
"""
from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from demo.curator import DEMO_CURATOR, DEMO_NAMES


class Command(BaseCommand):
    help = "Create the demo curator (a superuser for the local studio) and print how to sign in."

    def add_arguments(self, parser):
        parser.add_argument("--username", default=DEMO_CURATOR, help=f"default: {DEMO_CURATOR}, the grader of the demo pool")
        parser.add_argument("--password", default=None, help="default: a random one, kept in var/demo-curator.txt")

    def handle(self, *args, username: str, password: str | None, **options):
        secret_file = Path(settings.VAR_DIR) / "demo-curator.txt"
        if password is None and secret_file.exists():
            stored_user, _, stored_password = secret_file.read_text().strip().partition(":")
            if stored_user == username:
                password = stored_password
        password = password or secrets.token_urlsafe(12)

        User = get_user_model()
        names = DEMO_NAMES if username == DEMO_CURATOR else {}
        user, created = User.objects.get_or_create(username=username, defaults={"email": f"{username}@localhost", **names})
        user.is_staff = True
        user.is_superuser = True
        user.set_password(password)
        user.save()
        secret_file.write_text(f"{username}:{password}\n")
        secret_file.chmod(0o600)

        verb = "Created" if created else "Reset"
        self.stdout.write(self.style.SUCCESS(f"{verb} demo curator — sign in at http://127.0.0.1:8000/login/"))
        self.stdout.write(f"    user name: {username}\n    password:  {password}")
