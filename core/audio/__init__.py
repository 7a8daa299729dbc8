"""Audio in and out of the codec: ``files`` (read any common audio file or array into mono 24 kHz
float32 with its facts; exact WAV writing), ``readers`` (soundfile and PyAV, block by block),
``blocks`` (each block checked, downmixed and resampled; the limits), ``loudness`` (ITU-R BS.1770)."""
