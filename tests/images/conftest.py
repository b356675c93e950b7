"""Fixtures of tests/images: the container runtime on the test dockerd."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relpipe.images.runtime import Runtime


@pytest.fixture(scope="module")
def runtime(docker_host: str) -> Iterator[Runtime]:
    """`images.runtime.Runtime` on the test dockerd, CPU only; its client is closed after."""
    rt = Runtime.from_env(docker_host=docker_host, gpu="none")
    yield rt
    rt.client.close()
