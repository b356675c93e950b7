-- Regressions read every measurement in history order (seq, run): an index serves that order.
CREATE INDEX results_order ON results (seq, run);
