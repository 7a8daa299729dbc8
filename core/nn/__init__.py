"""The network's passes, on tensors: ``encoding`` and ``decoding`` (exact chunked and streamed
paths), ``batching`` (padded batch encodes), ``kv_cache`` (the encoder's keys and values),
``fast_decode`` (decode precision, the bf16 guard, compiled stacks), ``kernels`` (SnakeBeta),
``conv_layout`` (channels-last convolutions), ``ladder`` (decode with the first k codebooks),
``dtypes``. Nothing here owns the model: ``core.model.engine`` does."""
