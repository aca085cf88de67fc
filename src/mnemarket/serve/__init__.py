"""mnemarket.serve: the local model as an OpenAI-compatible server (`mnemarket serve`).

One process holds the model for every run, `compare` cell and machine that points at it
(``MNEMARKET_LOCAL_URL``, see :mod:`mnemarket.providers.local_served`). It knows nothing of the
world: it imports only the providers layer. FastAPI and uvicorn load only when it starts.
"""

from mnemarket.serve.launch import ServeOptions, serve

__all__ = ["ServeOptions", "serve"]
