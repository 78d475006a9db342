"""Paint with Code Studio — Django project package.

Deliberately empty: `paintapp.env` is a plain library that must import without Django or
Celery. The Celery app lives in `paintapp.celery` (`celery -A paintapp` finds it) and is
loaded for the web process by `system.apps.SystemConfig.ready()`.
"""
