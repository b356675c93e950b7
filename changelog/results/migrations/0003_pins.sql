-- Pins: what relpipe resolved each image reference to (the verified digest), when, the image's own
-- created time, the probe's facts and where a byte-identical copy is archived. relpipe's state,
-- not the benchmark repository's (InferenceX has no lock file): `revert`, `images archive` and the
-- retention warning read it here. Times are instants in core.instant's spelling (UTC, Z).
CREATE TABLE pins (
    ref TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    platform TEXT,
    platform_digest TEXT NOT NULL,
    media_type TEXT NOT NULL,
    resolved_at TEXT NOT NULL,
    created TEXT,
    facts TEXT NOT NULL,
    archive_registry TEXT,
    archived_at TEXT
);
