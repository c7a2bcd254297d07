"""Built-in modules: the RMSNorm variants of the Trainium fusion study."""

from neuronexp.modules.rmsnorm import FusedRMSNorm, NaiveRMSNorm

__all__ = ["FusedRMSNorm", "NaiveRMSNorm"]
