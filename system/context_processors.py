from django.conf import settings


def service_mode(request) -> dict:
    """The running mode (PostgreSQL/Redis or embedded) for the page footer."""
    return {"service_mode": settings.SERVICES}
