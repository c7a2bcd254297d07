"""Stage: compare two result sets cell by cell (join), with op-table changes (ops), rendered (render)."""

from neuronexp.compare.join import Comparison, CompareError, compare
from neuronexp.compare.render import cell_lists, comparison_markdown, print_comparison, regressed, verdict_line

__all__ = ["CompareError", "Comparison", "cell_lists", "compare", "comparison_markdown", "print_comparison", "regressed", "verdict_line"]
