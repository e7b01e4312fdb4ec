"""Zero-copy views of engine KV buffers for the native binding.

The binding takes objects with the buffer protocol. numpy arrays are passed as they are; a torch
tensor is passed as Tensor.numpy() (same memory), bf16 through an int16 view since numpy has no
bfloat16. paged_layout() turns a tensor's strides into the (block, token, head) byte strides of
kvcs_paged_layout."""


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def as_buffer(x):
    """A buffer-protocol object sharing x's memory (x: numpy array or CPU torch tensor)."""
    if _is_torch(x):
        import torch
        if x.device.type != "cpu":
            raise ValueError("kvcs: only CPU tensors can be passed (got %s)" % x.device)
        if x.dtype == torch.bfloat16:
            x = x.view(torch.int16)
        return x.detach().numpy()
    return x


def paged_layout(k, block_tokens, kv_heads, head_dim):
    """Byte strides (block, token, head) of one layer's K (or V) buffer shaped
    [num_blocks][block_tokens][kv_heads][head_dim] (any strides, head_dim contiguous)."""
    shape = tuple(k.shape)
    if len(shape) != 4 or shape[1:] != (block_tokens, kv_heads, head_dim):
        raise ValueError("kvcs: KV buffer shape %s is not [num_blocks, %d, %d, %d]"
                         % (shape, block_tokens, kv_heads, head_dim))
    if _is_torch(k):
        es = k.element_size()
        strides = tuple(s * es for s in k.stride())
    else:
        es = k.itemsize
        strides = tuple(k.strides)
    if strides[3] != es:
        raise ValueError("kvcs: head_dim must be contiguous")
    return strides[0], strides[1], strides[2]


def layer_views(kv_layer):
    """(K, V) of a vLLM-layout layer tensor [2][num_blocks][block_tokens][kv_heads][head_dim]."""
    if kv_layer.shape[0] != 2:
        raise ValueError("kvcs: a layer's KV tensor must be [2, num_blocks, block, heads, dim]")
    return kv_layer[0], kv_layer[1]
