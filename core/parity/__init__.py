"""Checking another implementation against this workbench's reference (docs/parity.md).

- ``inputs``: the codes another implementation decoded (token file, ``.npy``, JSON) and the WAV it
  made, checked before they are read in full;
- ``alignment``: the offset between two decodes (cross-correlation), and its drift;
- ``seams``: where common decoders put their chunk seams, error onsets and clicks;
- ``decode_parity``: their WAV against the reference decode of the same codes;
- ``verdict``: identical / rounding only / differs, with the likely cause and its evidence, in words;
- ``encode_parity``: their codes against the reference encode of the same audio;
- ``precision``: one clip through encode and decode in fp32, bf16 and fp16 on this device;
- ``report``: the error-curve figure and a self-contained HTML page.

The reference always comes from ``core.model.engine.Engine`` (the exact encode and seam-exact decode).
"""
