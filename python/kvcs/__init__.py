"""kvcs for Python engines: the binding of the C ABI (include/kvcs/kvcs.h) and a vLLM-shaped
KV connector (connector.py). The native part, _kvcs_native, is built by CMake (python/); run
with PYTHONPATH=<source>/python:<build>/python."""
from _kvcs_native import Client, KvcsError, Load, Save, status_name  # noqa: F401

from .buffers import as_buffer, layer_views, paged_layout  # noqa: F401
