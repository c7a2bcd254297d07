"""Built-in modules: the naive and fused variants of each study (RMSNorm, LayerNorm, softmax, SwiGLU MLP,
rotary embedding, attention, a Llama-style decoder block). Input factories for YAML are in modules.inputs."""

from neuronexp.modules.attention import EagerAttention, SDPAAttention
from neuronexp.modules.decoder import FusedDecoderBlock, NaiveDecoderBlock
from neuronexp.modules.layernorm import FusedLayerNorm, NaiveLayerNorm
from neuronexp.modules.mlp import SwiGLUFused, SwiGLUNaive
from neuronexp.modules.rmsnorm import FusedRMSNorm, NaiveRMSNorm
from neuronexp.modules.rotary import FusedRotary, NaiveRotary
from neuronexp.modules.softmax import FusedSoftmax, NaiveSoftmax

__all__ = [
    "EagerAttention", "FusedDecoderBlock", "FusedLayerNorm", "FusedRMSNorm", "FusedRotary", "FusedSoftmax",
    "NaiveDecoderBlock", "NaiveLayerNorm", "NaiveRMSNorm", "NaiveRotary", "NaiveSoftmax", "SDPAAttention",
    "SwiGLUFused", "SwiGLUNaive",
]
