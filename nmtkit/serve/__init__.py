"""``nmtkit serve``: models served over HTTP (FastAPI and uvicorn, the ``serve`` extra), with dynamic batching
(:mod:`nmtkit.serve.batcher`) and the application (:mod:`nmtkit.serve.app`)."""
