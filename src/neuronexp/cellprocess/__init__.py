"""Stage 3b, cell processes: each cell of a sweep in a supervised process of its own, forked from a warm template (the
fork server), on a device slot of its own where the launcher runs cells side by side; the typed request that crosses to
it and the entry point it runs.

Imports cell, backends, config, results, host and slurm (a Slurm task's time limit); never the sweep's orchestration."""
