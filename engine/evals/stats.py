"""Accuracy statistics of a scored eval: mean, sample standard error, Wilson lower bound."""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Accuracy:
    correct: int
    n: int

    @property
    def value(self) -> float:
        return self.correct / self.n if self.n else 0.0

    @property
    def stderr(self) -> float | None:
        """Standard error with the sample (n - 1) variance, as lm-eval reports it;
        None for n < 2.
        """
        if self.n < 2:
            return None
        p = self.value
        return math.sqrt(p * (1 - p) / (self.n - 1))

    def wilson_lower(self, z: float = Z95) -> float:
        """Lower end of the Wilson score interval (0 for no samples)."""
        if self.n == 0:
            return 0.0
        n, p = self.n, self.value
        centre = p + z * z / (2 * n)
        spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        return max(0.0, (centre - spread) / (1 + z * z / n))

    def to_json(self) -> dict[str, object]:
        return {
            "correct": self.correct,
            "n": self.n,
            "accuracy": self.value,
            "stderr": self.stderr,
            "wilson_lower_95": self.wilson_lower(),
        }
