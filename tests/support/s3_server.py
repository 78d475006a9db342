"""A real S3-compatible server for the object-storage tests: moto's server mode in a process of
its own on a free port (boto3 and django-storages talk to it over HTTP as to any S3 endpoint),
with one bucket, and the settings and worker environment that point the studio at it."""
from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field

import boto3
import requests

from tests.support.processes import free_port, stop_group

BUCKET = "studio-media"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass
class S3Server:
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> S3Server:
        self.process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(self.endpoint, timeout=1)
                break
            except (requests.ConnectionError, requests.Timeout):  # not up yet, or still importing under load
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("the S3 server did not start") from None
                time.sleep(0.2)
        self.client().create_bucket(Bucket=BUCKET)
        return self

    def client(self):
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="testing",
                            aws_secret_access_key="testing", region_name="us-east-1")

    def keys(self, prefix: str = "") -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))

    def environment(self) -> dict[str, str]:
        """What a worker (or the studio) needs to keep its media and checkpoints here."""
        return {"PAINTAPP_STORAGE": "s3", "PAINTAPP_S3_BUCKET": BUCKET, "PAINTAPP_S3_ENDPOINT_URL": self.endpoint,
                **CREDENTIALS}

    def storages(self, staticfiles: dict) -> dict:
        """The STORAGES setting of a studio that uses this server."""
        return {"default": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
            "bucket_name": BUCKET, "endpoint_url": self.endpoint, "region_name": "us-east-1",
            "access_key": "testing", "secret_key": "testing", "file_overwrite": True, "querystring_auth": False}},
            "staticfiles": staticfiles}

    def stop(self) -> None:
        stop_group(self.process, grace_s=5)
