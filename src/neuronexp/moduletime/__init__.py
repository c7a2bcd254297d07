"""Time per nn.Module (profiler.modules=true), one feature in one place: the profiler spans and their attribution
(attribution), the modules table and what one more eager call tells about each module (module_rows), reading the
table (views: the tree, types, hotspots) and its terminal lines (terminal_lines).

Imports analysis, results, formatting and config; cell, report and cli import it. views and terminal_lines need no
torch, so a reader imports them without it.
"""
