"""Helpers every app imports: storage, database retries, exports, worker discovery, progress
bars, dataset cards and infrastructure probes. They sit above `paintenv` and below the apps."""
