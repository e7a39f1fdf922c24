"""The process's one lock around every sentence encode, whichever the encoder.

One encode at a time per process: a loaded sentence-transformers model's fast tokenizer is not safe to call from two
threads (it changes its padding and truncation settings per call), the USE encoder sets numpy's BLAS thread count
process-wide for each call (resources/text/use_encoder.py), and the intent texts are encoded on a background thread
(resources/text/embedding_queue.py) that may still be busy when another step encodes personas.
"""

from __future__ import annotations

import threading

ENCODING = threading.Lock()
