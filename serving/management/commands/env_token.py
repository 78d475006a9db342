"""manage.py env_token NAME [--revoke]: create (printing its secret once) or revoke a bearer
token for the OpenEnv server, as the studio's Environment tokens page does."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from serving import services
from serving.models import EnvToken


class Command(BaseCommand):
    help = "Create a bearer token for manage.py serve_env (its secret is printed once), or --revoke one."

    def add_arguments(self, parser):
        parser.add_argument("name", help="who or what trains with it")
        parser.add_argument("--revoke", action="store_true")

    def handle(self, *args, name, revoke, **options):
        if revoke:
            token = EnvToken.objects.filter(name=name).first()
            if token is None:
                raise CommandError(f"no token named {name!r}", returncode=2)
            services.token_revoke(token=token)
            self.stdout.write(f"revoked {name!r}")
            return
        try:
            _, secret = services.token_create(name=name)
        except services.TokenError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        self.stdout.write(secret)
