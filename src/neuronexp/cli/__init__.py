"""The three console commands (`neuronexp`, `neuronexp-report`, `neuronexp-compare`) and their handling of
user mistakes: one line and exit 2, never a traceback."""
