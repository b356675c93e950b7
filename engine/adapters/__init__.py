"""How relpipe drives real inference engines: server argv/env per engine (ATOM, vLLM, SGLang,
TensorRT-LLM), health check and shutdown (server.py), and the ATOM op provider (atom.py)."""
