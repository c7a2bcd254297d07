"""Stage: compare two result sets cell by cell (join), with op-table changes (op_changes), rendered (render)."""

from neuronexp.compare.join import CompareOptions, compare
from neuronexp.compare.keys import CompareError
from neuronexp.compare.render import (
    cell_lists,
    comparison_markdown,
    exit_status,
    print_comparison,
    regressed,
)

__all__ = [
    "CompareError",
    "CompareOptions",
    "cell_lists",
    "compare",
    "comparison_markdown",
    "exit_status",
    "print_comparison",
    "regressed",
]
