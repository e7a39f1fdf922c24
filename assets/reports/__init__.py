"""Report assets over every partition: the EYT-Bench leaderboard, analyses and judge calibration; the SpeechEQ reports."""
