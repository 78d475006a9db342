from django.apps import AppConfig


class CurationConfig(AppConfig):
    name = "curation"

    def ready(self) -> None:
        from curation.reference_library import PoolReferences
        from painting.judging import use_reference_library

        # Models are ready only now; the painting layer's judges read references through this.
        use_reference_library(PoolReferences())
