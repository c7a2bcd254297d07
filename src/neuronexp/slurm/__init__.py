"""Stage 3c, Slurm: what a Slurm sweep checks against the cluster before it submits (cluster), and the array it
submits and waits for through submitit (jobs, imported only by the Slurm launcher plugin).

Imports config only.
"""
