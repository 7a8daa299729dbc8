"""The fine-tuning loop, in one file: :func:`finetune` (docs/training.md).

Per step: draw the step's segments (:mod:`core.training.windows`), look their codes up in the frozen
codebooks (on the CPU), run the trained decoder parts on the device under the chosen precision's
autocast (per-block checkpointing, or windows of the convolution half), take the losses on the whole
segments; once the mel-only warm-up is over, first a discriminator step on the detached output, then
the adversarial and feature-matching terms join the decoder's losses. Gradients are accumulated
locally and averaged over the DDP processes in one synchronising pass, clipped, and AdamW steps.
Around it: evaluations of the held-out clips, resumable states, the export of ``OUT/final/``, and a
progress line per ``log_every`` steps.
"""

from __future__ import annotations

import logging
import resource
import threading
import time
from dataclasses import replace
from pathlib import Path

import torch

from core.codec import FRAME_RATE
from core.errors import TrainingError
from core.training import data, decoder_pass, distributed, evaluation, export, losses, rates, run_folder, state, windows
from core.training.discriminators import Discriminators
from core.training.precision import choose
from core.training.preflight import checkpointing_of, losses_text, plan_finetune
from core.units import MIB

logger = logging.getLogger(__name__)

ADAM_BETAS = (0.8, 0.99)  # the GAN vocoders' usual AdamW betas
EVAL_WINDOW_FRAMES = 300  # held-out clips are decoded in windows of this many frames (bounded memory)


def finetune(settings, on_progress=None, stop: threading.Event | None = None, world=None) -> dict:
    """Fine-tune ``settings.model``'s decoder on ``settings.data`` into ``settings.out``; returns what
    ``result.json`` holds. Refusals and failures raise TrainingError (the run folder records a failure)."""
    world = world or distributed.from_env()
    settings = replace(settings, device=world.device(settings.device))
    plan = plan_finetune(settings, check_out=world.is_main)
    distributed.start(world, settings.device)
    folder = run_folder.RunFolder(settings.out, on_progress) if world.is_main else None
    try:
        return _Run(settings, plan, world, folder, stop).run()
    except Exception as e:
        if folder is not None and not (folder.out / run_folder.SETTINGS).exists():
            folder.close()  # refused before the run began: the folder is left as it was found (empty)
            run_folder.clear_new(folder.out)
        elif folder is not None:
            message = str(e) if isinstance(e, TrainingError) else f"{type(e).__name__}: {e}"
            folder.emit({"kind": "done", "status": "failed", "message": message})
            run_folder.write_json(folder.out / run_folder.RESULT, {"status": "failed", "message": message})
        raise
    finally:
        if folder is not None:
            folder.close()
        distributed.stop(world)


