-- One row per measured (or failed, or ambiguous) value: series/config key, benchmark point, metric,
-- and the image it was measured on. `id` is a hash of the sample's identity, so a re-ingest of the
-- same file adds nothing and concurrent writers of different samples never collide.
CREATE TABLE results (
    id TEXT PRIMARY KEY,
    series TEXT NOT NULL,
    point TEXT NOT NULL,
    metric TEXT NOT NULL,
    kind TEXT NOT NULL,
    better TEXT NOT NULL,
    unit TEXT NOT NULL,
    image TEXT NOT NULL,
    tag TEXT,
    digest TEXT,
    engine_version TEXT,
    engine_commit TEXT,
    run TEXT NOT NULL,
    seq BIGINT NOT NULL,
    status TEXT NOT NULL,
    value DOUBLE PRECISION,
    se DOUBLE PRECISION,
    threshold DOUBLE PRECISION,
    note TEXT NOT NULL,
    source TEXT NOT NULL
);
CREATE INDEX results_series_point ON results (series, point, metric, seq);
CREATE INDEX results_image ON results (image);
