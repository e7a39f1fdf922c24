"""SpeechEQ: EQ-i 2.0 scenarios to contrast-filtered audio items, and the forced-choice evaluation."""
