"""Image features of references (paintenv.features), measured once and kept.

Ordering references by the taste judge (curation.active) and training it on a pool
(curation.taste) need every image's features. Measuring is ~160 ms an image on this machine,
so 200 references cost ~30 s: kept in ReferenceFeatures, each is measured once for as long as
the feature set stays the same, and any later request or process reads them in one query.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction

from curation.models import Reference, ReferenceFeatures


def feature_set_key() -> str:
    """The current feature set and measurement version, as kept measurements name them."""
    from paintenv.features import MEASUREMENT_VERSION, TASTE_FEATURE_NAMES  # loads scipy: callers measure

    names = hashlib.sha256(",".join(TASTE_FEATURE_NAMES).encode()).hexdigest()[:40]
    return f"v{MEASUREMENT_VERSION}:{names}"


def reference_features(*, references: Sequence[Reference]) -> list[dict[str, float]]:
    """Each reference's image features, in order: those kept for the current feature set read,
    the others measured now and kept (a reference measured meanwhile by another process keeps
    the first measurement: both are of the same image)."""
    from paintenv.features import image_features  # loads scipy (seconds): only those who measure pay it

    key = feature_set_key()
    kept = dict(ReferenceFeatures.objects.filter(reference__in=[r.id for r in references], measured_as=key)
                .values_list("reference_id", "values"))
    for reference in references:
        if reference.id in kept:
            continue
        with default_storage.open(reference.image, "rb") as fh:
            values = image_features(fh.read())
        try:
            with transaction.atomic():
                ReferenceFeatures.objects.update_or_create(
                    reference=reference, defaults={"measured_as": key, "values": values})
        except IntegrityError:  # created by another process between our read and write
            pass
        kept[reference.id] = values
    return [{name: float(value) for name, value in kept[r.id].items()} for r in references]
