"""relpipe's core: the infrastructure every layer shares, and nothing else.

One error base with an exit code (`errors`), crash-safe file writes, a file lock with a timeout
and size-capped reads (`files`), and the strict YAML loader for untrusted input (`yamlload`).
Every layer imports it except the engine payload (`relpipe.engine`), which runs inside foreign
images and keeps its own minimal copies (see `engine/inputs.py`).

The commit hook imports this package, so it imports only the standard library (PyYAML lazily,
on the first YAML load).
"""
