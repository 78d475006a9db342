"""The curation app's error: a request that cannot be carried out, with a message fit for the
curator. A leaf module, so the modules that raise it (images, archive, audit, exporting) and
the services that call them import it without a circle."""
from __future__ import annotations


class CurationError(ValueError):
    """A request that cannot be carried out, with a message fit for the curator."""
