"""Everything that touches the world outside the process, grouped by what it talks to. Each group's `__all__`
names its face: the modules the rest of the project may import (tests may import any module). Groups import one
way, from the top of this list to the bottom (tests/test_structure.py holds the rule):

- `roles`: the role factories, one per benchmark: a slate's model built into a simulator, target, judge, chooser...
- `models`: model calls: the resources the assets take (slate, models, embeddings, reports), the chat client and
  its transport, the call cache and ledger, endpoint budgets, a step's progress from its calls.
- `text`, `audio`, `datasets`: sentence encoders and language identification; speech synthesis, recognition and
  clip analysis; the public corpora and releases a benchmark reads.
- `runs`: this host's processes and the heartbeat files of running steps.
- `storage`: the warehouse (Parquet files, the DuckDB views, the IO manager), SQLite and Postgres files, report
  caches, stored paths."""
