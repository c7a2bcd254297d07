"""neuronexp-extract's work, one feature in one folder: the hottest modules of a profiled run (hot_units), each rebuilt
alone from the model (from_model, recipe) with inputs of the kind it receives (study_inputs), checked to compute what
it computed in the model (check), with a fused alternative where one exists (fused), and written as a study (study).
The console script is cli/extract.py."""
