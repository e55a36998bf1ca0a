"""Run captcha-whisperer (CRNN captcha OCR) on deterministic synthetic captchas drawn with numpy."""
import hashlib
import io

import captcha_whisperer
import numpy as np
from captcha_whisperer import CaptchaRecognizer
from PIL import Image

# A tiny 5x7 bitmap font for the glyphs we use.
FONT = {
    "2": ["01110", "10001", "00001", "00110", "01000", "10000", "11111"],
    "3": ["11110", "00001", "00001", "01110", "00001", "00001", "11110"],
    "5": ["11111", "10000", "11110", "00001", "00001", "10001", "01110"],
    "7": ["11111", "00001", "00010", "00100", "01000", "01000", "01000"],
    "8": ["01110", "10001", "10001", "01110", "10001", "10001", "01110"],
    "A": ["01110", "10001", "10001", "11111", "10001", "10001", "10001"],
    "C": ["01110", "10001", "10000", "10000", "10000", "10001", "01110"],
    "H": ["10001", "10001", "10001", "11111", "10001", "10001", "10001"],
    "K": ["10001", "10010", "10100", "11000", "10100", "10010", "10001"],
    "P": ["11110", "10001", "10001", "11110", "10000", "10000", "10000"],
    "W": ["10001", "10001", "10001", "10101", "10101", "10101", "01010"],
    "X": ["10001", "10001", "01010", "00100", "01010", "10001", "10001"],
}


def draw(text, seed):
    """Return a 60x160x3 uint8 RGB captcha-like image (dark glyphs, light noisy background)."""
    rng = np.random.RandomState(seed)  # legacy MT19937: identical on every platform
    img = np.full((60, 160, 3), 235, dtype=np.int32)
    img += rng.randint(-12, 13, size=img.shape)
    scale = 5
    x0 = 18
    for i, ch in enumerate(text):
        glyph = np.array([[c == "1" for c in row] for row in FONT[ch]])
        big = np.kron(glyph, np.ones((scale, scale), dtype=bool))  # 35 x 25
        y = 12 + (i % 2) * 4
        x = x0 + i * 33
        color = np.array([(40 + 50 * i) % 200, 60, (150 + 30 * i) % 220])
        region = img[y:y + big.shape[0], x:x + big.shape[1]]
        region[big] = color
    # two thin interference lines
    for k in range(2):
        yy = (np.arange(160) * (0.12 + 0.05 * k) + 20 + 15 * k).astype(int) % 60
        img[yy, np.arange(160)] = [90, 90, 90]
    return np.clip(img, 0, 255).astype(np.uint8)


texts = ["2CWK", "7A3X", "H8P5"]
arrays = [draw(t, seed) for seed, t in enumerate(texts)]
rec = CaptchaRecognizer()
print("captcha_whisperer", getattr(captcha_whisperer, "__version__", "?"))
for t, a, r in zip(texts, arrays, rec.recognize_arrays(arrays), strict=True):
    print(f"drawn={t} sha={hashlib.sha256(a.tobytes()).hexdigest()[:12]} -> {r}")
# Same first image through the bytes path (PNG encode/decode with PIL, lossless).
buf = io.BytesIO()
Image.fromarray(arrays[0]).save(buf, format="PNG")
print("one-liner recognize(bytes):", captcha_whisperer.recognize(buf.getvalue(), detailed=True))
