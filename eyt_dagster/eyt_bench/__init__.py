"""EYT-Bench: personas and sampling, the dialogue loop, judging, metrics, the leaderboard and its analyses."""
