"""Eval suites run by `python -m relpipe.engine eval`: decode-parity (mono vs reference numerics)
and gsm8k (accuracy of an OpenAI-compatible server against a threshold)."""
