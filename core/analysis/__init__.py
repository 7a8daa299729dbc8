"""Measuring a reconstruction against its original: ``metrics`` (spectrograms, PESQ, STOI, SI-SDR,
log-mel distance, figures), ``timeline`` (quality over time, worst moments), ``token_usage``
(how much of each codebook a clip uses)."""
