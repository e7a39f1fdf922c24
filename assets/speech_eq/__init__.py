"""SpeechEQ assets: the text stages, the audio stages and the forced-choice evaluation (slm_choices)."""
