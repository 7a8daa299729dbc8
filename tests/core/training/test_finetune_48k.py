"""``--upsample-to 48000``: a 24 kHz base becomes a 48 kHz decoder (the family's recipe: one more ×2
block) trained against 48 kHz audio; its export loads with the official class, decodes 3,840 samples a
frame, and encodes exactly the base's codes."""

from __future__ import annotations

import json

import numpy as np
import soundfile as sf
import torch

from core.training import finetune


def test_a_48k_decoder_from_a_24k_base(small, tmp_path, speech, tiny_checkpoint):
    from qwen_tts import Qwen3TTSTokenizer

    data = tmp_path / "data48"
    data.mkdir()
    for i in range(4):  # 48 kHz sources: the targets are read at their own rate
        sf.write(data / f"c{i}.wav", np.repeat(speech(1.2, seed=i), 2), 48_000, subtype="PCM_16")
    out = tmp_path / "out"
    result = finetune(small(out, data=data, steps=2, upsample_to=48000, val_clips=1))
    assert result["status"] == "done"
    config = json.loads((out / "final" / "config.json").read_text())
    assert config["output_sample_rate"] == 48000 and config["decoder_config"]["upsample_rates"] == [8, 5, 4, 3, 2]
    prepared = sorted((out / "prepared").glob("*.audio.npy"))
    frames = np.load(str(prepared[0]).replace(".audio.", ".codes.")).shape[0]
    assert np.load(prepared[0]).size == frames * 3840
    tuned = Qwen3TTSTokenizer.from_pretrained(str(out / "final"), device_map="cpu", dtype=torch.float32).model
    base = Qwen3TTSTokenizer.from_pretrained(str(tiny_checkpoint), device_map="cpu", dtype=torch.float32).model
    x = torch.as_tensor(speech(2.0, seed=9))[None]
    with torch.inference_mode():
        mask = torch.ones_like(x, dtype=torch.long)
        codes = tuned.encode(x, mask).audio_codes[0]
        assert torch.equal(codes, base.encode(x, mask).audio_codes[0])
        wav = tuned.decode(codes[None]).audio_values[0]
    assert wav.shape[-1] == codes.shape[0] * 3840 and wav.abs().max() > 1e-3
