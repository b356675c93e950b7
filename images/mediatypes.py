"""Media types of image manifests, indexes and configs, and the Accept header that asks for them.

Constants only, apart from `images.manifest` (which re-exports them): the HEAD-only resolve path
needs these and nothing of the parsing records, whose creation costs start-up time.
"""

from __future__ import annotations

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"

INDEX_TYPES = (OCI_INDEX, DOCKER_LIST)
MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
# The Accept header of every manifest request: without all four a registry may convert or 404.
ACCEPT = ", ".join((OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST))

DEFAULT_PLATFORM = "linux/amd64"
