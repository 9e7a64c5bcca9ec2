"""The 200 MB single-member gzip bench text (bench/results/codag-h200.md, "One large gzip
member on the GPU"): word text with numbers, numpy seed 1, Zipf-like word frequencies.

python3 codag-h200-gzip-text.py OUT [BYTES]; then `gzip -6 -k OUT`.
"""
import sys

import numpy as np

out = sys.argv[1]
size = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000_000
rng = np.random.default_rng(1)
letters = np.frombuffer(b"etaoinshrdlucmfwypvbgkqjxz", dtype=np.uint8)
vocab = []
for k in range(3_000):
    n = int(rng.integers(2, 11))
    vocab.append(bytes(letters[np.minimum(rng.geometric(0.18, n) - 1, 25)]))
vocab += [str(int(x)).encode() for x in rng.integers(0, 100_000, 1_000)]
vocab[5:5] = [b"\n", b".", b","]
w = 1.0 / np.arange(1, len(vocab) + 1) ** 1.2
w /= w.sum()
parts, total = [], 0
while total < size:
    idx = rng.choice(len(vocab), 1_000_000, p=w)
    chunk = b" ".join([vocab[i] for i in idx.tolist()]) + b" "
    parts.append(chunk)
    total += len(chunk)
with open(out, "wb") as f:
    f.write(b"".join(parts)[:size])
