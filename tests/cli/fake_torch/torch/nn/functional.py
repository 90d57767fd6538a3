# scaled_dot_product_attention of the stand-in: the memory-efficient backend refuses grouped-query
# inputs (so the script expands K and V), cuDNN refuses an explicit mask (so the row is refused).
from . import attention


def scaled_dot_product_attention(q, k, v, enable_gqa=False, is_causal=False, attn_mask=None):
    if attention.current == attention.SDPBackend.EFFICIENT_ATTENTION and enable_gqa:
        raise RuntimeError("no grouped-query support")
    if attention.current == attention.SDPBackend.CUDNN_ATTENTION and attn_mask is not None:
        raise RuntimeError("cuDNN refuses this mask\nits second line")
    return q
