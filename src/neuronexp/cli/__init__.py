"""The console commands (`neuronexp`, `neuronexp-report`, `-compare`, `-export`, `-extract`) and their handling of
user mistakes: one line and exit 2, never a traceback."""
