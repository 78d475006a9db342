"""Print which mode the studio runs in and where to open it (make demo calls this)."""
from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Print the running mode (PostgreSQL/Redis or embedded) and the studio's address."

    def handle(self, *args, **options):
        services = settings.SERVICES
        self.stdout.write(self.style.SUCCESS("Paint with Code Studio"))
        self.stdout.write(f"  mode:     {services.describe()}")
        if services.embedded:
            self.stdout.write(
                "            embedded mode needs no server; start PostgreSQL and Redis (or set\n"
                "            DATABASE_URL / CELERY_BROKER_URL) for a multi-machine setup."
            )
        self.stdout.write("  studio:   http://127.0.0.1:8000/  (Ctrl-C stops the web server and all workers)")
        self.stdout.write(f"  chromium: {settings.CHROMIUM_PATH}")
