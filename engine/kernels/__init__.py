"""Triton kernels of the mono decode step (fused norm+projection, RoPE+KV write, split-K attention).

Import this package only after `TRITON_INTERPRET` has its final value: kernels are decorated at
import time and the interpreter is chosen then.
"""