class _Run:
    def __init__(self, settings, plan, world, folder, stop):
        from core.model.checkpoints import is_random_checkpoint
        from core.model.weights import load_tokenizer

        self.settings, self.plan, self.world, self.folder, self.stop = settings, plan, world, folder, stop
        self.out = Path(settings.out)
        self.device = settings.device
        self.precision = choose(settings.precision, self.device)
        tokenizer, self.base_path = load_tokenizer(str(settings.model), "cpu", torch.float32)
        self.base = rates.start_model(
            tokenizer.model, settings.upsample_to or tokenizer.model.output_sample_rate, settings.seed
        )
        self.rate = int(self.base.config.output_sample_rate)  # what the decoder writes and is trained against
        self.random_weights = is_random_checkpoint(self.base_path)
        self.clips, self.split = self._data()
        self.frames = {c.id: c.frames for c in self.clips}
        self.train_list = [(c, self.frames[c]) for c in self.split["train"]]
        self._cache: dict = {}

    # -- data ---------------------------------------------------------------------------------
    def _data(self):
        s = self.settings
        if s.resume:
            recorded = run_folder.read_json(self.out / run_folder.SETTINGS)
            changed = s.differences(recorded["settings"])
            if changed:
                raise TrainingError(
                    f"--resume must continue the same run; these settings differ: {', '.join(changed)}."
                )
        elif self.world.is_main:
            if s.device.startswith("cuda"):
                self.base.encoder.to(s.device)
            try:
                clips = data.prepare(s, self.base, self.rate)
            finally:
                self.base.encoder.to("cpu")
                if s.device.startswith("cuda"):
                    torch.cuda.empty_cache()
            split = data.split(clips, s)
            record = {"settings": s.to_dict(), "base": str(self.base_path), "plan": self.plan, "versions": _versions()}
            run_folder.write_json(self.out / run_folder.SETTINGS, record)
            run_folder.write_json(self.out / run_folder.SPLIT, split)
        distributed.barrier(self.world)
        return data.read_index(self.out), run_folder.read_json(self.out / run_folder.SPLIT)

    def read(self, clip: str):
        if clip not in self._cache:
            self._cache[clip] = data.load_pair(self.out, clip)
        return self._cache[clip]

    # -- model --------------------------------------------------------------------------------
    def _build(self):
        s = self.settings
        decoder = self.base.decoder
        self.quantizer = decoder.quantizer.to("cpu" if s.frozen_off_device else self.device)
        self.trainable = decoder_pass.TrainableDecoder(decoder, checkpointing_of(s, self.device) == "blocks")
        decoder_pass.freeze(decoder, self.trainable, s.freeze_transformer, s.freeze_blocks)
        self.trainable.to(self.device).train()
        self.context = decoder_pass.conv_context_frames(self.trainable)
        self.ddp = distributed.wrap(self.trainable, self.world, self.device)
        trained = [p for p in self.trainable.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(trained, s.learning_rate, betas=ADAM_BETAS, weight_decay=s.weight_decay)
        self.scaler = self.precision.scaler(self.device)
        self.mel = losses.MultiResolutionMel(self.rate).to(self.device)
        self.disc = self.ddp_disc = self.optimizer_d = self.scaler_d = None
        if s.adversarial:
            torch.manual_seed(s.seed)
            self.disc = Discriminators(s.disc_channels).to(self.device).train()
            self.ddp_disc = distributed.wrap(self.disc, self.world, self.device)
            self.optimizer_d = torch.optim.AdamW(self.disc.parameters(), s.disc_learning_rate, betas=ADAM_BETAS)
            self.scaler_d = self.precision.scaler(self.device)

    # -- one step -----------------------------------------------------------------------------
    def _losses(self, target, gan_on: bool, disc_step: bool):
        s = self.settings

        def compute(wav):
            parts: dict[str, torch.Tensor] = {}
            if disc_step:
                parts["disc"] = self._disc_step(wav.detach(), target)
            parts["mel"] = self.mel(wav, target).mean()
            parts["rms"] = losses.rms_distance(wav, target).mean()
            total = s.mel_weight * parts["mel"] + s.rms_weight * parts["rms"]
            if gan_on:
                for p in self.disc.parameters():
                    p.requires_grad_(False)
                with self.precision.autocast(self.device):
                    real, fake = _halves(self.disc(torch.cat([target, wav])))
                parts["adv"], parts["feature"] = losses.generator_losses(real, fake)
                total = total + s.adv_weight * parts["adv"] + s.feature_weight * parts["feature"]
                for p in self.disc.parameters():
                    p.requires_grad_(True)
            return total, parts

        return compute

    def _disc_step(self, fake, target) -> torch.Tensor:
        with self.precision.autocast(self.device):
            real_out, fake_out = _halves(self.ddp_disc(torch.cat([target, fake])))
            loss = losses.discriminator_loss(real_out, fake_out)
        self.scaler_d.scale(loss).backward()
        self.scaler_d.unscale_(self.optimizer_d)
        torch.nn.utils.clip_grad_norm_(self.disc.parameters(), self.settings.grad_clip)
        self.scaler_d.step(self.optimizer_d)
        self.scaler_d.update()
        self.optimizer_d.zero_grad(set_to_none=True)
        return loss.detach()

    def step(self, step: int) -> dict:
        """One optimizer step over this process's ``batch_size`` segments, in ``accumulate`` micro-batches
        whose gradients add up (each loss weighted by its share of the batch)."""
        s = self.settings
        segments = windows.draw(
            self.train_list, s.batch_size, s.segment_frames, s.seed, step, self.world.rank, self.world.size
        )
        codes, audio = windows.load_batch(segments, s.segment_frames, self.read, self.trainable.samples_per_frame)
        embedded = decoder_pass.embed(self.quantizer, codes, self.device)
        target = audio.to(self.device)
        gan_on = s.adversarial and step > s.warmup_steps
        micro = s.batch_size // s.accumulate
        autocast = self.precision.autocast(self.device)
        sums: dict[str, float] = {}
        if gan_on and s.accumulate > 1:  # the discriminators step once, on the whole batch's output
            with torch.no_grad():
                fakes = [self._synthesize(embedded[i : i + micro]) for i in range(0, s.batch_size, micro)]
            sums["disc"] = float(self._disc_step(torch.cat(fakes), target))
        trained = [p for p in self.trainable.parameters() if p.requires_grad]
        for i in range(0, s.batch_size, micro):
            share = micro / s.batch_size
            earlier = [p.grad for p in trained]  # each micro-batch's gradient is summed on its own, then added
            for p in trained:
                p.grad = None
            part = embedded[i : i + micro].clone()  # its own storage: a micro-batch computes as a whole batch would
            compute = self._losses(target[i : i + micro].clone(), gan_on, disc_step=gan_on and s.accumulate == 1)
            backward = lambda total: self.scaler.scale(total * share).backward()  # noqa: E731, B023
            with distributed.local_passes(self.ddp):
                if s.window_frames:
                    total, parts, _ = decoder_pass.windowed_backward(
                        self.trainable,
                        part,
                        compute,
                        backward,
                        s.window_frames,
                        self.context,
                        autocast,
                    )
                else:
                    with autocast:
                        wav = self.trainable("whole", part)
                    total, parts = compute(wav.float())
                    backward(total)
            for p, grad in zip(trained, earlier, strict=True):
                if grad is not None:
                    p.grad = grad if p.grad is None else grad + p.grad
            for name, value in [*parts.items(), ("total", total)]:
                sums[name] = sums.get(name, 0.0) + float(value.detach()) * share
        distributed.synchronise(self.ddp)
        self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.trainable.parameters(), s.grad_clip)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        return sums

    def _synthesize(self, embedded):
        """The decoder's output without gradients (windowed when training in windows)."""
        with self.precision.autocast(self.device):
            if self.settings.window_frames:
                hidden = self.trainable.low(embedded)
                return decoder_pass.high_in_windows(self.trainable, hidden, self.settings.window_frames, self.context)
            return self.trainable("whole", embedded).float()

    # -- around the steps ---------------------------------------------------------------------
    def evaluate(self, step: int) -> dict:
        metrics, decoded = evaluation.evaluate(
            self.trainable,
            self.quantizer,
            self.split["val"],
            self.read,
            self.device,
            self.mel,
            EVAL_WINDOW_FRAMES,
            self.context,
        )
        self.folder.emit({"kind": "eval", "step": step, "val": metrics})
        samples = self.out / run_folder.SAMPLES
        if step == 0:
            originals = {clip: self.read(clip)[1] for clip in decoded}
            evaluation.write_samples(samples, "reference", originals, rate=self.rate)
        for clip, path in evaluation.write_samples(samples, f"step-{step:06d}", decoded, rate=self.rate):
            self.folder.emit({"kind": "sample", "step": step, "clip": clip, "path": str(path.relative_to(self.out))})
        return metrics

    def state(self, step: int, history: dict) -> dict:
        return {
            "step": step,
            "decoder": self.trainable.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "disc": None if self.disc is None else self.disc.state_dict(),
            "optimizer_d": None if self.disc is None else self.optimizer_d.state_dict(),
            "scaler_d": None if self.disc is None else self.scaler_d.state_dict(),
            "rng": state.rng_state(),
            "history": history,
        }

    def restore(self) -> tuple[int, dict]:
        saved = state.load(self.out)
        self.trainable.load_state_dict(saved["decoder"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scaler.load_state_dict(saved["scaler"])
        if self.disc is not None:
            self.disc.load_state_dict(saved["disc"])
            self.optimizer_d.load_state_dict(saved["optimizer_d"])
            self.scaler_d.load_state_dict(saved["scaler_d"])
        state.set_rng_state(saved["rng"])
        logger.info("resumed at step %d", saved["step"])
        return saved["step"], saved["history"]

    def run(self) -> dict:
        s, main = self.settings, self.world.is_main
        self._build()
        torch.manual_seed(s.seed)
        if s.resume:
            start, history = self.restore()
        else:
            start, history = 0, {"val_base": self.evaluate(0) if main else None}
        segment_s = s.segment_frames / FRAME_RATE
        status, step, began, last = "done", start, time.perf_counter(), time.perf_counter()
        if self.device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats(self.device)
        for step in range(start + 1, s.steps + 1):
            values = self.step(step)
            if main and (step % s.log_every == 0 or step == s.steps):
                now = time.perf_counter()
                done = step - start
                self.folder.emit(
                    {
                        "kind": "step", "step": step, "steps": s.steps, "loss": values, "lr": self.optimizer.param_groups[0]["lr"],
                        "audio_s_per_s": s.batch_size * self.world.size * segment_s * min(s.log_every, done) / max(now - last, 1e-9),
                        "peak_mib": self._peak_mib(), "elapsed_s": now - began,
                        "eta_s": (now - began) / done * (s.steps - step),
                    }
                )  # fmt: skip
                last = now
            if main and s.eval_every and step % s.eval_every == 0 and step != s.steps:
                history[f"val_{step}"] = self.evaluate(step)
            if main and s.save_every and step % s.save_every == 0 and step != s.steps:
                state.save(self.out, self.state(step, history))
            asked = (self.stop is not None and self.stop.is_set()) or (main and self.folder.stop_requested())
            if distributed.any_true(self.world, asked) and step != s.steps:
                status = "stopped"
                break
        return self._finish(step, status, history) if main else {"status": status, "steps": step}

    def _finish(self, step: int, status: str, history: dict) -> dict:
        s = self.settings
        val_final = self.evaluate(step)
        state.save(self.out, self.state(step, history))
        info = {
            "base": str(s.model), "random_weights": self.random_weights, "data": str(s.data),
            "train_clips": len(self.split["train"]), "val_clips": len(self.split["val"]),
            "train_hours": sum(self.frames[c] for c in self.split["train"]) / FRAME_RATE / 3600,
            "steps": step, "batch_size": s.batch_size * self.world.size, "segment_s": s.segment_frames / FRAME_RATE,
            "processes_text": f" ({self.world.size} processes)" if self.world.distributed else "",
            "precision": self.precision.name, "precision_reason": self.precision.reason, "losses": losses_text(s),
            "trained": _trained_text(s), "val_base": history.get("val_base"), "val_final": val_final,
        }  # fmt: skip
        trained = {k: v.detach().to("cpu") for k, v in self.trainable.state_dict().items()}
        export.export(self.base, self.base_path, trained, self.out / run_folder.FINAL, export.model_card(info))
        message = (
            f"{status} after {step} of {s.steps} steps; the fine-tuned checkpoint is in {self.out / run_folder.FINAL}"
        )
        result = {
            "status": status, "steps": step, "message": message, "model": run_folder.FINAL, "base": str(s.model),
            "random_weights": self.random_weights, "val_base": history.get("val_base"), "val_final": val_final,
        }  # fmt: skip
        self.folder.emit({"kind": "done", "status": status, "step": step, "message": message})
        run_folder.write_json(self.out / run_folder.RESULT, result)
        return result

    def _peak_mib(self) -> float:
        if self.device.startswith("cuda"):
            return torch.cuda.max_memory_allocated(self.device) / MIB
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MIB  # the process's peak RSS


def _halves(outputs):
    """Discriminator outputs of cat([real, fake]) split into (real outputs, fake outputs)."""
    real, fake = [], []
    for scores, features in outputs:
        n = scores.shape[0] // 2
        real.append((scores[:n], [f[:n] for f in features]))
        fake.append((scores[n:], [f[n:] for f in features]))
    return real, fake


def _trained_text(s) -> str:
    parts = ["the decoder (codebooks frozen)"]
    if s.freeze_transformer:
        parts.append("transformer frozen")
    if s.freeze_blocks:
        parts.append(f"first {s.freeze_blocks} convolution blocks frozen")
    return ", ".join(parts)


def _versions() -> dict:
    from core.tokens import package_versions

    return {**package_versions(), "torch": torch.__version__}


def finetune_on(processes: int, settings) -> None:
    """Run :func:`finetune` on ``processes`` new local processes with DDP (gloo on the CPU, NCCL on
    GPUs), as ``torchrun --nproc-per-node`` would; the run folder holds the result."""
    if processes == 1:
        finetune(settings)
        return
    distributed.spawn(finetune, processes, (settings,))
