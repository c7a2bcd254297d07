"""Stage 2, one cell: build the module and its inputs on a backend, the first call, the wall-clock pass
(timing), the profiled pass (profiling), and the rows and files made from them (rows, environment).

Imports backends, config, results and analysis; never the sweep, report or cli stages.
"""
